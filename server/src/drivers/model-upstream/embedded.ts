/**
 * The embedded upstream: the n-gram model of ngram.ts behind the OpenAI wire format, offline. Answers
 * stream at a set pace (tokens per second) like a real model, with exact usage: prompt tokens are the
 * chat template's (tokens.ts), completion tokens the tokens produced — also when the caller stops
 * early (`usageSoFar()` of the stream). Several model names can map onto it.
 */
import { randomBytes, randomInt } from 'node:crypto';
import {
  COMPLETION_DEFAULT_MAX_TOKENS,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type Completion,
  type CompletionChunk,
  type CompletionRequest,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type FinishReason,
  type OpenAIModel,
  type OpenAIUsage,
} from '@console/contract';
import { corpusModel, type NgramModel } from './ngram.js';
import { chatPromptTokens, decode, encode, messageText } from './tokens.js';
import {
  GeneratorStream,
  abortedError,
  invalidRequest,
  sleep,
  type ChatResult,
  type CompletionResult,
  type ModelUpstream,
  type UpstreamStream,
} from './types.js';

export interface EmbeddedModelSpec {
  id: string;
  /** `chat` models answer chat and completions; `embedding` models answer embeddings. */
  type?: 'chat' | 'embedding';
  ownedBy?: string;
  /** Prompt plus answer, in tokens (default 8192). */
  contextLength?: number;
}

/** Time as the pacing sees it; tests pass a fake one. */
export interface Pacer {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realPacer: Pacer = { now: () => performance.now(), sleep };

export interface EmbeddedUpstreamOptions {
  models: ReadonlyArray<string | EmbeddedModelSpec>;
  /** Output pace (default 40 tokens/s); `Infinity` produces as fast as it can. */
  tokensPerSecond?: number;
  pacer?: Pacer;
  /** A chat answer's length limit when the request gives no max_tokens (default 1024). */
  defaultMaxTokens?: number;
  /** Embedding size when the request gives no `dimensions` (default 256). */
  embeddingDimensions?: number;
  /** The trained model (default: the one trained on corpus/*.txt). */
  model?: NgramModel;
}

/** Fixed so the model list is the same on every start (2025-01-01). */
const CREATED = 1_735_689_600;

export class EmbeddedUpstream implements ModelUpstream {
  readonly kind = 'embedded';
  private readonly specs = new Map<string, Required<EmbeddedModelSpec>>();
  private readonly interval: number;
  private readonly pacer: Pacer;
  private readonly defaultMaxTokens: number;
  private readonly dimensions: number;
  private ngram: NgramModel | undefined;

  constructor(options: EmbeddedUpstreamOptions) {
    for (const entry of options.models) {
      const spec = typeof entry === 'string' ? { id: entry } : entry;
      this.specs.set(spec.id, { type: 'chat', ownedBy: 'console', contextLength: 8192, ...spec });
    }
    const rate = options.tokensPerSecond ?? 40;
    if (!(rate > 0)) throw new Error('tokensPerSecond must be positive');
    this.interval = Number.isFinite(rate) ? 1000 / rate : 0;
    this.pacer = options.pacer ?? realPacer;
    this.defaultMaxTokens = options.defaultMaxTokens ?? 1024;
    this.dimensions = options.embeddingDimensions ?? 256;
    this.ngram = options.model;
  }

  /** Trains the model now rather than on the first call. */
  warm(): void {
    this.model();
  }

  async models(): Promise<OpenAIModel[]> {
    return [...this.specs.values()].map((s) => ({ id: s.id, object: 'model' as const, created: CREATED, owned_by: s.ownedBy }));
  }

