/**
 * The ComfyUI area (/comfyui): workflows in ComfyUI's API format (what "Save (API Format)" writes:
 * `{ "<node id>": { "class_type": …, "inputs": { … } } }`, a link being `["<node id>", <output>]`),
 * the nodes the shared image backend runs, and what a run of a workflow will make and cost.
 *
 * The analysis here is the one both sides use: the server prices and refuses a workflow with it
 * before any money moves, the embedded ComfyUI executes the same plan, and the page shows the same
 * errors while the user edits.
 */
import { z } from 'zod';
import { pagingQuerySchema } from './common.js';
import { DIFFUSION_MIN_IMAGE_UNITS, PUBLIC_LORAS, SD_SAMPLERS, diffusionImageSeconds, type DiffusionParams } from './diffusion.js';
import type { SdBaseModelId } from './training.js';

/** The checkpoint file each base model is loaded from (CheckpointLoaderSimple's ckpt_name). */
export const COMFY_CHECKPOINTS: Record<SdBaseModelId, string> = {
  sd15: 'v1-5-pruned-emaonly.safetensors',
  sdxl: 'sd_xl_base_1.0.safetensors',
};
/** The public LoRAs under the file names LoraLoader's lora_name takes. */
export const COMFY_LORA_FILES = PUBLIC_LORAS.map((l) => `${l.id}.safetensors`);
export const COMFY_SAMPLER_NAMES = [
  'euler',
  'euler_ancestral',
  'heun',
  'dpm_2',
  'dpm_2_ancestral',
  'lms',
  'dpmpp_2m',
  'dpmpp_sde',
  'dpmpp_2m_sde',
  'ddim',
  'uni_pc',
] as const;
export const COMFY_SCHEDULERS = ['normal', 'karras', 'exponential', 'sgm_uniform', 'simple', 'ddim_uniform'] as const;
/** WebUI's sampler names as ComfyUI's sampler and scheduler pairs (the same picture either way). */
export const COMFY_SAMPLER_OF: Record<
  (typeof SD_SAMPLERS)[number],
  { sampler: (typeof COMFY_SAMPLER_NAMES)[number]; scheduler: (typeof COMFY_SCHEDULERS)[number] }
> = {
  'Euler a': { sampler: 'euler_ancestral', scheduler: 'normal' },
  Euler: { sampler: 'euler', scheduler: 'normal' },
  'DPM++ 2M Karras': { sampler: 'dpmpp_2m', scheduler: 'karras' },
  'DPM++ SDE Karras': { sampler: 'dpmpp_sde', scheduler: 'karras' },
  DDIM: { sampler: 'ddim', scheduler: 'ddim_uniform' },
  UniPC: { sampler: 'uni_pc', scheduler: 'normal' },
};

export const COMFY_MAX_NODES = 64;
/** Images one run may make (all its SaveImage nodes together). */
export const COMFY_MAX_IMAGES = 16;
export const COMFY_MAX_WORKFLOWS = 100;
const MAX_SEED = Number.MAX_SAFE_INTEGER;

export type ComfyType = 'MODEL' | 'CLIP' | 'VAE' | 'CONDITIONING' | 'LATENT' | 'IMAGE';
export type ComfyInputSpec =
  | { kind: 'link'; type: ComfyType }
  | { kind: 'int'; min: number; max: number; default: number; multipleOf?: number }
  | { kind: 'float'; min: number; max: number; default: number }
  | { kind: 'string'; multiline: boolean; default: string }
  | { kind: 'enum'; options: readonly string[]; default: string };

export interface ComfyNodeSpec {
  /** ComfyUI's display name, and ours. */
  title: string;
  label: string;
  inputs: Record<string, ComfyInputSpec>;
  outputs: readonly ComfyType[];
  /** An output node: the workflow runs for these. */
  output?: boolean;
}

