/**
 * An OpenAI-compatible endpoint over HTTP(S) (node:http with a keep-alive agent per upstream): any
 * base URL with a key. The request is on the wire before the call returns to the event loop, so
 * background work queued meanwhile cannot hold it up. Streams are read as server-sent events and
 * handed on chunk by chunk, with the usage asked for (`stream_options.include_usage`) whether or not
 * the caller wants it sent on. The caller's AbortSignal, leaving the loop or `close()` end the
 * upstream request at once.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import {
  chatCompletionChunkSchema,
  chatCompletionSchema,
  completionChunkSchema,
  completionSchema,
  embeddingResponseSchema,
  openAIModelListSchema,
  type ChatCompletionRequest,
  type CompletionRequest,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type OpenAIErrorBody,
  type OpenAIModel,
  type OpenAIUsage,
} from '@console/contract';
import type { z } from 'zod';
import { sseData } from './sse.js';
import { GeneratorStream, UpstreamError, abortedError, type ChatResult, type CompletionResult, type ModelUpstream } from './types.js';

export interface HttpUpstreamOptions {
  /** Up to and including the version, e.g. `https://api.example.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Until the response headers and, for a stream, its first event (default 30 s). Past it: a retryable timeout. */
  firstByteTimeoutMs?: number;
  /** A whole non-streamed answer (default 300 s): the upstream sends nothing before it has finished. */
  responseTimeoutMs?: number;
}

interface Pending {
  res: IncomingMessage;
  /** The first byte arrived: the first-byte timeout is over. */
  firstByte(): void;
  /** Done with the request: no timeout, the caller's signal forgotten. */
  finish(): void;
  /** Ends the upstream request now (closes the connection if it is still open). */
  abort(): void;
  timedOut(): boolean;
}

export class HttpUpstream implements ModelUpstream {
  readonly kind = 'http';
  private readonly base: string;
  private readonly agent: HttpAgent;
  private readonly firstByteTimeoutMs: number;
  private readonly responseTimeoutMs: number;

  constructor(private readonly options: HttpUpstreamOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    // Idle connections are kept for the next call and do not keep the process alive.
    const agentOptions = { keepAlive: true, maxSockets: 1024, maxFreeSockets: 256 };
    this.agent = this.base.startsWith('https:') ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.firstByteTimeoutMs = options.firstByteTimeoutMs ?? 30_000;
    this.responseTimeoutMs = options.responseTimeoutMs ?? 300_000;
  }

  async models(signal?: AbortSignal): Promise<OpenAIModel[]> {
    const list = await this.json('GET', '/models', undefined, openAIModelListSchema, signal);
    return list.data;
  }

