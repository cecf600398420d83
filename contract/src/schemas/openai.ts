/**
 * The OpenAI wire format of the model service (`/v1`): what the official `openai` clients send and
 * what they expect back. Requests are loose objects: fields this file does not name (tools,
 * response_format, penalties …) pass through to an upstream that understands them. Only n = 1.
 * Field names are OpenAI's (snake_case) so the clients work unchanged.
 */
import { z } from 'zod';

export const OPENAI_ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;
export type OpenAIRole = (typeof OPENAI_ROLES)[number];

/** A part of a multi-part message; only `text` parts carry text the embedded model reads. */
export const chatContentPartSchema = z.looseObject({
  type: z.string({ error: 'content 的每一段需要 type，例如 "text"' }),
  text: z.string().optional(),
});
export type ChatContentPart = z.infer<typeof chatContentPartSchema>;

export const chatMessageSchema = z.looseObject({
  role: z.enum(OPENAI_ROLES, { error: 'role 只能是 system、developer、user、assistant 或 tool' }),
  content: z.union([z.string(), z.array(chatContentPartSchema)], { error: 'content 必须是字符串或内容段数组' }).nullish(),
  name: z.string().optional(),
});
export type ChatMessage = z.infer<typeof chatMessageSchema>;

const temperatureSchema = z
  .number({ error: 'temperature 必须是 0 到 2 之间的数字' })
  .min(0, { error: 'temperature 不能小于 0' })
  .max(2, { error: 'temperature 不能大于 2' });
const topPSchema = z.number({ error: 'top_p 必须是 0 到 1 之间的数字' }).min(0, { error: 'top_p 不能小于 0' }).max(1, { error: 'top_p 不能大于 1' });
const maxTokensSchema = z.number({ error: 'max_tokens 必须是正整数' }).int({ error: 'max_tokens 必须是正整数' }).min(1, { error: 'max_tokens 至少为 1' });
/** Up to four stop sequences, as OpenAI allows. */
const stopSchema = z.union([z.string(), z.array(z.string()).max(4, { error: 'stop 最多 4 个' })], { error: 'stop 必须是字符串或最多 4 个字符串的数组' });
const streamOptionsSchema = z.looseObject({ include_usage: z.boolean({ error: 'stream_options.include_usage 必须是布尔值' }).optional() });
/** Several choices per request are not offered: ask again for another answer. */
const nSchema = z.literal(1, { error: '只支持 n=1：需要多个回答请分多次请求' });
const seedSchema = z.number({ error: 'seed 必须是整数' }).int({ error: 'seed 必须是整数' });

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string({ error: '请填写 model（模型名称）' }).min(1, { error: '请填写 model（模型名称）' }),
  messages: z.array(chatMessageSchema, { error: 'messages 必须是消息数组' }).min(1, { error: 'messages 至少需要一条消息' }),
  temperature: temperatureSchema.nullish(),
  top_p: topPSchema.nullish(),
  /** Deprecated by OpenAI in favour of max_completion_tokens; both are read, the latter wins. */
  max_tokens: maxTokensSchema.nullish(),
  max_completion_tokens: maxTokensSchema.nullish(),
  stop: stopSchema.nullish(),
  stream: z.boolean({ error: 'stream 必须是布尔值' }).nullish(),
  stream_options: streamOptionsSchema.nullish(),
  n: nSchema.nullish(),
  seed: seedSchema.nullish(),
  user: z.string().nullish(),
});
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;

