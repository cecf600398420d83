/**
 * The model service's console API (issue 14): the model square's catalogue and the account's API
 * keys. The OpenAI wire format the gateway speaks under /v1 is in openai.ts. Money is a string of
 * 0.0001-yuan units (DESIGN.md "Money").
 */
import { z } from 'zod';
import { moneySchema, numeric, pageOf, pagingQuerySchema } from './common.js';

export const MODEL_TYPES = ['chat', 'embedding'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

/** One model of the square, as the operator's catalogue prices it. */
export const modelSchema = z.object({
  /** The name clients send as `model`. */
  id: z.string(),
  name: z.string(),
  provider: z.string(),
  type: z.enum(MODEL_TYPES),
  /** Prompt plus answer, in tokens. */
  contextLength: z.number().int(),
  /** Per million input (prompt) tokens, in 0.0001 yuan. */
  inputPricePerMillion: moneySchema,
  /** Per million output (completion) tokens, in 0.0001 yuan ("0" for embeddings). */
  outputPricePerMillion: moneySchema,
  tags: z.array(z.string()),
  description: z.string(),
});
export type Model = z.infer<typeof modelSchema>;

/** GET /api/v1/model/models: filterBy keys `provider`, `type`, `tag`; keyword searches id, name and description. */
export const modelListQuerySchema = pagingQuerySchema.extend({
  keyword: z.string().trim().max(50, { error: '搜索词最多 50 个字' }).optional(),
  filterBy: z.string().trim().max(400, { error: 'filterBy 过长' }).optional(),
  pageSize: numeric(z.number().int().min(1).max(100)).default(50),
});
/** A page of models, with every provider and tag of the whole catalogue (for the square's filters). */
export const modelPageSchema = pageOf(modelSchema).extend({ providers: z.array(z.string()), tags: z.array(z.string()) });
export type ModelPage = z.infer<typeof modelPageSchema>;

// ---------------------------------------------------------------------------------------------
// API keys

/** Keys an account may hold at once (deleted ones do not count). */
export const API_KEY_LIMIT = 50;
export const API_KEY_RPM_MAX = 10_000;
export const API_KEY_TPM_MAX = 100_000_000;

/** An IPv4 address: four decimal octets 0-255 without leading zeros. */
function isIPv4(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255);
}

/** An IPv6 address in any RFC 4291 text form (`::` once, an IPv4 tail allowed), without a zone. */
function isIPv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.length > 45) return false;
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const all = [...head, ...tail];
  let count = 0;
  for (const [i, g] of all.entries()) {
    if (g.includes('.')) {
      if (i !== all.length - 1 || !isIPv4(g)) return false;
      count += 2;
    } else if (/^[0-9a-fA-F]{1,4}$/.test(g)) count += 1;
    else return false;
  }
  return halves.length === 2 ? count <= 7 : count === 8;
}

/**
 * An address or a CIDR range the key may be used from: `203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`.
 * Returns the family and prefix length, or null when it is neither.
 */
export function parseCidr(raw: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText, extra] = raw.trim().split('/');
  if (extra !== undefined) return null;
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  if (!family) return null;
  const max = family === 'ipv4' ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: max, family };
  if (!/^(0|[1-9]\d{0,2})$/.test(prefixText) || Number(prefixText) > max) return null;
  return { address, prefix: Number(prefixText), family };
}

const cidrSchema = z
  .string()
  .trim()
  .refine((v) => parseCidr(v) !== null, { error: (i) => `${String(i.input)} 不是有效的 IP 地址或 CIDR 网段（如 203.0.113.7、10.0.0.0/8、2001:db8::/32）` });

const keyNameSchema = z
  .string({ error: '请输入密钥名称' })
  .trim()
  .min(1, { error: '请输入密钥名称' })
  .max(50, { error: '密钥名称最多 50 个字' })
  .describe('密钥名称');
