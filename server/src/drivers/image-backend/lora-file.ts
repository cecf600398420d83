/**
 * The LoRA file the embedded trainer writes each epoch: a real safetensors file laid out as kohya
 * sd-scripts writes one (`lora_unet_…`/`lora_te_…` modules, each a `lora_down.weight` of
 * [dim, in], a `lora_up.weight` of [out, dim] and an `alpha`; `ss_*` metadata), in half precision.
 * Its values are computed from the dataset — its images' mean colour — and the epoch, so the same
 * dataset and parameters give the same file, and the embedded painter can read the colour back to
 * tint what it paints with this LoRA (`loraColorOf`).
 */
import type { LoraParams } from '@console/contract';
import { mulberry32 } from './render.js';
import { encodeSafetensors, parseSafetensors, valuesOf, type Tensor } from './safetensors.js';

/** A few of SD 1.5's attention projections (name, in and out features): the file's shape, not the whole network. */
const MODULES: [string, number, number][] = [
  ['lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q', 320, 320],
  ['lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_k', 320, 320],
  ['lora_unet_mid_block_attentions_0_transformer_blocks_0_attn2_to_v', 768, 1280],
  ['lora_te_text_model_encoder_layers_0_self_attn_q_proj', 768, 768],
];

export interface LoraFileInput {
  /** The dataset's mean colour, RGB in 0–1. */
  color: [number, number, number];
  images: number;
  params: LoraParams;
  epoch: number;
  outputName: string;
  baseModel: string;
  trainingStartedAt: Date;
}

export function loraFile(input: LoraFileInput): Buffer {
  const { params: p, epoch } = input;
  const random = mulberry32((p.seed ^ (epoch * 0x9e3779b1)) >>> 0);
  // What an epoch has learnt: the weights grow toward their final size as training goes on.
  const progress = epoch / p.epochs;
  const tensors: Record<string, Tensor> = {};
  for (const [name, inFeatures, outFeatures] of MODULES) {
    const down = new Float32Array(p.networkDim * inFeatures).map(() => (random() - 0.5) * 0.02);
    const up = new Float32Array(outFeatures * p.networkDim).map(() => (random() - 0.5) * 0.02 * progress);
    tensors[`${name}.lora_down.weight`] = { dtype: 'F16', shape: [p.networkDim, inFeatures], data: down };
    tensors[`${name}.lora_up.weight`] = { dtype: 'F16', shape: [outFeatures, p.networkDim], data: up };
    tensors[`${name}.alpha`] = { dtype: 'F16', shape: [], data: new Float32Array([p.networkAlpha]) };
  }
  // The dataset's colour, where the painter finds it (a small tensor of its own, as extra embeddings are).
  tensors['console_dataset_color'] = { dtype: 'F32', shape: [3], data: new Float32Array(input.color) };
  return encodeSafetensors(tensors, {
    ss_output_name: input.outputName,
    ss_sd_model_name: input.baseModel,
    ss_network_module: 'networks.lora',
    ss_network_dim: String(p.networkDim),
    ss_network_alpha: String(p.networkAlpha),
    ss_epoch: String(epoch),
    ss_num_epochs: String(p.epochs),
    ss_num_train_images: String(input.images * p.repeats),
    ss_resolution: `(${p.resolution}, ${p.resolution})`,
    ss_learning_rate: String(p.unetLr),
    ss_unet_lr: String(p.unetLr),
    ss_text_encoder_lr: String(p.textEncoderLr),
    ss_optimizer: p.optimizer,
    ss_lr_scheduler: p.scheduler,
    ss_seed: String(p.seed),
    ss_clip_skip: String(p.clipSkip),
    ss_noise_offset: String(p.noiseOffset),
    ss_min_snr_gamma: String(p.minSnrGamma),
    ss_shuffle_caption: String(p.shuffleCaption),
    ss_keep_tokens: String(p.keepTokens),
    ss_training_started_at: String(Math.floor(input.trainingStartedAt.getTime() / 1000)),
  });
}

/** The colour a LoRA file carries (the embedded trainer's), or a neutral grey for any other LoRA. */
export function loraColorOf(file: Buffer): [number, number, number] {
  const tensor = parseSafetensors(file).tensors['console_dataset_color'];
  if (!tensor) return [0.5, 0.5, 0.5];
  const [r = 0.5, g = 0.5, b = 0.5] = valuesOf(tensor);
  return [r, g, b];
}