/** The nodes the shared backend runs: the standard text-to-image graph and LoRAs. */
export const COMFY_NODES = {
  CheckpointLoaderSimple: {
    title: 'Load Checkpoint',
    label: '加载模型',
    inputs: { ckpt_name: { kind: 'enum', options: Object.values(COMFY_CHECKPOINTS), default: COMFY_CHECKPOINTS.sd15 } },
    outputs: ['MODEL', 'CLIP', 'VAE'],
  },
  LoraLoader: {
    title: 'Load LoRA',
    label: '加载 LoRA',
    inputs: {
      model: { kind: 'link', type: 'MODEL' },
      clip: { kind: 'link', type: 'CLIP' },
      lora_name: { kind: 'enum', options: COMFY_LORA_FILES, default: COMFY_LORA_FILES[0]! },
      strength_model: { kind: 'float', min: -2, max: 2, default: 1 },
      strength_clip: { kind: 'float', min: -2, max: 2, default: 1 },
    },
    outputs: ['MODEL', 'CLIP'],
  },
  CLIPSetLastLayer: {
    title: 'CLIP Set Last Layer',
    label: 'CLIP 跳过层',
    inputs: { clip: { kind: 'link', type: 'CLIP' }, stop_at_clip_layer: { kind: 'int', min: -24, max: -1, default: -1 } },
    outputs: ['CLIP'],
  },
  CLIPTextEncode: {
    title: 'CLIP Text Encode (Prompt)',
    label: '提示词编码',
    inputs: { text: { kind: 'string', multiline: true, default: '' }, clip: { kind: 'link', type: 'CLIP' } },
    outputs: ['CONDITIONING'],
  },
  EmptyLatentImage: {
    title: 'Empty Latent Image',
    label: '空潜空间图像',
    inputs: {
      width: { kind: 'int', min: 256, max: 2048, default: 512, multipleOf: 8 },
      height: { kind: 'int', min: 256, max: 2048, default: 512, multipleOf: 8 },
      batch_size: { kind: 'int', min: 1, max: 8, default: 1 },
    },
    outputs: ['LATENT'],
  },
  KSampler: {
    title: 'KSampler',
    label: '采样器',
    inputs: {
      model: { kind: 'link', type: 'MODEL' },
      seed: { kind: 'int', min: 0, max: MAX_SEED, default: 0 },
      steps: { kind: 'int', min: 1, max: 100, default: 20 },
      cfg: { kind: 'float', min: 1, max: 30, default: 7 },
      sampler_name: { kind: 'enum', options: COMFY_SAMPLER_NAMES, default: 'euler_ancestral' },
      scheduler: { kind: 'enum', options: COMFY_SCHEDULERS, default: 'normal' },
      positive: { kind: 'link', type: 'CONDITIONING' },
      negative: { kind: 'link', type: 'CONDITIONING' },
      latent_image: { kind: 'link', type: 'LATENT' },
      denoise: { kind: 'float', min: 0, max: 1, default: 1 },
    },
    outputs: ['LATENT'],
  },
  VAEDecode: {
    title: 'VAE Decode',
    label: 'VAE 解码',
    inputs: { samples: { kind: 'link', type: 'LATENT' }, vae: { kind: 'link', type: 'VAE' } },
    outputs: ['IMAGE'],
  },
  SaveImage: {
    title: 'Save Image',
    label: '保存图像',
    inputs: { images: { kind: 'link', type: 'IMAGE' }, filename_prefix: { kind: 'string', multiline: false, default: 'ComfyUI' } },
    outputs: [],
    output: true,
  },
} as const satisfies Record<string, ComfyNodeSpec>;
export type ComfyClass = keyof typeof COMFY_NODES;
export const COMFY_CLASSES = Object.keys(COMFY_NODES) as ComfyClass[];

const linkSchema = z.tuple([z.string().max(32), z.number().int().min(0).max(16)]);
const inputValueSchema = z.union([z.string().max(4000, { error: '文本输入最多 4000 个字符' }), z.number(), z.boolean(), linkSchema]);
export type ComfyInputValue = z.infer<typeof inputValueSchema>;

export const comfyNodeSchema = z.object({
  class_type: z.string({ error: '每个节点都要有 class_type' }).min(1, { error: '每个节点都要有 class_type' }).max(100),
  inputs: z.record(z.string().max(64), inputValueSchema, { error: '节点的 inputs 应为对象' }),
  _meta: z
    .object({ title: z.string().max(200) })
    .partial()
    .optional(),
});
export type ComfyNode = z.infer<typeof comfyNodeSchema>;

/** A workflow in the API format; its shape only (what it means: `analyzeComfyGraph`). */
export const comfyGraphSchema = z
  .record(z.string().regex(/^[0-9A-Za-z_:.-]{1,32}$/, { error: '节点 ID 只能是 1–32 位字母、数字或 _:.-' }), comfyNodeSchema, {
    error: '工作流应为 ComfyUI API 格式的 JSON 对象（在 ComfyUI 中用“Save (API Format)”导出）',
  })
  .refine((g) => Object.keys(g).length > 0, { error: '工作流没有节点' })
  .refine((g) => Object.keys(g).length <= COMFY_MAX_NODES, { error: `工作流最多 ${COMFY_MAX_NODES} 个节点` });
export type ComfyGraph = z.infer<typeof comfyGraphSchema>;

export interface ComfyNodeError {
  node: string;
  message: string;
}

