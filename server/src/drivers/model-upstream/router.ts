/**
 * Channel routing: which upstream answers a call for a model.
 *
 * - The channels serving the model (enabled, model in their list) are tried highest priority first;
 *   inside one priority the order is weighted random (weight 3 against 1 goes first three times in
 *   four). A retry takes the next channel of that order: the rest of the same priority, then the
 *   next priority. Channels cooling down come last, the soonest back first, so a call still has a
 *   channel to try when all of them are cooling.
 * - Only a retryable failure (429, 5xx, no connection, timeout) is retried, and only before the
 *   first byte could reach the client: a stream's first chunk is read here before the call
 *   resolves, and a failure after it is the caller's.
 * - A channel that fails so cools down: 30 s, doubling with each failure in a row up to 10 min (or
 *   the upstream's Retry-After when longer). When its time is up it is tried again like any other
 *   (never disabled for good); one success ends the cooldown.
 * - A channel's model mapping renames the model on the way up and back, so the client sees the name
 *   it asked for (an unmapped model's answer keeps the name the upstream gave, as OpenAI's dated names).
 */
import type { ChatCompletionRequest, CompletionRequest, EmbeddingRequest, EmbeddingResponse } from '@console/contract';
import { systemClock, type Clock } from '../../clock.js';
import {
  UpstreamError,
  abortedError,
  isUpstreamStream,
  type AttemptRecord,
  type ChatResult,
  type CompletionResult,
  type ModelUpstream,
  type UpstreamStream,
} from './types.js';

export interface Channel {
  id: string;
  upstream: ModelUpstream;
  /** The model names (as clients ask for them) this channel serves. */
  models: readonly string[];
  /** Client name → the upstream's name, for models the upstream calls differently. */
  modelMap?: Readonly<Record<string, string>>;
  /** Higher is tried first. */
  priority: number;
  /** Share inside its priority (relative; 0 only when the others of its priority fail). */
  weight: number;
  enabled: boolean;
}

export interface ChannelRouterOptions {
  /** In [0, 1); tests fix it. */
  random?: () => number;
  clock?: Clock;
  /** First cooldown (default 30 s); each further failure in a row doubles it. */
  cooldownMs?: number;
  /** Longest cooldown (default 10 min). */
  maxCooldownMs?: number;
  /** Channels tried for one call (default 3). */
  maxAttempts?: number;
}

/** A routed call: the channel that answered (for the call's log row), every try, and the answer. */
export interface Routed<T> {
  channelId: string;
  attempts: AttemptRecord[];
  result: T;
}

export interface ChannelHealth {
  id: string;
  /** Whether calls may be routed to it (the operator may have disabled it, or its process lacks its key). */
  enabled: boolean;
  /** Failures in a row. */
  failures: number;
  /** Until when it is tried only after the others, null when it is not cooling down. */
  coolingUntil: Date | null;
  lastError: string | null;
}

interface Health {
  failures: number;
  until: number;
  lastError: string | null;
}

export class ChannelRouter {
  private channels: Channel[] = [];
  private readonly health = new Map<string, Health>();
  private readonly random: () => number;
  private readonly clock: Clock;
  private readonly cooldownMs: number;
  private readonly maxCooldownMs: number;
  private readonly maxAttempts: number;

  constructor(channels: readonly Channel[], options: ChannelRouterOptions = {}) {
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? systemClock;
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.maxCooldownMs = options.maxCooldownMs ?? 600_000;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.setChannels(channels);
  }

  /** Replaces the channel list (the operator edited it); a channel keeping its id keeps its cooldown. */
  setChannels(channels: readonly Channel[]): void {
    const ids = new Set<string>();
    for (const c of channels) {
      if (ids.has(c.id)) throw new Error(`duplicate channel id ${c.id}`);
      ids.add(c.id);
    }
    this.channels = [...channels];
    for (const id of this.health.keys()) if (!ids.has(id)) this.health.delete(id);
  }

  /** Every model name some enabled channel serves. */
  modelNames(): string[] {
    return [...new Set(this.channels.filter((c) => c.enabled).flatMap((c) => c.models))].sort();
  }