  async embeddings(req: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResponse> {
    return this.json('POST', '/embeddings', req, embeddingResponseSchema, signal);
  }

  async chat(req: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatResult> {
    if (!req.stream) return this.json('POST', '/chat/completions', req, chatCompletionSchema, signal);
    return this.stream('/chat/completions', req, chatCompletionChunkSchema, signal, (chunk) => chunk.choices.map((c) => c.delta.content ?? '').join(''));
  }

  async completion(req: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    if (!req.stream) return this.json('POST', '/completions', req, completionSchema, signal);
    return this.stream('/completions', req, completionChunkSchema, signal, (chunk) => chunk.choices.map((c) => c.text).join(''));
  }

  private async json<S extends z.ZodType>(method: string, path: string, body: unknown, schema: S, signal?: AbortSignal): Promise<z.infer<S>> {
    const pending = await this.send(method, path, body, signal, this.responseTimeoutMs, false);
    let text: string;
    try {
      text = await readText(pending.res);
    } catch (err) {
      throw readFailure(err, signal, pending);
    } finally {
      pending.finish();
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      throw new UpstreamError('protocol', `上游返回的内容不是 JSON（${path}）`, { cause: err });
    }
    const parsed = schema.safeParse(data);
    if (!parsed.success) throw new UpstreamError('protocol', `上游返回的内容不是 OpenAI 格式（${path}）`, { cause: parsed.error });
    return parsed.data;
  }

  private async stream<S extends z.ZodType<{ choices: unknown[]; usage?: OpenAIUsage | null }>>(
    path: string,
    req: { stream_options?: { include_usage?: boolean } | null },
    schema: S,
    signal: AbortSignal | undefined,
    textOf: (chunk: z.infer<S>) => string,
  ) {
    const wantsUsage = req.stream_options?.include_usage === true;
    const body = { ...req, stream: true, stream_options: { ...req.stream_options, include_usage: true } };
    const pending = await this.send('POST', path, body, signal, this.firstByteTimeoutMs, true);
    if (!(pending.res.headers['content-type'] ?? '').includes('text/event-stream')) {
      // An upstream that cannot stream answers whole: another channel may do better.
      pending.abort();
      throw new UpstreamError('protocol', '上游没有按流式（text/event-stream）返回');
    }
    const answer = pending.res;
    let usage: OpenAIUsage | null = null;
    let text = '';
    // Read to its [DONE]: the connection is kept for the next call (closing the stream after it must not break it).
    let finished = false;
    async function* chunks(): AsyncGenerator<z.infer<S>, void, undefined> {
      let delivered = 0;
      try {
        for await (const data of sseData(answer)) {
          if (delivered === 0) pending.firstByte();
          if (data === '[DONE]') {
            finished = true;
            return;
          }
          const chunk = parseChunk(data, schema, delivered);
          if (chunk.usage) usage = chunk.usage;
          if (!wantsUsage) {
            if (chunk.choices.length === 0) continue; // the usage-only chunk the caller did not ask for
            delete chunk.usage;
          }
          text += textOf(chunk);
          delivered++;
          yield chunk;
        }
        // Ended without [DONE]: complete enough once chunks came (some upstreams never send it), broken when none did.
        if (delivered === 0) throw new UpstreamError('protocol', '上游的流式响应没有任何数据就结束了');
        finished = true;
      } catch (err) {
        if (err instanceof UpstreamError) throw err;
        throw readFailure(err, signal, pending, delivered);
      } finally {
        if (finished) keepConnection(answer, pending);
        else pending.abort();
      }
    }
    return new GeneratorStream(chunks(), { usage: () => usage, text: () => text }, () => {
      if (!finished) pending.abort();
    });
  }

  /** Sends the request; rejects unless the upstream answered 2xx. The timeout runs until `firstByte()` or `finish()`. */
  private async send(method: string, path: string, body: unknown, signal: AbortSignal | undefined, timeoutMs: number, stream: boolean): Promise<Pending> {
    if (signal?.aborted) throw abortedError();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
      accept: stream ? 'text/event-stream' : 'application/json',
      ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      ...this.options.headers,
    };
    const url = new URL(this.base + path);
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, headers, agent: this.agent });
    let timedOut = false;
    let res: IncomingMessage | undefined;
    const end = () => {
      if (res) res.destroy();
      req.destroy();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      end();
    }, timeoutMs);
    signal?.addEventListener('abort', end, { once: true });
    const pending: Omit<Pending, 'res'> = {
      firstByte: () => clearTimeout(timer),
      finish: () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', end);
      },
      abort: () => {
        pending.finish();
        end();
      },
      timedOut: () => timedOut,
    };
    try {
      res = await new Promise<IncomingMessage>((resolve, reject) => {
        req.once('response', resolve);
        req.once('error', reject);
        req.end(payload);
      });
    } catch (err) {
      pending.finish();
      if (signal?.aborted) throw abortedError();
      if (timedOut) throw new UpstreamError('timeout', `上游 ${timeoutMs} ms 内没有响应`, { cause: err });
      throw new UpstreamError('connect', `无法连接上游（${errorCode(err)}）`, { cause: err });
    }
    // An error after the answer began is seen by whoever reads the body (as a failed read).
    req.on('error', () => {});
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return { ...pending, res };
    let text = '';
    try {
      text = await readText(res);
    } catch {
      // the status says enough
    } finally {
      pending.finish();
    }
    if (signal?.aborted) throw abortedError();
    throw statusError(status, res.headers['retry-after'], text);
  }
}

