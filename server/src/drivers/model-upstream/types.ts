/**
 * Model upstreams: where the model service's calls are answered. Every upstream speaks the OpenAI
 * wire format (contract/src/schemas/openai.ts): the embedded n-gram model (embedded.ts) and any
 * OpenAI-compatible endpoint over HTTP (http.ts). The router (router.ts) picks one per call.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Completion,
  CompletionChunk,
  CompletionRequest,
  EmbeddingRequest,
  EmbeddingResponse,
  OpenAIErrorBody,
  OpenAIModel,
  OpenAIUsage,
} from '@console/contract';

/**
 * A streamed answer: chunks in OpenAI's chunk shape, as they are produced. When the request asked for
 * `stream_options.include_usage` the last chunk has no choices and the usage. Breaking out of the
 * loop (or `close()`) stops the upstream at once; what was produced stays readable.
 */
export interface UpstreamStream<T> extends AsyncIterable<T> {
  readonly stream: true;
  /**
   * The usage so far. The embedded model counts exactly what it produced (also after an abort); an
   * HTTP upstream gives its own usage once its final chunk arrived, null before.
   */
  usageSoFar(): OpenAIUsage | null;
  /** The text delivered so far (content deltas joined): what to count with the tokenizer when the upstream gave no usage. */
  textSoFar(): string;
  /** Stops reading and releases the upstream (the same as leaving a for-await loop). */
  close(): Promise<void>;
}

export type ChatResult = ChatCompletion | UpstreamStream<ChatCompletionChunk>;
export type CompletionResult = Completion | UpstreamStream<CompletionChunk>;

export function isUpstreamStream<T>(result: object): result is UpstreamStream<T> {
  return (result as { stream?: unknown }).stream === true;
}

export interface ModelUpstream {
  /** `embedded` or `http`, for logs. */
  readonly kind: string;
  /** A streamed answer when `req.stream` is true, else the whole response. Rejects with an UpstreamError. */
  chat(req: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatResult>;
  /** Legacy `/v1/completions`. */
  completion(req: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult>;
  embeddings(req: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResponse>;
  models(signal?: AbortSignal): Promise<OpenAIModel[]>;
}

/**
 * - `http`: the upstream answered with an error status (kept in `status`, its error body in `body`);
 * - `connect`: no connection, or it broke before the first byte;
 * - `timeout`: nothing arrived within the connect / first-byte timeout;
 * - `protocol`: the upstream answered something that is not the OpenAI format;
 * - `interrupted`: the stream broke after chunks were delivered (never retried: the client has bytes);
 * - `aborted`: the caller's AbortSignal fired;
 * - `unavailable`: no channel serves the model.
 */
export type UpstreamErrorKind = 'http' | 'connect' | 'timeout' | 'protocol' | 'interrupted' | 'aborted' | 'unavailable';

/** One try of one channel, for logs. */
export interface AttemptRecord {
  channelId: string;
  ok: boolean;
  ms: number;
  error?: UpstreamError;
}

export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind;
  /** The upstream's HTTP status, or the status the failure stands for (502 protocol, 503 connect, 504 timeout). */
  readonly status: number;
  /** 429, 5xx and failures before the first byte: another channel may answer. 4xx and aborts: no. */
  readonly retryable: boolean;
  /** The upstream's error body when it sent one in OpenAI's shape. */
  readonly body?: OpenAIErrorBody;
  /** From the upstream's Retry-After header. */
  readonly retryAfterMs?: number;
  /** Set by the router: the channel that answered with this error, and every try of the call. */
  channelId?: string;
  attempts?: AttemptRecord[];

  constructor(
    kind: UpstreamErrorKind,
    message: string,
    opts: { status?: number; retryable?: boolean; body?: OpenAIErrorBody; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.status = opts.status ?? DEFAULT_STATUS[kind];
    this.retryable = opts.retryable ?? (kind === 'http' ? isRetryableStatus(this.status) : RETRYABLE_KINDS.has(kind));
    if (opts.body !== undefined) this.body = opts.body;
    if (opts.retryAfterMs !== undefined) this.retryAfterMs = opts.retryAfterMs;
  }
}

const DEFAULT_STATUS: Record<UpstreamErrorKind, number> = {
  http: 502,
  connect: 503,
  timeout: 504,
  protocol: 502,
  interrupted: 502,
  aborted: 499,
  unavailable: 404,
};
const RETRYABLE_KINDS = new Set<UpstreamErrorKind>(['connect', 'timeout', 'protocol']);

/** 429 and every 5xx may succeed elsewhere or later; any other 4xx is the request's fault. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** An error of the request itself, in OpenAI's words (e.g. an unknown model, a prompt too long). */
export function invalidRequest(status: number, message: string, code: string, param: string | null = null): UpstreamError {
  return new UpstreamError('http', message, {
    status,
    retryable: false,
    body: { error: { message, type: 'invalid_request_error', param, code } },
  });
}

export function abortedError(): UpstreamError {
  return new UpstreamError('aborted', '请求已被取消', { retryable: false });
}

/** Waits `ms` or until the signal fires (then rejects with an aborted UpstreamError). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Wraps an async generator as an UpstreamStream. `progress` reads the producer's counters, so the
 * usage stays readable after the consumer stopped.
 */
export class GeneratorStream<T> implements UpstreamStream<T> {
  readonly stream = true as const;
  private iterated = false;
  constructor(
    private readonly gen: AsyncGenerator<T, void, undefined>,
    private readonly progress: { usage(): OpenAIUsage | null; text(): string },
    /** Runs first on close(), e.g. to abort a request the generator is waiting on. */
    private readonly onClose?: () => void,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterated) throw new Error('an upstream stream can be read once');
    this.iterated = true;
    return this.gen;
  }
  usageSoFar() {
    return this.progress.usage();
  }
  textSoFar() {
    return this.progress.text();
  }
  async close() {
    this.onClose?.();
    await this.gen.return(undefined);
  }
}
