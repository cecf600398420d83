/**
 * Image generation (/sd/diffusion): the parameters of a txt2img task as Stable Diffusion WebUI and
 * ComfyUI users know them, the LoRAs it may use (the account's trained ones and public ones), the
 * price of an image (its GPU seconds at the generation GPU's rate) and the gallery.
 */
import { z } from 'zod';
import { pagingQuerySchema } from './common.js';
import { SD_BASE_MODELS, sdBaseModelIdSchema, type SdBaseModelId } from './training.js';
import { comfyRunStateSchema } from './comfyui-messages.js';

export const SD_SAMPLERS = ['Euler a', 'Euler', 'DPM++ 2M Karras', 'DPM++ SDE Karras', 'DDIM', 'UniPC'] as const;
/** Public LoRAs anyone may use: each with the base model family it was trained for. */
export const PUBLIC_LORAS = [
  { id: 'watercolor', name: '水彩画风', baseModel: 'sd15', color: [0.36, 0.62, 0.86] },
  { id: 'ink-wash', name: '水墨国风', baseModel: 'sd15', color: [0.18, 0.18, 0.2] },
  { id: 'cyberpunk', name: '赛博朋克', baseModel: 'sdxl', color: [0.86, 0.2, 0.78] },
  { id: 'golden-hour', name: '黄昏暖光', baseModel: 'sdxl', color: [0.95, 0.66, 0.24] },
] as const satisfies readonly { id: string; name: string; baseModel: SdBaseModelId; color: readonly [number, number, number] }[];
export type PublicLoraId = (typeof PUBLIC_LORAS)[number]['id'];

/** A task makes at most this many images; an account runs at most this many tasks at once. */
export const DIFFUSION_MAX_BATCH = 8;
export const DIFFUSION_MAX_ACTIVE = 3;
export const DIFFUSION_MAX_LORAS = 5;
/** The smallest charge of one image, in 0.0001 yuan: ¥0.01. */
export const DIFFUSION_MIN_IMAGE_UNITS = 100n;
/** The GPU generation is priced on (billed per GPU second, the compute center's shared mode). */
export const DIFFUSION_GPU = 'rtx4090';

const noNul = (s: string) => !s.includes('\0');
const side = (label: string) =>
  z
    .number({ error: `${label}应为数字` })
    .int({ error: `${label}应为整数` })
    .min(256, { error: `${label}最小为 256` })
    .max(1536, { error: `${label}最大为 1536` })
    .refine((v) => v % 64 === 0, { error: `${label}应为 64 的倍数` });

export const loraRefSchema = z.discriminatedUnion(
  'source',
  [
    z.object({
      source: z.literal('job'),
      jobId: z.uuid({ error: 'LoRA 的训练任务 ID 格式不正确' }),
      epoch: z.number({ error: '轮次应为数字' }).int({ error: '轮次应为整数' }).min(1, { error: '轮次最小为 1' }).max(100, { error: '轮次最大为 100' }),
      weight: z.number({ error: 'LoRA 权重应为数字' }).min(-2, { error: 'LoRA 权重最小为 -2' }).max(2, { error: 'LoRA 权重最大为 2' }),
    }),
    z.object({
      source: z.literal('public'),
      id: z.enum(PUBLIC_LORAS.map((l) => l.id) as [PublicLoraId, ...PublicLoraId[]], { error: '没有这个公共 LoRA' }),
      weight: z.number({ error: 'LoRA 权重应为数字' }).min(-2, { error: 'LoRA 权重最小为 -2' }).max(2, { error: 'LoRA 权重最大为 2' }),
    }),
  ],
  { error: 'LoRA 来源只能是 job 或 public' },
);
export type LoraRef = z.infer<typeof loraRefSchema>;