const modelIdSchema = z
  .string()
  .trim()
  .min(1, { error: '模型名称不能为空' })
  .max(100, { error: '模型名称过长' })
  .regex(/^[\w.:/-]+$/, { error: '模型名称格式不正确' });

/** The per-key settings; on update each one left out stays as it is, and null clears it. */
const keySettings = {
  /** When the key stops working (ISO 8601 with time zone); null: never. */
  expiresAt: z.iso
    .datetime({ offset: true, error: '过期时间格式不正确（ISO 8601，含时区，如 2026-12-31T23:59:59+08:00）' })
    .nullable()
    .describe('过期时间，null 为永不过期'),
  /** What the key may spend in total, in 0.0001 yuan; null: no limit beyond the balance. */
  spendLimit: z
    .string()
    .regex(/^\d{1,15}$/, { error: '消费上限须为非负整数（单位 0.0001 元）' })
    .nullable()
    .describe('消费上限，单位 0.0001 元；null 为不限'),
  /** The models the key may call; empty: every model of the square. */
  allowedModels: z.array(modelIdSchema).max(100, { error: '可用模型最多 100 个' }).describe('可用模型，空为全部'),
  /** Addresses or CIDR ranges (IPv4 and IPv6) the key may be used from; empty: anywhere. */
  allowedIps: z.array(cidrSchema).max(100, { error: 'IP 白名单最多 100 条' }).describe('IP 白名单（IP 或 CIDR），空为不限'),
  rpmLimit: numeric(
    z
      .number({ error: '每分钟请求数上限须为整数' })
      .int({ error: '每分钟请求数上限须为整数' })
      .min(1, { error: '每分钟请求数上限至少为 1' })
      .max(API_KEY_RPM_MAX, { error: `每分钟请求数上限最多 ${API_KEY_RPM_MAX}` }),
  )
    .nullable()
    .describe('每分钟请求数上限，null 为不限'),
  tpmLimit: numeric(
    z
      .number({ error: '每分钟 Token 数上限须为整数' })
      .int({ error: '每分钟 Token 数上限须为整数' })
      .min(1, { error: '每分钟 Token 数上限至少为 1' })
      .max(API_KEY_TPM_MAX, { error: `每分钟 Token 数上限最多 ${API_KEY_TPM_MAX}` }),
  )
    .nullable()
    .describe('每分钟 Token 数上限，null 为不限'),
};

export const apiKeyCreateRequestSchema = z.object({
  name: keyNameSchema,
  expiresAt: keySettings.expiresAt.default(null),
  spendLimit: keySettings.spendLimit.default(null),
  allowedModels: keySettings.allowedModels.default([]),
  allowedIps: keySettings.allowedIps.default([]),
  rpmLimit: keySettings.rpmLimit.default(null),
  tpmLimit: keySettings.tpmLimit.default(null),
});
export type ApiKeyCreateRequest = z.infer<typeof apiKeyCreateRequestSchema>;

export const apiKeyUpdateRequestSchema = z.object({
  name: keyNameSchema.optional(),
  enabled: z.boolean({ error: 'enabled 须为 true 或 false' }).optional(),
  expiresAt: keySettings.expiresAt.optional(),
  spendLimit: keySettings.spendLimit.optional(),
  allowedModels: keySettings.allowedModels.optional(),
  allowedIps: keySettings.allowedIps.optional(),
  rpmLimit: keySettings.rpmLimit.optional(),
  tpmLimit: keySettings.tpmLimit.optional(),
});
export type ApiKeyUpdateRequest = z.infer<typeof apiKeyUpdateRequestSchema>;

/** A key as the list shows it: never the secret, only its visible prefix. */
export const apiKeySchema = z.object({
  id: z.string(),
  name: z.string(),
  /** `sk-abcd…wxyz`: enough to tell keys apart. */
  maskedKey: z.string(),
  enabled: z.boolean(),
  /** Past its expiry: refused like a disabled key. */
  expired: z.boolean(),
  expiresAt: z.string().nullable(),
  spendLimit: moneySchema.nullable(),
  /** Spent through this key so far, in 0.0001 yuan. */
  spent: moneySchema,
  allowedModels: z.array(z.string()),
  allowedIps: z.array(z.string()),
  rpmLimit: z.number().int().nullable(),
  tpmLimit: z.number().int().nullable(),
  lastUsedAt: z.string().nullable(),
  createdAt: z.string(),
});
export type ApiKey = z.infer<typeof apiKeySchema>;