  /** Read-only: each channel's failures in a row and cooldown as this process sees them (the operator area shows it). */
  channelHealth(): ChannelHealth[] {
    const now = this.clock.now().getTime();
    return this.channels.map((c) => {
      const h = this.health.get(c.id);
      return {
        id: c.id,
        enabled: c.enabled,
        failures: h?.failures ?? 0,
        coolingUntil: h && h.until > now ? new Date(h.until) : null,
        lastError: h?.lastError ?? null,
      };
    });
  }

  /** The channels a call for this model would try, in order (the order is random inside a priority). */
  plan(model: string): Channel[] {
    const now = this.clock.now().getTime();
    const serving = this.channels.filter((c) => c.enabled && c.models.includes(model));
    const ready = serving.filter((c) => !this.cooling(c.id, now));
    const cooling = serving.filter((c) => this.cooling(c.id, now)).sort((a, b) => this.health.get(a.id)!.until - this.health.get(b.id)!.until);
    const priorities = [...new Set(ready.map((c) => c.priority))].sort((a, b) => b - a);
    const order = priorities.flatMap((p) => this.weightedOrder(ready.filter((c) => c.priority === p)));
    return [...order, ...cooling];
  }

  async chat(req: ChatCompletionRequest, signal?: AbortSignal): Promise<Routed<ChatResult>> {
    return this.route(req.model, signal, async (channel) => {
      const upstreamModel = channel.modelMap?.[req.model] ?? req.model;
      if (upstreamModel === req.model) return channel.upstream.chat(req, signal);
      return this.renamed(await channel.upstream.chat({ ...req, model: upstreamModel }, signal), req.model);
    });
  }

  async completion(req: CompletionRequest, signal?: AbortSignal): Promise<Routed<CompletionResult>> {
    return this.route(req.model, signal, async (channel) => {
      const upstreamModel = channel.modelMap?.[req.model] ?? req.model;
      if (upstreamModel === req.model) return channel.upstream.completion(req, signal);
      return this.renamed(await channel.upstream.completion({ ...req, model: upstreamModel }, signal), req.model);
    });
  }

  async embeddings(req: EmbeddingRequest, signal?: AbortSignal): Promise<Routed<EmbeddingResponse>> {
    return this.route(req.model, signal, async (channel) => {
      const upstreamModel = channel.modelMap?.[req.model] ?? req.model;
      if (upstreamModel === req.model) return channel.upstream.embeddings(req, signal);
      const result = await channel.upstream.embeddings({ ...req, model: upstreamModel }, signal);
      result.model = req.model;
      return result;
    });
  }

  private async route<T extends object>(model: string, signal: AbortSignal | undefined, call: (channel: Channel) => Promise<T>): Promise<Routed<T>> {
    const plan = this.plan(model).slice(0, this.maxAttempts);
    if (plan.length === 0) {
      throw new UpstreamError('unavailable', `没有可用的渠道提供模型 ${model}，请在模型广场查看可用的模型`, {
        status: 404,
        retryable: false,
        body: {
          error: {
            message: `没有可用的渠道提供模型 ${model}，请在模型广场查看可用的模型`,
            type: 'invalid_request_error',
            param: 'model',
            code: 'model_not_found',
          },
        },
      });
    }
    const attempts: AttemptRecord[] = [];
    let lastError: UpstreamError | undefined;
    for (const channel of plan) {
      if (signal?.aborted) break;
      const started = this.clock.now().getTime();
      try {
        let result: T = await call(channel);
        // A stream counts as answered once its first chunk arrived: until then another channel may still answer.
        if (isUpstreamStream(result)) result = (await this.firstChunkRead(result as UpstreamStream<unknown>, channel.id)) as T;
        this.succeeded(channel.id);
        attempts.push({ channelId: channel.id, ok: true, ms: this.clock.now().getTime() - started });
        return { channelId: channel.id, attempts, result };
      } catch (err) {
        const error = asUpstreamError(err);
        error.channelId = channel.id;
        attempts.push({ channelId: channel.id, ok: false, ms: this.clock.now().getTime() - started, error });
        lastError = error;
        if (error.kind === 'aborted') break;
        if (error.retryable) this.failed(channel.id, error);
        else break;
      }
    }
    const error = signal?.aborted ? abortedError() : lastError!;
    error.attempts = attempts;
    throw error;
  }

