/** The embedded trainer's LoRA file: a safetensors file in kohya's layout, the same for the same input, carrying its dataset's colour. */
import { loraPreset } from '@console/contract';
import { describe, expect, it } from 'vitest';
import { loraColorOf, loraFile } from './lora-file.js';
import { parseSafetensors, valuesOf } from './safetensors.js';

const input = {
  color: [0.6, 0.3, 0.8] as [number, number, number],
  images: 20,
  params: { ...loraPreset('person', 'sd15'), networkDim: 8, networkAlpha: 4 },
  epoch: 3,
  outputName: 'purplegirl',
  baseModel: 'sd15',
  trainingStartedAt: new Date('2026-11-26T08:00:00Z'),
};

describe('embedded LoRA file', () => {
  it("is kohya's layout: down [dim, in], up [out, dim], alpha, with ss_* metadata", () => {
    const parsed = parseSafetensors(loraFile(input));
    const q = 'lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q';
    expect(parsed.tensors[`${q}.lora_down.weight`]).toMatchObject({ dtype: 'F16', shape: [8, 320] });
    expect(parsed.tensors[`${q}.lora_up.weight`]).toMatchObject({ dtype: 'F16', shape: [320, 8] });
    expect([...valuesOf(parsed.tensors[`${q}.alpha`]!)]).toEqual([4]);
    expect(parsed.metadata).toMatchObject({
      ss_network_dim: '8',
      ss_network_alpha: '4',
      ss_epoch: '3',
      ss_num_train_images: '200',
      ss_output_name: 'purplegirl',
    });
  });

  it('is the same file for the same input, grows with the epochs, and carries the colour back to the painter', () => {
    expect(loraFile(input).equals(loraFile(input))).toBe(true);
    const size = (epoch: number) => {
      const up = parseSafetensors(loraFile({ ...input, epoch })).tensors['lora_te_text_model_encoder_layers_0_self_attn_q_proj.lora_up.weight']!;
      return valuesOf(up).reduce((s, v) => s + Math.abs(v), 0);
    };
    expect(size(10)).toBeGreaterThan(size(1) * 3);
    const [r, g, b] = loraColorOf(loraFile(input));
    expect([r, g, b].map((v) => Math.round(v * 100) / 100)).toEqual([0.6, 0.3, 0.8]);
  });
});
