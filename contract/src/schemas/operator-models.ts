/**
 * The operator area's 「模型渠道」 (issue 14): the model square's models and the upstream channels
 * behind them, as the catalogue file's `models` and `modelChannels` hold them. Prices here are yuan
 * per million tokens as written in the file ("0.8"); the square shows them in 0.0001 yuan.
 *
 * An edit is stored in the catalogue's state and reaches every server process within seconds; it
 * holds until the catalogue file's text next changes, which replaces both lists with the file's.
 */
import { z } from 'zod';
import { MODEL_TYPES } from './model.js';

export const MODEL_CHANNEL_KINDS = ['embedded', 'openai'] as const;
export type ModelChannelKind = (typeof MODEL_CHANNEL_KINDS)[number];
export const MODEL_CHANNEL_KIND_LABELS: Record<ModelChannelKind, string> = { embedded: '内置模型', openai: 'OpenAI 兼容接口' };

export const MODEL_CHANNEL_WEIGHT_MAX = 10_000;
export const MODEL_CHANNEL_PRIORITY_LIMIT = 1000;

const modelIdSchema = z.string({ error: '请填写模型名称' }).regex(/^[\w.:/-]{1,100}$/, { error: '模型名称只能包含字母、数字和 . _ - : /，最多 100 个字符' });
const channelIdSchema = z
  .string({ error: '请填写渠道编号' })
  .regex(/^[\w.-]{1,64}$/, { error: '渠道编号只能包含字母、数字、点、下划线和横线，最多 64 个字符' });

/** Yuan per million tokens, as the catalogue file writes it. */
export const yuanPerMillionSchema = z
  .string({ error: '请填写价格' })
  .trim()
  .regex(/^\d{1,9}(\.\d{1,4})?$/, { error: '价格须为不小于 0 的数字（元 / 百万 Token），最多 4 位小数' });

export const operatorModelParamsSchema = z.object({ id: modelIdSchema });
export const modelChannelParamsSchema = z.object({ id: channelIdSchema });

/** One model as the operator sees it: every model of the catalogue, 下架 ones too. */
export const operatorModelSchema = z.object({
  id: z.string(),
  name: z.string(),
  provider: z.string(),
  type: z.enum(MODEL_TYPES),
  contextLength: z.number().int(),
  inputYuanPerMillion: z.string(),
  outputYuanPerMillion: z.string(),
  tags: z.array(z.string()),
  description: z.string(),
  sort: z.number().int(),
  /** 上架: listed in the square and routed. */
  active: z.boolean(),
});
export type OperatorModel = z.infer<typeof operatorModelSchema>;

/** A channel as the operator sees it: its key never, only whether there is one and, for `env:NAME`, the variable. */
export const operatorModelChannelSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(MODEL_CHANNEL_KINDS),
  baseUrl: z.string().nullable(),
  apiKeySet: z.boolean(),
  /** The environment variable an `env:NAME` key is read from; null for a key written in the catalogue or none. */
  apiKeyEnv: z.string().nullable(),
  models: z.array(z.string()),
  modelMap: z.record(z.string(), z.string()),
  priority: z.number().int(),
  weight: z.number().int(),
  /** The operator's switch (启用 / 停用). */
  enabled: z.boolean(),
  /** Why an enabled channel takes no calls (its key's variable is not set, none of its models is 上架), or null. */
  problem: z.string().nullable(),
  /** As the server process that answered sees it (each process keeps its own). */
  health: z.object({
    /** Calls may be routed to it now (cooling or not). */
    inUse: z.boolean(),
    /** Failures in a row. */
    failures: z.number().int(),
    /** Tried only after the other channels until then; null when not cooling down. */
    coolingUntil: z.string().nullable(),
    lastError: z.string().nullable(),
  }),
});
export type OperatorModelChannel = z.infer<typeof operatorModelChannelSchema>;

/** GET /api/v1/operator/model-channels (and the answer of every edit). */
export const operatorModelChannelsSchema = z.object({
  models: z.array(operatorModelSchema),
  channels: z.array(operatorModelChannelSchema),
});
export type OperatorModelChannels = z.infer<typeof operatorModelChannelsSchema>;