  /** Reads the stream's first chunk (failures here may be retried), then hands on a stream that starts with it. */
  private async firstChunkRead<C>(stream: UpstreamStream<C>, channelId: string): Promise<UpstreamStream<C>> {
    const iterator = stream[Symbol.asyncIterator]();
    let first: IteratorResult<C, unknown>;
    try {
      first = await iterator.next();
    } catch (err) {
      await stream.close().catch(() => {});
      throw err;
    }
    const interrupted = (error: UpstreamError) => this.failed(channelId, error);
    async function* rest(): AsyncGenerator<C, void, undefined> {
      try {
        if (first.done) return;
        yield first.value;
        for (;;) {
          const next = await iterator.next();
          if (next.done) return;
          yield next.value;
        }
      } catch (err) {
        const error = asUpstreamError(err);
        // A stream that broke after its first chunk is the channel's fault too (but never retried).
        if (error.kind === 'interrupted') interrupted(error);
        throw error;
      } finally {
        await iterator.return?.();
      }
    }
    const gen = rest();
    return {
      stream: true,
      [Symbol.asyncIterator]: () => gen,
      usageSoFar: () => stream.usageSoFar(),
      textSoFar: () => stream.textSoFar(),
      close: async () => {
        await stream.close();
        await gen.return(undefined);
      },
    };
  }

  /** The answer under the model name the client asked for. */
  private renamed<R extends ChatResult | CompletionResult>(result: R, model: string): R {
    if (!isUpstreamStream(result)) {
      (result as { model: string }).model = model;
      return result;
    }
    const stream = result as UpstreamStream<{ model: string }>;
    async function* renaming(): AsyncGenerator<{ model: string }, void, undefined> {
      for await (const chunk of stream) {
        chunk.model = model;
        yield chunk;
      }
    }
    const gen = renaming();
    const renamedStream: UpstreamStream<{ model: string }> = {
      stream: true,
      [Symbol.asyncIterator]: () => gen,
      usageSoFar: () => stream.usageSoFar(),
      textSoFar: () => stream.textSoFar(),
      close: async () => {
        await stream.close();
        await gen.return(undefined);
      },
    };
    return renamedStream as unknown as R;
  }

  private weightedOrder(channels: Channel[]): Channel[] {
    const left = [...channels];
    const order: Channel[] = [];
    while (left.length > 0) {
      const total = left.reduce((sum, c) => sum + Math.max(0, c.weight), 0);
      let index = 0;
      if (total > 0) {
        let r = this.random() * total;
        index = left.findIndex((c) => (r -= Math.max(0, c.weight)) < 0);
        if (index < 0) index = left.length - 1;
      }
      order.push(left.splice(index, 1)[0]!);
    }
    return order;
  }

  private cooling(id: string, now: number): boolean {
    const h = this.health.get(id);
    return h !== undefined && h.until > now;
  }

  private failed(id: string, error: UpstreamError) {
    if (!this.channels.some((c) => c.id === id)) return;
    const h = this.health.get(id) ?? { failures: 0, until: 0, lastError: null };
    h.failures++;
    const backoff = Math.min(this.cooldownMs * 2 ** Math.min(h.failures - 1, 30), this.maxCooldownMs);
    const wait = Math.min(Math.max(backoff, error.retryAfterMs ?? 0), this.maxCooldownMs);
    h.until = this.clock.now().getTime() + wait;
    h.lastError = error.status ? `${error.status} ${error.message}` : error.message;
    this.health.set(id, h);
  }

  private succeeded(id: string) {
    this.health.delete(id);
  }
}

function asUpstreamError(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  // A driver bug is not the request's fault, but retrying it elsewhere would hide it: answered as a 502.
  return new UpstreamError('protocol', err instanceof Error ? err.message : String(err), { retryable: false, cause: err });
}