/**
 * After `[DONE]` only the body's last bytes (the chunked ending) may be on their way: read them to
 * the end, so that the connection goes back to the agent for the next call instead of a new one
 * being opened. An upstream that never ends its body after `[DONE]` loses the connection.
 */
function keepConnection(res: IncomingMessage, pending: Pending) {
  pending.finish();
  if (res.readableEnded) return;
  const giveUp = setTimeout(() => res.destroy(), KEEP_CONNECTION_MS).unref();
  const done = () => clearTimeout(giveUp);
  res
    .once('end', done)
    .once('close', done)
    .on('error', () => {});
  res.resume();
}

/** How long the body's ending may take after `[DONE]` before the connection is closed instead. */
const KEEP_CONNECTION_MS = 5_000;

/** A whole body as text; rejects when the connection breaks before its end. */
async function readText(res: IncomingMessage): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const part of res as AsyncIterable<Buffer>) text += decoder.decode(part, { stream: true });
  if (!res.complete) throw new Error('ECONNRESET');
  return text + decoder.decode();
}

function parseChunk<S extends z.ZodType>(data: string, schema: S, delivered: number): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (err) {
    throw new UpstreamError(delivered === 0 ? 'protocol' : 'interrupted', '上游发送了无法解析的流式数据', { cause: err });
  }
  const error = (json as { error?: unknown } | null)?.error;
  if (error) {
    const body = errorBody(error, '上游在流式响应中报错');
    // An error event before anything was delivered may be answered elsewhere; after, the client already has bytes.
    throw new UpstreamError(delivered === 0 ? 'http' : 'interrupted', body.error.message, { status: 502, retryable: delivered === 0, body });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new UpstreamError(delivered === 0 ? 'protocol' : 'interrupted', '上游的流式数据不是 OpenAI 格式', { cause: parsed.error });
  return parsed.data;
}

/** A failure while reading a body: the caller's abort, the timeout, or the connection breaking. */
function readFailure(err: unknown, signal: AbortSignal | undefined, pending: Pending, delivered = 0): UpstreamError {
  if (signal?.aborted) return abortedError();
  if (delivered > 0) return new UpstreamError('interrupted', `上游连接中断（${errorCode(err)}）`, { cause: err });
  if (pending.timedOut()) return new UpstreamError('timeout', '上游响应超时', { cause: err });
  return new UpstreamError('connect', `上游连接中断（${errorCode(err)}）`, { cause: err });
}

function statusError(status: number, retryAfter: string | undefined, text: string): UpstreamError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const raw = (json as { error?: unknown } | undefined)?.error ?? json;
  const body = errorBody(raw, text.trim().slice(0, 300) || `上游返回 HTTP ${status}`);
  const retryAfterMs = parseRetryAfter(retryAfter ?? null);
  return new UpstreamError('http', body.error.message, { status, body, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
}

/** Whatever the upstream called its error, in OpenAI's shape. */
function errorBody(raw: unknown, fallback: string): OpenAIErrorBody {
  if (typeof raw === 'string') return { error: { message: raw, type: 'upstream_error', param: null, code: null } };
  const e = (raw ?? {}) as { message?: unknown; type?: unknown; param?: unknown; code?: unknown };
  return {
    error: {
      message: typeof e.message === 'string' && e.message ? e.message : fallback,
      type: typeof e.type === 'string' ? e.type : 'upstream_error',
      param: typeof e.param === 'string' ? e.param : null,
      code: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : null,
    },
  };
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function errorCode(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return err instanceof Error ? err.message : String(err);
}