/** What one image of a run is made from (what the embedded backend paints). */
export interface ComfyImagePlan {
  /** The SaveImage node, and the image's place in its batch. */
  node: string;
  batchIndex: number;
  filenamePrefix: string;
  baseModel: SdBaseModelId;
  prompt: string;
  negativePrompt: string;
  seed: number;
  width: number;
  height: number;
  steps: number;
  cfg: number;
  /** WebUI's name when the pair has one, else `sampler_scheduler`. */
  sampler: string;
  loras: { file: string; weight: number }[];
}

export interface ComfyPlan {
  /** The nodes that run, in the order they run. */
  order: string[];
  /** Each sampler that runs, with its GPU seconds on the reference card (its whole batch). */
  samplers: { node: string; steps: number; batch: number; seconds: number }[];
  images: ComfyImagePlan[];
  seconds: number;
}

export type ComfyAnalysis = { ok: true; plan: ComfyPlan } | { ok: false; errors: ComfyNodeError[] };

/**
 * Checks a workflow against the nodes the backend runs, and plans what it makes. `ownLoras`: LoRA
 * files the backend has besides the public ones (an account's own, placed there for its task).
 */
export function analyzeComfyGraph(graph: ComfyGraph, opts: { ownLoras?: readonly string[] } = {}): ComfyAnalysis {
  const errors: ComfyNodeError[] = [];
  for (const [id, node] of Object.entries(graph)) errors.push(...checkNode(graph, id, node, opts.ownLoras ?? []));
  if (errors.length) return { ok: false, errors };
  const outputs = sortIds(Object.keys(graph).filter((id) => (COMFY_NODES[graph[id]!.class_type as ComfyClass] as ComfyNodeSpec).output));
  if (!outputs.length) return { ok: false, errors: [{ node: '', message: '工作流没有输出节点（Save Image），运行不会产生图片' }] };
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string): boolean => {
    if (state.get(id) === 'done') return true;
    if (state.get(id) === 'visiting') return false;
    state.set(id, 'visiting');
    // Inputs in the node's own order (a stored graph's keys may come back in another).
    const node = graph[id]!;
    for (const name of Object.keys((COMFY_NODES as Record<string, ComfyNodeSpec>)[node.class_type]!.inputs)) {
      const value = node.inputs[name];
      if (Array.isArray(value) && !visit(value[0])) return false;
    }
    state.set(id, 'done');
    order.push(id);
    return true;
  };
  for (const id of outputs) if (!visit(id)) return { ok: false, errors: [{ node: id, message: '工作流中有环：节点的输入不能直接或间接来自它自己' }] };
  const plan = planImages(graph, order, outputs);
  if ('errors' in plan) return { ok: false, errors: plan.errors };
  return { ok: true, plan };
}

function checkNode(graph: ComfyGraph, id: string, node: ComfyNode, ownLoras: readonly string[]): ComfyNodeError[] {
  const spec = (COMFY_NODES as Record<string, ComfyNodeSpec>)[node.class_type];
  if (!spec) {
    return [
      { node: id, message: `节点 ${id}（${node.class_type}）不在共享算力支持的节点中（${COMFY_CLASSES.join('、')}）；使用自定义节点请租用 ComfyUI 实例` },
    ];
  }
  const errors: ComfyNodeError[] = [];
  const say = (input: string, what: string) => errors.push({ node: id, message: `节点 ${id}（${spec.title}）的 ${input} ${what}` });
  for (const [name, input] of Object.entries(spec.inputs)) {
    const value = node.inputs[name];
    if (value === undefined) {
      say(name, '未填写');
      continue;
    }
    if (input.kind === 'link') {
      if (!Array.isArray(value)) {
        say(name, `应连接一个 ${input.type} 输出`);
        continue;
      }
      const from = graph[value[0]];
      const fromSpec = from && (COMFY_NODES as Record<string, ComfyNodeSpec>)[from.class_type];
      if (!from) say(name, `连接的节点 ${value[0]} 不存在`);
      else if (fromSpec && fromSpec.outputs[value[1]] !== input.type)
        say(name, `应连接 ${input.type}，而节点 ${value[0]} 的第 ${value[1]} 个输出是 ${fromSpec.outputs[value[1]] ?? '（不存在）'}`);
      continue;
    }
    if (Array.isArray(value)) {
      say(name, '应填写数值或文字，不能连接其他节点');
      continue;
    }
    if (input.kind === 'int' || input.kind === 'float') {
      if (typeof value !== 'number' || !Number.isFinite(value)) say(name, '应为数字');
      else if (input.kind === 'int' && !Number.isInteger(value)) say(name, '应为整数');
      else if (value < input.min || value > input.max) say(name, `应在 ${input.min} 到 ${input.max} 之间`);
      else if (input.kind === 'int' && input.multipleOf && value % input.multipleOf !== 0) say(name, `应为 ${input.multipleOf} 的倍数`);
    } else if (input.kind === 'string') {
      if (typeof value !== 'string') say(name, '应为文字');
      else if (value.includes('\0')) say(name, '不能包含空字符');
    } else if (typeof value !== 'string' || !(input.options.includes(value) || (name === 'lora_name' && ownLoras.includes(value)))) {
      say(name, `应为其中之一：${input.options.join('、')}`);
    }
  }
  return errors;
}