/** The answer to creating a key: the only time the secret is shown. */
export const apiKeyCreatedSchema = apiKeySchema.extend({ secret: z.string().describe('完整密钥，仅此一次显示，请立即复制保存') });
export type ApiKeyCreated = z.infer<typeof apiKeyCreatedSchema>;

export const apiKeyListQuerySchema = pagingQuerySchema;
export const apiKeyPageSchema = pageOf(apiKeySchema).extend({ limit: z.number().int().describe('每个账号最多可有的密钥数') });
export type ApiKeyPage = z.infer<typeof apiKeyPageSchema>;
export const apiKeyIdParamsSchema = z.object({ id: z.uuid({ error: '密钥编号格式不正确' }) });

// ---------------------------------------------------------------------------------------------
// Usage: stats, the call log, the model bill of a day

/** A Beijing calendar day, `YYYY-MM-DD`. */
const daySchema = z.iso.date({ error: '日期格式不正确（YYYY-MM-DD）' });
/** The longest range the stats page asks for at once. */
export const MODEL_STATS_MAX_DAYS = 92;

/** GET /api/v1/model/stats: from and to are Beijing days, both included (default the last 7 days). */
export const modelStatsQuerySchema = z
  .object({
    from: daySchema.optional(),
    to: daySchema.optional(),
    /** Only this model / this key ("playground" for the online experience). */
    model: modelIdSchema.optional(),
    keyId: z.union([z.uuid({ error: '密钥编号格式不正确' }), z.literal('playground')]).optional(),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { error: '开始日期不能晚于结束日期', path: ['from'] })
  .refine((q) => !q.from || !q.to || (Date.parse(q.to) - Date.parse(q.from)) / 86400_000 < MODEL_STATS_MAX_DAYS, {
    error: `一次最多查询 ${MODEL_STATS_MAX_DAYS} 天`,
    path: ['to'],
  });
export type ModelStatsQuery = z.infer<typeof modelStatsQuerySchema>;

/** Usage summed over some calls. `packageTokens` are the tokens 大模型 Token 包 paid for; `cost` is cash. */
export const modelUsageSumSchema = z.object({
  requests: z.number().int(),
  /** Calls that ended in an upstream error (not charged). */
  failed: z.number().int(),
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  packageTokens: z.number().int(),
  cost: moneySchema,
});
export type ModelUsageSum = z.infer<typeof modelUsageSumSchema>;

export const modelStatsSchema = z.object({
  from: z.string(),
  to: z.string(),
  total: modelUsageSumSchema,
  /** Every day of the range, in order, zeros included. */
  days: z.array(modelUsageSumSchema.extend({ date: z.string() })),
  /** Per model, most cost first. */
  models: z.array(modelUsageSumSchema.extend({ model: z.string() })),
  /** Per key, most cost first; the online experience is keyId "playground". */
  keys: z.array(modelUsageSumSchema.extend({ keyId: z.string(), keyName: z.string() })),
});
export type ModelStats = z.infer<typeof modelStatsSchema>;

export const MODEL_CALL_STATUSES = ['open', 'ok', 'aborted', 'error', 'expired'] as const;
export const MODEL_CALL_STATUS_LABELS: Record<(typeof MODEL_CALL_STATUSES)[number], string> = {
  open: '进行中',
  ok: '成功',
  aborted: '客户端中断',
  error: '失败',
  expired: '未完成（已退回）',
};

/** One gateway call as the call log and the model bill show it. */
export const modelCallSchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  model: z.string(),
  keyId: z.string(),
  keyName: z.string(),
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  /** Of the tokens, how many a 大模型 Token 包 paid for. */
  packageTokens: z.number().int(),
  /** Cash charged, 0.0001 yuan. */
  cost: moneySchema,
  latencyMs: z.number().int(),
  status: z.enum(MODEL_CALL_STATUSES),
  error: z.string().nullable(),
});
export type ModelCall = z.infer<typeof modelCallSchema>;