/** The URL an `openai` channel calls: up to and including the version, with no account in it. */
const baseUrlSchema = z
  .url({ protocol: /^https?$/, error: 'Base URL 须为 http:// 或 https:// 开头的网址，如 https://api.example.com/v1' })
  .max(500, { error: 'Base URL 最多 500 个字符' })
  .refine((v) => !/^[a-z]+:\/\/[^/?#]*@/i.test(v), { error: 'Base URL 中不能包含账号或密码，密钥请填写在 API Key 中' });

/**
 * PUT /api/v1/operator/model-channels/:id: the whole channel (a new id creates it). `apiKey` left
 * out keeps the stored key; `env:NAME` reads it from the server's environment.
 */
export const modelChannelSaveSchema = z
  .object({
    name: z.string({ error: '请填写渠道名称' }).trim().min(1, { error: '请填写渠道名称' }).max(50, { error: '渠道名称最多 50 个字' }),
    kind: z.enum(MODEL_CHANNEL_KINDS, { error: '渠道类型只能是 embedded（内置模型）或 openai（OpenAI 兼容接口）' }),
    baseUrl: baseUrlSchema.optional(),
    apiKey: z
      .string({ error: 'API Key 须为文本' })
      .trim()
      .min(1, { error: 'API Key 不能为空；不修改密钥时请不要传这个字段' })
      .max(500, { error: 'API Key 最多 500 个字符' })
      .optional()
      .describe('不传则保留原密钥；env:变量名 表示从服务器环境变量读取'),
    models: z
      .array(modelIdSchema, { error: '请选择渠道提供的模型' })
      .min(1, { error: '渠道至少要提供一个模型' })
      .max(200, { error: '一个渠道最多 200 个模型' })
      .refine((m) => new Set(m).size === m.length, { error: '模型不能重复' }),
    /** Model id → the upstream's own name for it. */
    modelMap: z
      .record(modelIdSchema, z.string().trim().min(1, { error: '上游模型名称不能为空' }).max(200, { error: '上游模型名称最多 200 个字符' }))
      .default({}),
    priority: z
      .number({ error: '优先级须为整数' })
      .int({ error: '优先级须为整数' })
      .min(-MODEL_CHANNEL_PRIORITY_LIMIT, { error: `优先级须在 -${MODEL_CHANNEL_PRIORITY_LIMIT} 到 ${MODEL_CHANNEL_PRIORITY_LIMIT} 之间` })
      .max(MODEL_CHANNEL_PRIORITY_LIMIT, { error: `优先级须在 -${MODEL_CHANNEL_PRIORITY_LIMIT} 到 ${MODEL_CHANNEL_PRIORITY_LIMIT} 之间` })
      .default(0),
    weight: z
      .number({ error: '权重须为整数' })
      .int({ error: '权重须为整数' })
      .min(1, { error: `权重须为 1 到 ${MODEL_CHANNEL_WEIGHT_MAX} 的整数；不想让渠道接收请求请停用它` })
      .max(MODEL_CHANNEL_WEIGHT_MAX, { error: `权重须为 1 到 ${MODEL_CHANNEL_WEIGHT_MAX} 的整数` })
      .default(1),
    enabled: z.boolean({ error: 'enabled 须为 true 或 false' }).default(true),
  })
  .refine((c) => c.kind !== 'openai' || c.baseUrl !== undefined, { error: 'OpenAI 兼容渠道须填写 Base URL', path: ['baseUrl'] })
  .refine((c) => Object.keys(c.modelMap).every((m) => c.models.includes(m)), { error: '模型映射中的模型须是该渠道提供的模型', path: ['modelMap'] });
export type ModelChannelSaveRequest = z.input<typeof modelChannelSaveSchema>;

/** PUT /api/v1/operator/models/:id: what is sent changes, the rest stays. */
export const operatorModelUpdateSchema = z.object({
  inputYuanPerMillion: yuanPerMillionSchema.optional(),
  outputYuanPerMillion: yuanPerMillionSchema.optional(),
  active: z.boolean({ error: 'active 须为 true 或 false' }).optional(),
  sort: z.number({ error: '排序须为整数' }).int({ error: '排序须为整数' }).min(-100_000).max(100_000).optional(),
  tags: z
    .array(z.string().trim().min(1, { error: '标签不能为空' }).max(20, { error: '标签最多 20 个字' }))
    .max(10, { error: '最多 10 个标签' })
    .optional(),
  description: z.string().trim().max(500, { error: '描述最多 500 个字' }).optional(),
});
export type OperatorModelUpdate = z.infer<typeof operatorModelUpdateSchema>;