  async chat(req: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatResult> {
    const spec = this.spec(req.model, 'chat');
    if (signal?.aborted) throw abortedError();
    const promptTokens = chatPromptTokens(req.messages);
    // The answer is about the last thing the user said (or the last message with text).
    const asked =
      [...req.messages].reverse().find((m) => m.role === 'user' && messageText(m).trim()) ?? [...req.messages].reverse().find((m) => messageText(m).trim());
    const run = this.run(spec, 'chat', promptTokens, asked ? encode(messageText(asked)) : [], req.max_completion_tokens ?? req.max_tokens, req, 'messages');
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    if (!req.stream) {
      let content = '';
      for await (const piece of run.pieces(signal)) content += piece;
      const response: ChatCompletion = {
        id,
        object: 'chat.completion',
        created,
        model: req.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: run.finish, logprobs: null }],
        usage: run.usage(),
      };
      return response;
    }
    const includeUsage = req.stream_options?.include_usage === true;
    const usageField = includeUsage ? { usage: null } : {};
    const model = req.model;
    async function* chunks(): AsyncGenerator<ChatCompletionChunk, void, undefined> {
      const base = { id, object: 'chat.completion.chunk' as const, created, model };
      yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }], ...usageField };
      for await (const piece of run.pieces(signal)) {
        yield { ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null, logprobs: null }], ...usageField };
      }
      yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: run.finish, logprobs: null }], ...usageField };
      if (includeUsage) yield { ...base, choices: [], usage: run.usage() };
    }
    return new GeneratorStream(chunks(), { usage: () => run.usage(), text: () => run.text });
  }

  async completion(req: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    const spec = this.spec(req.model, 'chat');
    if (signal?.aborted) throw abortedError();
    const prompt = promptTokens(req.prompt);
    const run = this.run(spec, 'completion', prompt.length, prompt, req.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS, req, 'prompt');
    const id = `cmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    if (!req.stream) {
      let text = '';
      for await (const piece of run.pieces(signal)) text += piece;
      const response: Completion = {
        id,
        object: 'text_completion',
        created,
        model: req.model,
        choices: [{ index: 0, text, finish_reason: run.finish, logprobs: null }],
        usage: run.usage(),
      };
      return response;
    }
    const includeUsage = req.stream_options?.include_usage === true;
    const usageField = includeUsage ? { usage: null } : {};
    const model = req.model;
    async function* chunks(): AsyncGenerator<CompletionChunk, void, undefined> {
      const base = { id, object: 'text_completion' as const, created, model };
      for await (const piece of run.pieces(signal)) {
        yield { ...base, choices: [{ index: 0, text: piece, finish_reason: null, logprobs: null }], ...usageField };
      }
      yield { ...base, choices: [{ index: 0, text: '', finish_reason: run.finish, logprobs: null }], ...usageField };
      if (includeUsage) yield { ...base, choices: [], usage: run.usage() };
    }
    const stream: UpstreamStream<CompletionChunk> = new GeneratorStream(chunks(), { usage: () => run.usage(), text: () => run.text });
    return stream;
  }

  async embeddings(req: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResponse> {
    const spec = this.spec(req.model, 'embedding');
    if (signal?.aborted) throw abortedError();
    const inputs = embeddingInputs(req.input);
    const dims = req.dimensions ?? this.dimensions;
    let tokens = 0;
    const data = inputs.map((input, index) => {
      const ids = typeof input === 'string' ? encode(input) : input;
      tokens += ids.length;
      if (ids.length > spec.contextLength) {
        throw invalidRequest(
          400,
          `第 ${index + 1} 条输入有 ${ids.length} 个词元，超过模型上限 ${spec.contextLength}，请缩短后重试`,
          'context_length_exceeded',
          'input',
        );
      }
      const vector = embedTokens(ids, dims);
      const embedding = req.encoding_format === 'base64' ? Buffer.from(Float32Array.from(vector).buffer).toString('base64') : Array.from(vector);
      return { object: 'embedding' as const, index, embedding };
    });
    return { object: 'list', data, model: req.model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }

  private model(): NgramModel {
    return (this.ngram ??= corpusModel());
  }

  private spec(model: string, type: 'chat' | 'embedding'): Required<EmbeddedModelSpec> {
    const spec = this.specs.get(model);
    if (!spec) throw invalidRequest(404, `模型 ${model} 不存在，请在模型广场查看可用的模型名称`, 'model_not_found', 'model');
    if (spec.type !== type) {
      const what = type === 'chat' ? '对话和文本补全' : '向量嵌入';
      throw invalidRequest(400, `模型 ${model} 不支持${what}，请换用${type === 'chat' ? '对话' : '嵌入'}模型`, 'model_not_supported', 'model');
    }
    return spec;
  }

  private run(
    spec: Required<EmbeddedModelSpec>,
    mode: 'chat' | 'completion',
    promptTokens: number,
    context: number[],
    maxTokens: number | null | undefined,
    req: { temperature?: number | null; top_p?: number | null; stop?: string | string[] | null; seed?: number | null },
    promptParam: string,
  ): Run {
    const room = spec.contextLength - promptTokens;
    if (room <= 0) {
      throw invalidRequest(
        400,
        `提示有 ${promptTokens} 个词元，超过模型上下文上限 ${spec.contextLength}，请缩短后重试`,
        'context_length_exceeded',
        promptParam,
      );
    }
    if (maxTokens != null && maxTokens > room) {
      throw invalidRequest(
        400,
        `提示 ${promptTokens} 个词元加 max_tokens ${maxTokens} 超过模型上下文上限 ${spec.contextLength}，请把 max_tokens 调到 ${room} 以内`,
        'context_length_exceeded',
        'max_tokens',
      );
    }
    const stops = (typeof req.stop === 'string' ? [req.stop] : (req.stop ?? [])).filter((s) => s.length > 0);
    const tokens = this.model().generate({
      mode,
      context,
      seed: req.seed ?? randomInt(0, 2 ** 47),
      temperature: req.temperature ?? 1,
      topP: req.top_p ?? 1,
    });
    return new Run(tokens, promptTokens, maxTokens ?? Math.min(this.defaultMaxTokens, room), stops, this.interval, this.pacer);
  }
}

/**
 * One answer being produced: pulls tokens at the pace, cuts at max_tokens or a stop sequence, and
 * releases text as soon as it cannot be the start of a stop sequence.
 */
class Run {
  produced = 0;
  text = '';
  finish: FinishReason = 'stop';

  constructor(
    private readonly tokens: Generator<{ token: number; text: string }, 'stop', void>,
    private readonly promptTokens: number,
    private readonly maxTokens: number,
    private readonly stops: string[],
    private readonly interval: number,
    private readonly pacer: Pacer,
  ) {}

  usage(): OpenAIUsage {
    return { prompt_tokens: this.promptTokens, completion_tokens: this.produced, total_tokens: this.promptTokens + this.produced };
  }

  async *pieces(signal?: AbortSignal): AsyncGenerator<string, void, undefined> {
    const start = this.pacer.now();
    let pending = '';
    for (;;) {
      if (this.produced >= this.maxTokens) {
        this.finish = 'length';
        break;
      }
      if (signal?.aborted) throw abortedError();
      if (this.interval > 0) {
        const wait = start + this.produced * this.interval - this.pacer.now();
        if (wait > 0) await this.pacer.sleep(wait, signal);
      }
      const next = this.tokens.next();
      if (next.done) {
        this.finish = 'stop';
        break;
      }
      this.produced++;
      pending += next.value.text;
      if (this.stops.length > 0) {
        const hit = firstStop(pending, this.stops);
        if (hit >= 0) {
          pending = pending.slice(0, hit);
          this.finish = 'stop';
          break;
        }
        const hold = heldBack(pending, this.stops);
        const ready = pending.slice(0, pending.length - hold);
        pending = pending.slice(pending.length - hold);
        if (ready) {
          this.text += ready;
          yield ready;
        }
      } else {
        this.text += pending;
        yield pending;
        pending = '';
      }
    }
    if (pending) {
      this.text += pending;
      yield pending;
    }
  }
}

/** Where the earliest stop sequence begins, -1 when none does. */
function firstStop(text: string, stops: readonly string[]): number {
  let at = -1;
  for (const stop of stops) {
    const i = text.indexOf(stop);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at;
}

/** The length of the longest end of `text` that begins some stop sequence (held back until it is decided). */
function heldBack(text: string, stops: readonly string[]): number {
  let hold = 0;
  for (const stop of stops) {
    for (let n = Math.min(stop.length - 1, text.length); n > hold; n--) {
      if (text.endsWith(stop.slice(0, n))) {
        hold = n;
        break;
      }
    }
  }
  return hold;
}

function promptTokens(prompt: CompletionRequest['prompt']): number[] {
  if (typeof prompt === 'string') return encode(prompt);
  if (prompt.length === 0) return [];
  if (prompt.length > 1 && (typeof prompt[0] === 'string' || Array.isArray(prompt[0]))) {
    throw invalidRequest(400, '每次请求只支持一个 prompt，请分多次请求', 'invalid_value', 'prompt');
  }
  const first = prompt[0]!;
  if (typeof first === 'string') return encode(first);
  if (Array.isArray(first)) return checkTokenIds(first, 'prompt');
  return checkTokenIds(prompt as number[], 'prompt');
}

function embeddingInputs(input: EmbeddingRequest['input']): Array<string | number[]> {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [checkTokenIds(input as number[], 'input')];
  return (input as Array<string | number[]>).map((item) => (typeof item === 'string' ? item : checkTokenIds(item, 'input')));
}

/** Token ids must be o200k_base tokens. */
function checkTokenIds(ids: number[], param: string): number[] {
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= 199_998) {
      throw invalidRequest(400, `${param} 中的词元 ID ${id} 不是 o200k_base 的词元，请传文本或有效的词元 ID`, 'invalid_value', param);
    }
  }
  return ids;
}

/**
 * A deterministic embedding: the text's words (o200k tokens, lower-cased, without their leading
 * space), word pairs and Chinese characters, each hashed to a dimension with a sign, then scaled to
 * length 1. Texts that share words point the same way, so their cosine similarity is higher.
 */
export function embedTokens(tokens: readonly number[], dims: number): Float64Array {
  const vector = new Float64Array(dims);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    vector[h % dims]! += h & 0x80000000 ? -weight : weight;
  };
  let previous = '';
  for (const token of tokens) {
    const word = decode([token]).trim().toLowerCase();
    if (!word) continue;
    const wordy = /[\p{L}\p{N}]/u.test(word);
    add(`w:${word}`, wordy ? 1 : 0.3);
    if (previous) add(`b:${previous}\u0001${word}`, 0.7);
    for (const ch of word) if (/\p{Script=Han}/u.test(ch) && word.length > 1) add(`c:${ch}`, 0.5);
    previous = word;
  }
  let norm = 0;
  for (const x of vector) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < dims; i++) vector[i]! /= norm;
  return vector;
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32), so neighbouring strings land far apart.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
