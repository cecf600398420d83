import { describe, expect, it } from 'vitest';
import { DATASET_KIND_LABELS, type DatasetKind } from './dataset.js';
import { LORA_PARAM_HINTS, SD_BASE_MODELS, loraParamsSchema, loraPreset, loraSteps } from './training.js';

describe('LoRA training parameters', () => {
  it('gives every dataset type and base model a preset the schema takes, and every parameter a hint', () => {
    for (const kind of Object.keys(DATASET_KIND_LABELS) as DatasetKind[]) {
      for (const model of SD_BASE_MODELS) {
        const preset = loraPreset(kind, model.id);
        expect(loraParamsSchema.safeParse(preset).success, `${kind}/${model.id}`).toBe(true);
        expect(preset.resolution).toBe(model.resolution);
      }
    }
    expect(Object.keys(LORA_PARAM_HINTS).sort()).toEqual(Object.keys(loraPreset('person', 'sd15')).sort());
  });

  it('refuses values out of range with the field and a Chinese message', () => {
    const preset = loraPreset('person', 'sd15');
    const issue = (patch: object) => loraParamsSchema.safeParse({ ...preset, ...patch }).error?.issues[0];
    expect(issue({ resolution: 500 })).toMatchObject({ path: ['resolution'], message: '分辨率应为 64 的倍数' });
    expect(issue({ epochs: 0 })).toMatchObject({ path: ['epochs'], message: '训练轮数最小为 1' });
    expect(issue({ unetLr: 0.5 })).toMatchObject({ path: ['unetLr'], message: 'UNet 学习率最大为 0.01' });
    expect(issue({ optimizer: 'SGD' })).toMatchObject({ path: ['optimizer'], message: '请选择优化器' });
    expect(issue({ networkDim: 8, networkAlpha: 16 })).toMatchObject({ path: ['networkAlpha'], message: '网络 Alpha 不能大于网络维度' });
    expect(issue({ batchSize: 1.5 })).toMatchObject({ path: ['batchSize'], message: '批大小应为整数' });
  });

  it('counts steps as sd-scripts does: ⌈images × repeats ÷ batch⌉ per epoch', () => {
    expect(loraSteps(25, { repeats: 10, epochs: 10, batchSize: 2 })).toEqual({ perEpoch: 125, total: 1250 });
    expect(loraSteps(7, { repeats: 3, epochs: 2, batchSize: 4 })).toEqual({ perEpoch: 6, total: 12 });
  });
});