function planImages(
  graph: ComfyGraph,
  order: string[],
  outputs: string[],
): Pick<ComfyPlan, 'order' | 'samplers' | 'images' | 'seconds'> | { errors: ComfyNodeError[] } {
  const node = (link: ComfyInputValue) => graph[(link as [string, number])[0]]!;
  const latentOf = (link: ComfyInputValue): { width: number; height: number; batch: number } => {
    const n = node(link);
    if (n.class_type === 'EmptyLatentImage')
      return { width: n.inputs.width as number, height: n.inputs.height as number, batch: n.inputs.batch_size as number };
    return latentOf(n.inputs.latent_image!);
  };
  const modelOf = (link: ComfyInputValue): { baseModel: SdBaseModelId; loras: { file: string; weight: number }[] } => {
    const n = node(link);
    if (n.class_type === 'CheckpointLoaderSimple') {
      const baseModel = (Object.keys(COMFY_CHECKPOINTS) as SdBaseModelId[]).find((m) => COMFY_CHECKPOINTS[m] === n.inputs.ckpt_name)!;
      return { baseModel, loras: [] };
    }
    const inner = modelOf(n.inputs.model!);
    return { ...inner, loras: [...inner.loras, { file: n.inputs.lora_name as string, weight: n.inputs.strength_model as number }] };
  };
  const textOf = (link: ComfyInputValue) => node(link).inputs.text as string;

  const samplers: ComfyPlan['samplers'] = [];
  for (const id of order) {
    const n = graph[id]!;
    if (n.class_type !== 'KSampler') continue;
    const { width, height, batch } = latentOf(n.inputs.latent_image!);
    const { baseModel } = modelOf(n.inputs.model!);
    const steps = n.inputs.steps as number;
    samplers.push({ node: id, steps, batch, seconds: diffusionImageSeconds({ baseModel, width, height, steps }) * batch });
  }
  const errors: ComfyNodeError[] = [];
  const images: ComfyImagePlan[] = [];
  for (const out of outputs) {
    const decode = node(graph[out]!.inputs.images!);
    const sampler = node(decode.inputs.samples!);
    if (sampler.class_type !== 'KSampler') {
      errors.push({ node: out, message: `节点 ${out}（Save Image）的图像应经 VAE Decode 来自 KSampler 的采样结果` });
      continue;
    }
    const s = sampler.inputs;
    const { width, height, batch } = latentOf(s.latent_image!);
    const { baseModel, loras } = modelOf(s.model!);
    const pair = `${s.sampler_name as string}_${s.scheduler as string}`;
    const webui = (Object.keys(COMFY_SAMPLER_OF) as (typeof SD_SAMPLERS)[number][]).find(
      (k) => `${COMFY_SAMPLER_OF[k].sampler}_${COMFY_SAMPLER_OF[k].scheduler}` === pair,
    );
    for (let i = 0; i < batch; i++) {
      images.push({
        node: out,
        batchIndex: i,
        filenamePrefix: graph[out]!.inputs.filename_prefix as string,
        baseModel,
        prompt: textOf(s.positive!),
        negativePrompt: textOf(s.negative!),
        seed: (s.seed as number) + i,
        width,
        height,
        steps: s.steps as number,
        cfg: s.cfg as number,
        sampler: webui ?? pair,
        loras,
      });
    }
  }
  if (errors.length) return { errors };
  if (images.length > COMFY_MAX_IMAGES)
    return { errors: [{ node: '', message: `一次运行最多输出 ${COMFY_MAX_IMAGES} 张图（现在 ${images.length} 张），请减小 batch_size 或 Save Image 节点` }] };
  const seconds = samplers.reduce((sum, s) => sum + s.seconds, 0);
  return { order, samplers, images, seconds };
}

