/**
 * LoRA training (/sd/train): the parameters users know from kohya sd-scripts, each with its range,
 * its default and a one-line Chinese hint; presets by dataset type; the base models offered; and the
 * step count every estimate (time, price) starts from. The job API itself comes with the trainer.
 */
import { z } from 'zod';
import type { DatasetKind } from './dataset.js';
import { pagingQuerySchema } from './common.js';

/** The base models a LoRA is trained on, with their native resolution and default CLIP skip. */
export const SD_BASE_MODELS = [
  { id: 'sd15', name: 'Stable Diffusion 1.5', family: 'sd15', resolution: 512, clipSkip: 2 },
  { id: 'sdxl', name: 'Stable Diffusion XL 1.0', family: 'sdxl', resolution: 1024, clipSkip: 1 },
] as const;
export type SdBaseModelId = (typeof SD_BASE_MODELS)[number]['id'];
export const sdBaseModelIdSchema = z.enum(SD_BASE_MODELS.map((m) => m.id) as [SdBaseModelId, ...SdBaseModelId[]], { error: '请选择底模' });

export const LORA_OPTIMIZERS = ['AdamW8bit', 'AdamW', 'Lion', 'Prodigy', 'Adafactor'] as const;
export const LORA_SCHEDULERS = ['cosine', 'cosine_with_restarts', 'constant', 'constant_with_warmup', 'linear', 'polynomial'] as const;

const int = (label: string, min: number, max: number) =>
  z
    .number({ error: `${label}应为数字` })
    .int({ error: `${label}应为整数` })
    .min(min, { error: `${label}最小为 ${min}` })
    .max(max, { error: `${label}最大为 ${max}` });
const rate = (label: string, min: number, max: number) =>
  z
    .number({ error: `${label}应为数字` })
    .min(min, { error: `${label}最小为 ${min}` })
    .max(max, { error: `${label}最大为 ${max}` });

/** sd-scripts' parameters of a LoRA job (train_network.py), with the ranges the console allows. */
export const loraParamsSchema = z
  .object({
    resolution: int('分辨率', 256, 2048).refine((v) => v % 64 === 0, { error: '分辨率应为 64 的倍数' }),
    repeats: int('重复次数', 1, 100),
    epochs: int('训练轮数', 1, 100),
    batchSize: int('批大小', 1, 8),
    unetLr: rate('UNet 学习率', 0.000001, 0.01),
    textEncoderLr: rate('文本编码器学习率', 0, 0.001),
    networkDim: int('网络维度', 1, 256),
    networkAlpha: int('网络 Alpha', 1, 256),
    optimizer: z.enum(LORA_OPTIMIZERS, { error: '请选择优化器' }),
    scheduler: z.enum(LORA_SCHEDULERS, { error: '请选择学习率调度器' }),
    seed: int('随机种子', 0, 2147483647),
    shuffleCaption: z.boolean({ error: '打乱标注应为是或否' }),
    keepTokens: int('保留词数', 0, 10),
    clipSkip: int('CLIP 跳层', 1, 12),
    noiseOffset: rate('噪声偏移', 0, 1),
    minSnrGamma: rate('Min-SNR Gamma', 0, 20),
  })
  .refine((p) => p.networkAlpha <= p.networkDim, { error: '网络 Alpha 不能大于网络维度', path: ['networkAlpha'] });
export type LoraParams = z.infer<typeof loraParamsSchema>;

/** One line each, shown under the field. */
export const LORA_PARAM_HINTS: Record<keyof LoraParams, string> = {
  resolution: '训练图片缩放到的边长；SD1.5 常用 512，SDXL 常用 1024，越大越慢',
  repeats: '每轮中每张图片学习的次数；图片少时调大',
  epochs: '把整个数据集学完一遍为一轮；每轮结束保存一个模型并出样图',
  batchSize: '每步同时学习的图片数；调大更快但更占显存',
  unetLr: '画面学习的速度；过大容易过拟合，常用 1e-4',
  textEncoderLr: '提示词理解的学习速度；常为 UNet 学习率的一半，0 为不训练',
  networkDim: 'LoRA 的容量；人物 16-32，画风 32-128，越大文件越大',
  networkAlpha: '缩放学习强度，不大于网络维度；常取维度的一半',
  optimizer: 'AdamW8bit 省显存且稳定；Prodigy 可自适应学习率',
  scheduler: '学习率随训练进度的变化方式；cosine 最常用',
  seed: '相同种子和参数可复现训练结果',
  shuffleCaption: '每次打乱标注中逗号分隔的标签顺序，减少对顺序的依赖',
  keepTokens: '打乱时保持开头的几个标签不动，通常为 1（触发词）',
  clipSkip: '跳过文本编码器最后几层；二次元模型常用 2',
  noiseOffset: '改善很亮或很暗画面的生成，常用 0-0.1',
  minSnrGamma: '平衡各噪声强度下的学习，常用 5，0 为关闭',
};