/** Legacy `/v1/completions`: a prompt to continue. OpenAI's default max_tokens there is 16. */
export const completionRequestSchema = z.looseObject({
  model: z.string({ error: '请填写 model（模型名称）' }).min(1, { error: '请填写 model（模型名称）' }),
  prompt: z.union([z.string(), z.array(z.string()), z.array(z.number().int()), z.array(z.array(z.number().int()))], {
    error: 'prompt 必须是字符串、字符串数组或词元 ID 数组',
  }),
  temperature: temperatureSchema.nullish(),
  top_p: topPSchema.nullish(),
  max_tokens: maxTokensSchema.nullish(),
  stop: stopSchema.nullish(),
  stream: z.boolean({ error: 'stream 必须是布尔值' }).nullish(),
  stream_options: streamOptionsSchema.nullish(),
  n: nSchema.nullish(),
  seed: seedSchema.nullish(),
  user: z.string().nullish(),
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;
export const COMPLETION_DEFAULT_MAX_TOKENS = 16;

export const embeddingRequestSchema = z.looseObject({
  model: z.string({ error: '请填写 model（模型名称）' }).min(1, { error: '请填写 model（模型名称）' }),
  input: z.union(
    [
      z.string(),
      z.array(z.string()).min(1, { error: 'input 不能是空数组' }),
      z.array(z.number().int()).min(1, { error: 'input 不能是空数组' }),
      z.array(z.array(z.number().int())).min(1, { error: 'input 不能是空数组' }),
    ],
    { error: 'input 必须是字符串、字符串数组或词元 ID 数组' },
  ),
  /** The openai npm client asks for base64 unless told otherwise, and decodes it. */
  encoding_format: z.enum(['float', 'base64'], { error: 'encoding_format 只能是 float 或 base64' }).nullish(),
  dimensions: z
    .number({ error: 'dimensions 必须是正整数' })
    .int({ error: 'dimensions 必须是正整数' })
    .min(1)
    .max(4096, { error: 'dimensions 最大 4096' })
    .nullish(),
  user: z.string().nullish(),
});
export type EmbeddingRequest = z.infer<typeof embeddingRequestSchema>;

export const openAIUsageSchema = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type OpenAIUsage = z.infer<typeof openAIUsageSchema>;

export const FINISH_REASONS = ['stop', 'length', 'content_filter', 'tool_calls', 'function_call'] as const;
const finishReasonSchema = z.enum(FINISH_REASONS).nullable();
export type FinishReason = (typeof FINISH_REASONS)[number];

export const chatCompletionSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable() }),
      finish_reason: finishReasonSchema,
      logprobs: z.unknown().optional(),
    }),
  ),
  usage: openAIUsageSchema.optional(),
});
export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

/** One server-sent event of a streamed chat completion; the last one (if asked) has no choices and the usage. */
export const chatCompletionChunkSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      delta: z.looseObject({ role: z.literal('assistant').optional(), content: z.string().nullish() }),
      finish_reason: finishReasonSchema.optional(),
      logprobs: z.unknown().optional(),
    }),
  ),
  usage: openAIUsageSchema.nullish(),
});
export type ChatCompletionChunk = z.infer<typeof chatCompletionChunkSchema>;

const completionChoiceSchema = z.looseObject({
  index: z.number().int(),
  text: z.string(),
  finish_reason: finishReasonSchema.optional(),
  logprobs: z.unknown().optional(),
});

export const completionSchema = z.looseObject({
  id: z.string(),
  object: z.literal('text_completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(completionChoiceSchema),
  usage: openAIUsageSchema.optional(),
});
export type Completion = z.infer<typeof completionSchema>;

/** Streamed legacy completions reuse `object: "text_completion"` for every chunk. */
export const completionChunkSchema = completionSchema.extend({ usage: openAIUsageSchema.nullish() });
export type CompletionChunk = z.infer<typeof completionChunkSchema>;

export const embeddingResponseSchema = z.looseObject({
  object: z.literal('list'),
  data: z.array(
    z.looseObject({
      object: z.literal('embedding'),
      index: z.number().int(),
      /** Numbers, or little-endian float32 bytes in base64 when encoding_format is base64. */
      embedding: z.union([z.array(z.number()), z.string()]),
    }),
  ),
  model: z.string(),
  usage: z.looseObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
});
export type EmbeddingResponse = z.infer<typeof embeddingResponseSchema>;

export const openAIModelSchema = z.looseObject({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});
export type OpenAIModel = z.infer<typeof openAIModelSchema>;

export const openAIModelListSchema = z.looseObject({ object: z.literal('list'), data: z.array(openAIModelSchema) });
export type OpenAIModelList = z.infer<typeof openAIModelListSchema>;

/** OpenAI's error body; the gateway answers every failure under /v1 in this shape, never the console envelope. */
export const openAIErrorBodySchema = z.object({
  error: z.looseObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable().optional(),
    code: z.union([z.string(), z.number()]).nullable().optional(),
  }),
});
export type OpenAIErrorBody = z.infer<typeof openAIErrorBodySchema>;