/** Node ids in ComfyUI's usual order: numeric ones by number, then the rest by name. */
function sortIds(ids: string[]): string[] {
  return [...ids].sort((a, b) => {
    const [na, nb] = [Number(a), Number(b)];
    if (Number.isInteger(na) && Number.isInteger(nb)) return na - nb;
    if (Number.isInteger(na) !== Number.isInteger(nb)) return Number.isInteger(na) ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

/** One image's price in 0.0001 yuan for a run of `seconds` GPU time making `images` images: rounded up, at least the minimum. */
export function comfyImageUnits(plan: Pick<ComfyPlan, 'seconds' | 'images'>, ratePerHourUnits: bigint): bigint {
  const millis = BigInt(Math.ceil((plan.seconds * 1000) / plan.images.length));
  const units = (millis * ratePerHourUnits + 3_599_999n) / 3_600_000n;
  return units < DIFFUSION_MIN_IMAGE_UNITS ? DIFFUSION_MIN_IMAGE_UNITS : units;
}

/** The standard text-to-image graph of the parameters (ComfyUI's default workflow, with LoRAs chained in). */
export function txt2imgGraph(p: Omit<DiffusionParams, 'loras'> & { seed: number }, loras: { file: string; weight: number }[] = []): ComfyGraph {
  const graph: ComfyGraph = {
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: COMFY_CHECKPOINTS[p.baseModel] } },
  };
  let model: [string, number] = ['4', 0];
  let clip: [string, number] = ['4', 1];
  loras.forEach((l, i) => {
    const id = String(10 + i);
    graph[id] = { class_type: 'LoraLoader', inputs: { model, clip, lora_name: l.file, strength_model: l.weight, strength_clip: l.weight } };
    model = [id, 0];
    clip = [id, 1];
  });
  const { sampler, scheduler } = COMFY_SAMPLER_OF[p.sampler];
  Object.assign(graph, {
    '5': { class_type: 'EmptyLatentImage', inputs: { width: p.width, height: p.height, batch_size: p.batchCount } },
    '6': { class_type: 'CLIPTextEncode', inputs: { text: p.prompt, clip } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: p.negativePrompt, clip } },
    '3': {
      class_type: 'KSampler',
      inputs: {
        model,
        seed: p.seed,
        steps: p.steps,
        cfg: p.cfg,
        sampler_name: sampler,
        scheduler,
        positive: ['6', 0],
        negative: ['7', 0],
        latent_image: ['5', 0],
        denoise: 1,
      },
    },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
    '9': { class_type: 'SaveImage', inputs: { images: ['8', 0], filename_prefix: 'ComfyUI' } },
  });
  return graph;
}

/** The workflow a new one starts from: text to image on SD 1.5. */
export function defaultComfyGraph(): ComfyGraph {
  return txt2imgGraph({
    prompt: 'a purple cat sitting on a windowsill, soft light, highly detailed',
    negativePrompt: 'lowres, bad anatomy, blurry, worst quality',
    baseModel: 'sd15',
    width: 512,
    height: 512,
    steps: 20,
    cfg: 7,
    sampler: 'Euler a',
    seed: 42,
    batchCount: 1,
  });
}

// --- the console's API ------------------------------------------------------------------------------

const nameSchema = z
  .string({ error: '请输入工作流名称' })
  .trim()
  .min(1, { error: '请输入工作流名称' })
  .max(60, { error: '工作流名称最多 60 个字符' })
  .refine((s) => !/[\0\n\r]/.test(s), { error: '工作流名称不能包含换行或空字符' });

export const comfyWorkflowCreateSchema = z.object({ name: nameSchema, graph: comfyGraphSchema });
export const comfyWorkflowUpdateSchema = z
  .object({ name: nameSchema.optional(), graph: comfyGraphSchema.optional() })
  .refine((b) => b.name !== undefined || b.graph !== undefined, { error: '请提供要修改的名称或工作流' });
export const comfyWorkflowListQuerySchema = pagingQuerySchema;
export const comfyQuoteRequestSchema = z.object({ graph: comfyGraphSchema });
export const comfyRunRequestSchema = z.object({
  workflowId: z.uuid({ error: '工作流 ID 格式不正确' }),
  requestId: z.uuid({ error: 'requestId 格式不正确' }),
});

export const comfyWorkflowSchema = z.object({
  id: z.string(),
  name: z.string(),
  graph: comfyGraphSchema,
  nodes: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ComfyWorkflow = z.infer<typeof comfyWorkflowSchema>;

export const comfyQuoteSchema = z.object({
  images: z.number().int(),
  seconds: z.number(),
  gpuName: z.string(),
  ratePerHour: z.string(),
  perImage: z.string(),
  packageImages: z.number().int(),
  total: z.string(),
});
export type ComfyQuote = z.infer<typeof comfyQuoteSchema>;