const COMMON = {
  batchSize: 2,
  unetLr: 0.0001,
  textEncoderLr: 0.00005,
  optimizer: 'AdamW8bit',
  scheduler: 'cosine',
  seed: 42,
  keepTokens: 1,
  noiseOffset: 0,
  minSnrGamma: 5,
} as const;

/** Starting points by dataset type, for a base model (its resolution and CLIP skip). */
export function loraPreset(kind: DatasetKind, base: SdBaseModelId): LoraParams {
  const model = SD_BASE_MODELS.find((m) => m.id === base)!;
  const byKind: Record<DatasetKind, Pick<LoraParams, 'repeats' | 'epochs' | 'networkDim' | 'networkAlpha' | 'shuffleCaption'>> = {
    person: { repeats: 10, epochs: 10, networkDim: 32, networkAlpha: 16, shuffleCaption: true },
    style: { repeats: 5, epochs: 15, networkDim: 64, networkAlpha: 32, shuffleCaption: true },
    concept: { repeats: 8, epochs: 12, networkDim: 32, networkAlpha: 16, shuffleCaption: false },
  };
  return {
    ...COMMON,
    ...byKind[kind],
    resolution: model.resolution,
    clipSkip: model.clipSkip,
    batchSize: model.family === 'sdxl' ? 1 : COMMON.batchSize,
  };
}

/** The steps of a job as sd-scripts counts them: per epoch ⌈images × repeats ÷ batch⌉. */
export function loraSteps(images: number, p: Pick<LoraParams, 'repeats' | 'epochs' | 'batchSize'>): { perEpoch: number; total: number } {
  const perEpoch = Math.ceil((images * p.repeats) / p.batchSize);
  return { perEpoch, total: perEpoch * p.epochs };
}

/**
 * Seconds per step on the reference card (an RTX 4090) at batch 1 and the model's native resolution;
 * a step's time grows with the pixels and nearly with the batch. What kohya sd-scripts users report.
 */
const SECONDS_PER_STEP: Record<(typeof SD_BASE_MODELS)[number]['family'], number> = { sd15: 0.45, sdxl: 1.3 };
/** Fixed time of a job: loading the model, caching latents, saving each epoch. */
const SETUP_SECONDS = 60;
const SAVE_SECONDS_PER_EPOCH = 5;

/** The GPU a job is priced on and (by the production backend) run on. */
export const LORA_TRAINING_GPU = 'rtx4090';

/** How a job spends its time on the reference card: what the estimate adds up and the embedded trainer keeps to. */
export interface LoraTimeline {
  setupSeconds: number;
  secondsPerStep: number;
  saveSecondsPerEpoch: number;
}

export function loraTimeline(p: Pick<LoraParams, 'resolution' | 'batchSize'>, base: SdBaseModelId): LoraTimeline {
  const model = SD_BASE_MODELS.find((m) => m.id === base)!;
  const pixels = (p.resolution / model.resolution) ** 2;
  return {
    setupSeconds: SETUP_SECONDS,
    secondsPerStep: SECONDS_PER_STEP[model.family] * pixels * p.batchSize ** 0.9,
    saveSecondsPerEpoch: SAVE_SECONDS_PER_EPOCH,
  };
}

/** The smallest charge of a job, in 0.0001 yuan: ¥0.50. */
export const LORA_MIN_CHARGE_UNITS = 5000n;

export interface LoraEstimate {
  steps: { perEpoch: number; total: number };
  /** Estimated GPU time, in whole seconds. */
  seconds: number;
  /** The estimated charge, in 0.0001 yuan: the GPU's hourly rate for that time, at least the minimum; what is held at start. */
  units: bigint;
}

/**
 * What a job will take and cost before it starts: its steps, the GPU time they need on the
 * reference card and that time at the GPU's hourly rate (0.0001 yuan per hour), rounded up to
 * whole units and never below the minimum. Settlement charges per finished epoch its share of it.
 */
export function loraEstimate(images: number, p: LoraParams, base: SdBaseModelId, ratePerHourUnits: bigint): LoraEstimate {
  const steps = loraSteps(images, p);
  const t = loraTimeline(p, base);
  const seconds = Math.ceil(t.setupSeconds + steps.total * t.secondsPerStep + t.saveSecondsPerEpoch * p.epochs);
  const units = (BigInt(seconds) * ratePerHourUnits + 3599n) / 3600n;
  return { steps, seconds, units: units < LORA_MIN_CHARGE_UNITS ? LORA_MIN_CHARGE_UNITS : units };
}

/** What finished epochs owe of a job's estimate: each its equal share, the last one the rest (never more than held). */
export function loraEpochCharge(estimate: bigint, epochs: number, epoch: number): bigint {
  const share = estimate / BigInt(epochs);
  return epoch < epochs ? share : estimate - share * BigInt(epochs - 1);
}

// --- the job API (/sd/train) ---------------------------------------------------------------------