export const diffusionParamsSchema = z.object({
  prompt: z
    .string({ error: '请输入提示词' })
    .trim()
    .min(1, { error: '请输入提示词' })
    .max(2000, { error: '提示词最多 2000 个字符' })
    .refine(noNul, { error: '提示词不能包含空字符' }),
  negativePrompt: z
    .string({ error: '反向提示词应为文字' })
    .trim()
    .max(2000, { error: '反向提示词最多 2000 个字符' })
    .refine(noNul, { error: '反向提示词不能包含空字符' })
    .default(''),
  baseModel: sdBaseModelIdSchema,
  loras: z
    .array(loraRefSchema)
    .max(DIFFUSION_MAX_LORAS, { error: `最多同时使用 ${DIFFUSION_MAX_LORAS} 个 LoRA` })
    .default([]),
  width: side('宽度'),
  height: side('高度'),
  steps: z
    .number({ error: '采样步数应为数字' })
    .int({ error: '采样步数应为整数' })
    .min(1, { error: '采样步数最小为 1' })
    .max(100, { error: '采样步数最大为 100' }),
  cfg: z.number({ error: 'CFG 应为数字' }).min(1, { error: 'CFG 最小为 1' }).max(30, { error: 'CFG 最大为 30' }),
  sampler: z.enum(SD_SAMPLERS, { error: '请选择采样器' }),
  /** -1: a random seed, chosen by the server (and shown with the result). */
  seed: z
    .number({ error: '种子应为数字' })
    .int({ error: '种子应为整数' })
    .min(-1, { error: '种子应为 -1（随机）或非负整数' })
    .max(4294967295, { error: '种子最大为 4294967295' }),
  batchCount: z
    .number({ error: '生成数量应为数字' })
    .int({ error: '生成数量应为整数' })
    .min(1, { error: '生成数量最小为 1' })
    .max(DIFFUSION_MAX_BATCH, { error: `生成数量最大为 ${DIFFUSION_MAX_BATCH}` }),
});
export type DiffusionParams = z.infer<typeof diffusionParamsSchema>;

export const DIFFUSION_DEFAULTS: Record<SdBaseModelId, Omit<DiffusionParams, 'prompt' | 'baseModel' | 'loras'>> = {
  sd15: {
    negativePrompt: 'lowres, bad anatomy, blurry, worst quality',
    width: 512,
    height: 512,
    steps: 20,
    cfg: 7,
    sampler: 'DPM++ 2M Karras',
    seed: -1,
    batchCount: 1,
  },
  sdxl: {
    negativePrompt: 'lowres, bad anatomy, blurry, worst quality',
    width: 1024,
    height: 1024,
    steps: 25,
    cfg: 6,
    sampler: 'DPM++ 2M Karras',
    seed: -1,
    batchCount: 1,
  },
};

/** GPU seconds per sampling step at the model's native size on the reference card; a fixed part per image (VAE decode, saving). */
const SECONDS_PER_STEP: Record<(typeof SD_BASE_MODELS)[number]['family'], number> = { sd15: 0.04, sdxl: 0.12 };
const IMAGE_OVERHEAD_SECONDS = 1.5;

/** One image's GPU time on the reference card: its steps, scaled by its pixels against the model's native size. */
export function diffusionImageSeconds(p: Pick<DiffusionParams, 'baseModel' | 'width' | 'height' | 'steps'>): number {
  const model = SD_BASE_MODELS.find((m) => m.id === p.baseModel)!;
  return IMAGE_OVERHEAD_SECONDS + p.steps * SECONDS_PER_STEP[model.family] * ((p.width * p.height) / model.resolution ** 2);
}

/** One image's price in 0.0001 yuan: its GPU seconds at the hourly rate, rounded up, at least the minimum. */
export function diffusionImageUnits(p: Pick<DiffusionParams, 'baseModel' | 'width' | 'height' | 'steps'>, ratePerHourUnits: bigint): bigint {
  const millis = BigInt(Math.ceil(diffusionImageSeconds(p) * 1000));
  const units = (millis * ratePerHourUnits + 3_599_999n) / 3_600_000n;
  return units < DIFFUSION_MIN_IMAGE_UNITS ? DIFFUSION_MIN_IMAGE_UNITS : units;
}

/** What a quote needs: the price depends on the model, the size, the steps and the count, not on the prompt. */
/** The LoRAs do not change the price, but a quote naming one the account cannot use is refused as submitting it would be. */
export const diffusionQuoteRequestSchema = diffusionParamsSchema
  .pick({ baseModel: true, width: true, height: true, steps: true, batchCount: true })
  .extend({ loras: diffusionParamsSchema.shape.loras.optional() });
export type DiffusionQuoteRequest = z.infer<typeof diffusionQuoteRequestSchema>;