/** GET /api/v1/model/calls: one Beijing day (the model bill of that day) or the last calls. */
export const modelCallListQuerySchema = pagingQuerySchema.extend({
  date: daySchema.optional(),
  model: modelIdSchema.optional(),
  keyId: z.union([z.uuid({ error: '密钥编号格式不正确' }), z.literal('playground')]).optional(),
});
export const modelCallPageSchema = pageOf(modelCallSchema).extend({
  /** The sums of every call the filter matches (not only this page). */
  sums: modelUsageSumSchema,
  /** Calls older than this many days are deleted (their hourly sums stay in the stats). */
  retentionDays: z.number().int(),
});
export type ModelCallPage = z.infer<typeof modelCallPageSchema>;

/** The model bill of a day is `/console/cost/bill/model-details/YYYYMMDD`; an order number there is a Token 包 order. */
export const MODEL_DAY_BILL_ID = /^(\d{4})(\d{2})(\d{2})$/;

// ---------------------------------------------------------------------------------------------
// The online experience's conversations (kept per user)

export const CONVERSATION_LIMIT = 100;
export const CONVERSATION_MESSAGES_MAX = 200;

export const conversationMessageSchema = z.object({
  role: z.enum(['user', 'assistant'], { error: '消息角色只能是 user 或 assistant' }),
  content: z.string().max(32_000, { error: '单条消息最多 32000 个字' }),
  /** Answers only: what the answer used and cost. */
  usage: z
    .object({
      promptTokens: z.number().int().min(0),
      completionTokens: z.number().int().min(0),
      cost: moneySchema,
    })
    .optional(),
});
export type ConversationMessage = z.infer<typeof conversationMessageSchema>;

export const conversationSettingsSchema = z.object({
  model: modelIdSchema,
  system: z.string().max(8_000, { error: '系统提示词最多 8000 个字' }).default(''),
  temperature: z.number({ error: '温度须为数字' }).min(0, { error: '温度须在 0 到 2 之间' }).max(2, { error: '温度须在 0 到 2 之间' }).default(0.7),
  maxTokens: z
    .number({ error: '最大输出 Token 须为整数' })
    .int({ error: '最大输出 Token 须为整数' })
    .min(1, { error: '最大输出 Token 至少为 1' })
    .max(32_768, { error: '最大输出 Token 最多 32768' })
    .default(1024),
});

/** PUT /api/v1/model/conversations/:id (the id is made by the page): saves the whole conversation. */
export const conversationSaveRequestSchema = conversationSettingsSchema.extend({
  title: z.string().trim().min(1, { error: '请输入会话标题' }).max(50, { error: '会话标题最多 50 个字' }),
  messages: z.array(conversationMessageSchema).max(CONVERSATION_MESSAGES_MAX, { error: `一个会话最多 ${CONVERSATION_MESSAGES_MAX} 条消息，请新建会话` }),
});
export type ConversationSaveRequest = z.infer<typeof conversationSaveRequestSchema>;

export const conversationSchema = conversationSaveRequestSchema.extend({ id: z.string(), updatedAt: z.string() });
export type Conversation = z.infer<typeof conversationSchema>;
export const conversationSummarySchema = z.object({
  id: z.string(),
  title: z.string(),
  model: z.string(),
  messageCount: z.number().int(),
  updatedAt: z.string(),
});
export const conversationListSchema = z.object({ list: z.array(conversationSummarySchema) });
export type ConversationSummary = z.infer<typeof conversationSummarySchema>;
export const conversationIdParamsSchema = z.object({ id: z.uuid({ error: '会话编号格式不正确' }) });