export const LORA_JOB_STATUSES = ['queued', 'preparing', 'training', 'saving', 'done', 'failed', 'cancelled'] as const;
export type LoraJobStatus = (typeof LORA_JOB_STATUSES)[number];
export const LORA_JOB_STATUS_LABELS: Record<LoraJobStatus, string> = {
  queued: '排队中',
  preparing: '准备中',
  training: '训练中',
  saving: '保存中',
  done: '已完成',
  failed: '失败',
  cancelled: '已取消',
};
/** Statuses a job can still leave: it holds money and can be cancelled. */
export const LORA_JOB_ACTIVE: readonly LoraJobStatus[] = ['queued', 'preparing', 'training', 'saving'];
export const isLoraJobActive = (s: LoraJobStatus) => LORA_JOB_ACTIVE.includes(s);
/** Jobs one account may have queued or running at once. */
export const LORA_MAX_ACTIVE_JOBS = 3;

/** The LoRA's file name (sd-scripts' output_name): letters, digits, _ and -. */
export const loraOutputNameSchema = z
  .string({ error: '请输入模型名称' })
  .trim()
  .min(1, { error: '请输入模型名称' })
  .max(40, { error: '模型名称最多 40 个字符' })
  .regex(/^[A-Za-z0-9_-]+$/, { error: '模型名称只能包含英文字母、数字、下划线和短横线' });

export const loraQuoteRequestSchema = z.object({
  datasetId: z.uuid({ error: '请选择数据集' }),
  baseModel: sdBaseModelIdSchema,
  params: loraParamsSchema,
});
export const loraQuoteSchema = z.object({
  images: z.number().int(),
  steps: z.object({ perEpoch: z.number().int(), total: z.number().int() }),
  /** Estimated GPU time in seconds. */
  seconds: z.number().int(),
  gpuName: z.string(),
  /** The GPU's hourly rate the estimate is priced at. */
  ratePerHour: z.string().describe('金额，单位 0.0001 元的整数字符串'),
  /** The estimate at the rate, at least the minimum. */
  listAmount: z.string().describe('金额，单位 0.0001 元的整数字符串'),
  /** GPU seconds the account's RTX 4090 时长包 would pay for (drawn before the cash). */
  packageSeconds: z.number().int(),
  /** What is held from the cash at start: the estimate less the part the packages pay for. */
  amount: z.string().describe('金额，单位 0.0001 元的整数字符串'),
  minimum: z.string().describe('金额，单位 0.0001 元的整数字符串'),
});
export type LoraQuote = z.infer<typeof loraQuoteSchema>;

export const loraJobCreateRequestSchema = loraQuoteRequestSchema.extend({
  name: loraOutputNameSchema,
  /** The client's id for this start: the same id sent twice (a double click, a retry) starts one job. */
  requestId: z.uuid({ error: 'requestId 格式不正确' }),
});

export const loraEpochSchema = z.object({
  epoch: z.number().int(),
  /** The LoRA file's size in bytes. */
  bytes: z.number().int(),
  samples: z.number().int(),
  createdAt: z.string(),
});

export const loraJobSchema = z.object({
  id: z.string(),
  name: z.string(),
  datasetId: z.string().nullable(),
  datasetName: z.string(),
  triggerWord: z.string(),
  baseModel: sdBaseModelIdSchema,
  params: loraParamsSchema,
  status: z.enum(LORA_JOB_STATUSES),
  images: z.number().int(),
  steps: z.object({ perEpoch: z.number().int(), total: z.number().int() }),
  /** Steps done so far. */
  step: z.number().int(),
  /** Epochs finished (their files saved and charged). */
  epoch: z.number().int(),
  estimateSeconds: z.number().int(),
  /** Seconds still to go while active; null otherwise. */
  etaSeconds: z.number().int().nullable(),
  /** The loss curve: [step, loss] pairs, at most a few hundred (thinned as it grows). */
  loss: z.array(z.tuple([z.number(), z.number()])),
  /** The trainer's log, last lines. */
  log: z.array(z.string()),
  epochs: z.array(loraEpochSchema),
  /** GPU seconds reserved from the account's 时长包 at start, and those the finished epochs used. */
  packageSeconds: z.number(),
  packageUsedSeconds: z.number(),
  held: z.string().describe('预扣金额，单位 0.0001 元'),
  charged: z.string().describe('已结算金额，单位 0.0001 元'),
  refunded: z.string().describe('已退回金额，单位 0.0001 元'),
  error: z.string().nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  updatedAt: z.string(),
});
export type LoraJob = z.infer<typeof loraJobSchema>;

export const loraJobParamsSchema = z.object({ id: z.uuid({ error: '任务 ID 格式不正确' }) });
export const loraEpochParamsSchema = z.object({
  id: z.uuid({ error: '任务 ID 格式不正确' }),
  epoch: z
    .string()
    .regex(/^\d{1,3}$/, { error: '轮次应为整数' })
    .transform(Number),
});
export const loraJobListQuerySchema = pagingQuerySchema.extend({
  status: z.enum(['active', 'done'], { error: 'status 只能是 active 或 done' }).optional(),
});