export const diffusionQuoteSchema = z.object({
  seconds: z.number().describe('每张图预计 GPU 秒数'),
  gpuName: z.string(),
  ratePerHour: z.string().describe('金额，单位 0.0001 元的整数字符串'),
  perImage: z.string().describe('每张价格，单位 0.0001 元'),
  /** Images the account's RTX 4090 时长包 would pay for (drawn before the cash). */
  packageImages: z.number().int(),
  total: z.string().describe('本次从现金预扣（时长包支付的张数除外），单位 0.0001 元'),
});
export type DiffusionQuote = z.infer<typeof diffusionQuoteSchema>;

export const diffusionCreateRequestSchema = diffusionParamsSchema.extend({
  /** The client's id for this submit: the same id twice makes one task. */
  requestId: z.uuid({ error: 'requestId 格式不正确' }),
});

export const DIFFUSION_STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;
export type DiffusionStatus = (typeof DIFFUSION_STATUSES)[number];
export const DIFFUSION_STATUS_LABELS: Record<DiffusionStatus, string> = {
  queued: '排队中',
  running: '生成中',
  done: '已完成',
  failed: '失败',
  cancelled: '已取消',
};

/** A LoRA as a task used it: its name kept, so the gallery still says what made an image after the job is deleted. */
export const usedLoraSchema = z.object({ source: z.enum(['job', 'public']), ref: z.string(), name: z.string(), weight: z.number() });

export const diffusionImageSchema = z.object({
  id: z.string(),
  taskId: z.string(),
  index: z.number().int(),
  seed: z.number().int(),
  width: z.number().int(),
  height: z.number().int(),
  bytes: z.number().int(),
  /** The task's parameters with this image's own seed: what "reuse" fills the form with. */
  params: diffusionParamsSchema.omit({ loras: true, batchCount: true }).extend({ loras: z.array(loraRefSchema) }),
  loras: z.array(usedLoraSchema),
  /** Made by a ComfyUI workflow (its name then): the parameters only summarise it. */
  workflowName: z.string().nullable(),
  createdAt: z.string(),
});
export type DiffusionImage = z.infer<typeof diffusionImageSchema>;

export const DIFFUSION_TASK_KINDS = ['txt2img', 'workflow'] as const;

export const diffusionTaskSchema = z.object({
  id: z.string(),
  /** txt2img from the form, or a run of a ComfyUI workflow (/comfyui). */
  kind: z.enum(DIFFUSION_TASK_KINDS),
  status: z.enum(DIFFUSION_STATUSES),
  prompt: z.string(),
  baseModel: sdBaseModelIdSchema,
  batchCount: z.number().int(),
  /** Images finished, and the sampling step of the one being made. */
  done: z.number().int(),
  step: z.number().int(),
  steps: z.number().int(),
  seed: z.number().int(),
  /** Images paid by the account's 时长包 (the first ones made). */
  packageImages: z.number().int(),
  held: z.string(),
  charged: z.string(),
  refunded: z.string(),
  error: z.string().nullable(),
  images: z.array(diffusionImageSchema),
  /** A workflow run: the workflow, its nodes in the order they run, and where each is (ComfyUI's messages folded). */
  workflow: z
    .object({
      id: z.string().nullable(),
      name: z.string(),
      nodes: z.array(z.object({ id: z.string(), classType: z.string(), title: z.string() })),
      state: comfyRunStateSchema,
    })
    .nullable(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
export type DiffusionTask = z.infer<typeof diffusionTaskSchema>;

export const diffusionIdParamsSchema = z.object({ id: z.uuid({ error: 'ID 格式不正确' }) });
export const diffusionTaskListQuerySchema = pagingQuerySchema.extend({
  status: z.enum(['active', 'done'], { error: 'status 只能是 active 或 done' }).optional(),
  kind: z.enum(DIFFUSION_TASK_KINDS, { error: 'kind 只能是 txt2img 或 workflow' }).optional(),
});
export const diffusionGalleryQuerySchema = pagingQuerySchema;

/** The LoRAs the form offers: the account's finished jobs (each saved epoch) and the public ones. */
export const loraOptionSchema = z.object({
  source: z.enum(['job', 'public']),
  /** The job's id, or the public LoRA's id. */
  ref: z.string(),
  epoch: z.number().int().nullable(),
  name: z.string(),
  baseModel: sdBaseModelIdSchema,
  triggerWord: z.string(),
});
export type LoraOption = z.infer<typeof loraOptionSchema>;
