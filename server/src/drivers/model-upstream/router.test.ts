import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, EmbeddingResponse, OpenAIModel } from '@console/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { HttpUpstream } from './http.js';
import { ChannelRouter, type Channel } from './router.js';
import { GeneratorStream, UpstreamError, isUpstreamStream, type ChatResult, type ModelUpstream, type UpstreamStream } from './types.js';

/** An upstream whose every chat call does what `behave` says; `calls` lists the models it was asked for. */
class FakeUpstream implements ModelUpstream {
  readonly kind = 'fake';
  calls: string[] = [];
  constructor(
    readonly name: string,
    public behave: (req: ChatCompletionRequest) => Promise<ChatResult> | ChatResult = (req) => reply(name, req.model),
  ) {}
  async chat(req: ChatCompletionRequest): Promise<ChatResult> {
    this.calls.push(req.model);
    return this.behave(req);
  }
  async completion(): Promise<never> {
    throw new Error('not used');
  }
  async embeddings(req: { model: string }): Promise<EmbeddingResponse> {
    this.calls.push(req.model);
    return { object: 'list', data: [], model: req.model, usage: { prompt_tokens: 0, total_tokens: 0 } };
  }
  async models(): Promise<OpenAIModel[]> {
    return [];
  }
}

function reply(content: string, model: string): ChatCompletion {
  return { id: 'x', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] };
}

/** A stream of the given pieces; `failAt` throws that error instead of the piece at that index. */
function streamOf(pieces: string[], failAt?: { index: number; error: UpstreamError }): UpstreamStream<ChatCompletionChunk> {
  async function* gen(): AsyncGenerator<ChatCompletionChunk, void, undefined> {
    for (const [i, content] of pieces.entries()) {
      if (failAt?.index === i) throw failAt.error;
      yield { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta: { content }, finish_reason: null }] };
    }
  }
  return new GeneratorStream(gen(), { usage: () => null, text: () => '' });
}

const http = (status: number, retryAfterMs?: number) => new UpstreamError('http', `upstream ${status}`, { status, ...(retryAfterMs ? { retryAfterMs } : {}) });
const ask = (model = 'chat-model', extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const channel = (id: string, upstream: ModelUpstream, extra: Partial<Channel> = {}): Channel => ({
  id,
  upstream,
  models: ['chat-model'],
  priority: 0,
  weight: 1,
  enabled: true,
  ...extra,
});
const contentOf = (result: ChatResult) => (result as ChatCompletion).choices[0]!.message.content;

/** A seeded random, so the weight test is repeatable. */
function seeded(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('channel router', () => {
  it('sends every call to the highest priority, and shares a priority by weight (3:1)', async () => {
    const a = new FakeUpstream('a');
    const b = new FakeUpstream('b');
    const low = new FakeUpstream('low');
    const router = new ChannelRouter(
      [channel('a', a, { priority: 10, weight: 3 }), channel('b', b, { priority: 10, weight: 1 }), channel('low', low, { priority: 1, weight: 100 })],
      {
        random: seeded(7),
      },
    );
    const counts: Record<string, number> = { a: 0, b: 0, low: 0 };
    for (let i = 0; i < 4000; i++) {
      const routed = await router.chat(ask());
      counts[routed.channelId]!++;
      expect(contentOf(routed.result)).toBe(routed.channelId);
    }
    expect(counts.low).toBe(0);
    expect(counts.a! / 4000).toBeGreaterThan(0.72);
    expect(counts.a! / 4000).toBeLessThan(0.78);
    expect(
      router
        .plan('chat-model')
        .map((c) => c.id)
        .at(-1),
    ).toBe('low');
  });

  it('retries a 429, a 5xx or a refused connection on the next channel, and cools the failing one down', async () => {
    for (const error of [http(429), http(500), http(503), new UpstreamError('connect', 'ECONNREFUSED'), new UpstreamError('timeout', 'slow')]) {
      const clock = new ManualClock();
      const first = new FakeUpstream('first', () => Promise.reject(error));
      const second = new FakeUpstream('second');
      const router = new ChannelRouter([channel('first', first, { priority: 2 }), channel('second', second, { priority: 1 })], { clock });
      const routed = await router.chat(ask());
      expect(routed.channelId).toBe('second');
      expect(contentOf(routed.result)).toBe('second');
      expect(routed.attempts.map((t) => [t.channelId, t.ok])).toEqual([
        ['first', false],
        ['second', true],
      ]);
      expect(routed.attempts[0]!.error).toBe(error);
      expect(router.channelHealth()[0]).toMatchObject({ id: 'first', failures: 1, coolingUntil: new Date(clock.now().getTime() + 30_000) });
    }
  });

  it('does not retry a 4xx: the request itself is wrong, and the channel stays healthy', async () => {
    const first = new FakeUpstream('first', () => Promise.reject(http(400)));
    const second = new FakeUpstream('second');
    const router = new ChannelRouter([channel('first', first, { priority: 2 }), channel('second', second, { priority: 1 })]);
    const err = (await router.chat(ask()).catch((e: unknown) => e)) as UpstreamError;
    expect(err).toMatchObject({ status: 400, retryable: false, channelId: 'first' });
    expect(err.attempts).toHaveLength(1);
    expect(second.calls).toEqual([]);
    expect(router.channelHealth()[0]!.coolingUntil).toBeNull();
  });

  it('retries a stream that fails before its first chunk, never one that failed after it', async () => {
    const clock = new ManualClock();
    const flaky = new FakeUpstream('flaky', () => streamOf(['x'], { index: 0, error: http(502) }));
    const steady = new FakeUpstream('steady', () => streamOf(['o', 'k']));
    const router = new ChannelRouter([channel('flaky', flaky, { priority: 2 }), channel('steady', steady, { priority: 1 })], { clock });
    const routed = await router.chat(ask('chat-model', { stream: true }));
    expect(routed.channelId).toBe('steady');
    const text: string[] = [];
    for await (const c of routed.result as UpstreamStream<ChatCompletionChunk>) text.push(c.choices[0]!.delta.content!);
    expect(text).toEqual(['o', 'k']);

    // After the first chunk reached the caller a failure is the caller's, on the channel that sent it.
    const breaks = new FakeUpstream('breaks', () => streamOf(['a', 'b', 'c'], { index: 1, error: new UpstreamError('interrupted', 'connection reset') }));
    const spare = new FakeUpstream('spare');
    const router2 = new ChannelRouter([channel('breaks', breaks, { priority: 2 }), channel('spare', spare, { priority: 1 })], { clock });
    const routed2 = await router2.chat(ask('chat-model', { stream: true }));
    expect(routed2.channelId).toBe('breaks');
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of routed2.result as UpstreamStream<ChatCompletionChunk>) got.push(c.choices[0]!.delta.content!);
      })(),
    ).rejects.toMatchObject({ kind: 'interrupted', retryable: false });
    expect(got).toEqual(['a']);
    expect(spare.calls).toEqual([]);
    expect(router2.channelHealth()[0]!.failures).toBe(1); // and it cools down for next time
  });

  it('cools a failing channel down (30 s, doubling), probes it back in after, and forgets on success', async () => {
    const clock = new ManualClock();
    let broken = true;
    const main = new FakeUpstream('main', (req) => (broken ? Promise.reject(http(503)) : reply('main', req.model)));
    const backup = new FakeUpstream('backup');
    const router = new ChannelRouter([channel('main', main, { priority: 2 }), channel('backup', backup, { priority: 1 })], { clock });
    const call = async () => (await router.chat(ask())).channelId;

    expect(await call()).toBe('backup'); // main failed once → 30 s
    expect(main.calls).toHaveLength(1);
    clock.advance(29_000);
    expect(await call()).toBe('backup');
    expect(main.calls).toHaveLength(1); // not even tried while cooling
    clock.advance(1_000);
    expect(await call()).toBe('backup'); // tried again after 30 s, failed again → 60 s
    expect(main.calls).toHaveLength(2);
    expect(router.channelHealth()[0]).toMatchObject({ failures: 2, coolingUntil: new Date(clock.now().getTime() + 60_000) });
    clock.advance(59_999);
    expect(await call()).toBe('backup');
    expect(main.calls).toHaveLength(2);
    broken = false;
    clock.advance(1);
    expect(await call()).toBe('main'); // back by itself, nobody re-enabled it
    expect(router.channelHealth()[0]).toMatchObject({ failures: 0, coolingUntil: null });
    expect(await call()).toBe('main');

    // The doubling stops at 10 minutes.
    broken = true;
    for (let i = 0; i < 12; i++) {
      await call();
      clock.advance(router.channelHealth()[0]!.coolingUntil!.getTime() - clock.now().getTime());
    }
    await call();
    expect(router.channelHealth()[0]!.coolingUntil!.getTime() - clock.now().getTime()).toBe(600_000);
  });

  it('keeps a Retry-After longer than the backoff, and still tries a cooling channel when it is the only one', async () => {
    const clock = new ManualClock();
    let fail = true;
    const only = new FakeUpstream('only', (req) => (fail ? Promise.reject(http(429, 120_000)) : reply('only', req.model)));
    const router = new ChannelRouter([channel('only', only)], { clock });
    await expect(router.chat(ask())).rejects.toMatchObject({ status: 429 });
    expect(router.channelHealth()[0]!.coolingUntil).toEqual(new Date(clock.now().getTime() + 120_000));
    fail = false;
    expect((await router.chat(ask())).channelId).toBe('only');
    expect(only.calls).toHaveLength(2);
  });

  it('renames mapped models both ways, skips disabled channels, and refuses a model nobody serves', async () => {
    const mapped = new FakeUpstream('mapped', () => streamOf(['hi']));
    const off = new FakeUpstream('off');
    const router = new ChannelRouter([
      channel('mapped', mapped, { models: ['public-name', 'embed-public'], modelMap: { 'public-name': 'vendor-name-v2', 'embed-public': 'vendor-embed' } }),
      channel('off', off, { models: ['public-name', 'other'], priority: 9, enabled: false }),
    ]);
    const routed = await router.chat(ask('public-name', { stream: true }));
    expect(mapped.calls).toEqual(['vendor-name-v2']);
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of routed.result as UpstreamStream<ChatCompletionChunk>) chunks.push(c);
    expect(chunks.map((c) => c.model)).toEqual(['public-name']);
    expect((await router.embeddings({ model: 'embed-public', input: 'x' })).result.model).toBe('embed-public');
    expect(mapped.calls.at(-1)).toBe('vendor-embed');
    expect(off.calls).toEqual([]);
    expect(router.modelNames()).toEqual(['embed-public', 'public-name']);
    await expect(router.chat(ask('other'))).rejects.toMatchObject({
      kind: 'unavailable',
      status: 404,
      retryable: false,
      body: { error: { code: 'model_not_found' } },
    });
  });

  it('stops retrying when the caller aborts', async () => {
    const controller = new AbortController();
    const first = new FakeUpstream('first', () => {
      controller.abort();
      return Promise.reject(new UpstreamError('aborted', 'cancelled', { retryable: false }));
    });
    const second = new FakeUpstream('second');
    const router = new ChannelRouter([channel('first', first, { priority: 2 }), channel('second', second)]);
    await expect(router.chat(ask(), controller.signal)).rejects.toMatchObject({ kind: 'aborted' });
    expect(second.calls).toEqual([]);
    expect(router.channelHealth()[0]!.failures).toBe(0);
  });
});

describe('channel router over HTTP upstreams', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
  });
  async function upstreamAnswering(status: number, content: string) {
    let hits = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits++;
        res.writeHead(status, { 'content-type': status === 200 ? 'text/event-stream' : 'application/json' });
        if (status !== 200) return res.end(JSON.stringify({ error: { message: `busy ${status}`, type: 'x' } }));
        res.write(
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`,
        );
        res.end('data: [DONE]\n\n');
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { upstream: new HttpUpstream({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }), hits: () => hits };
  }

  it('answers from the second upstream when the first says 429, before any byte reached the client', async () => {
    const busy = await upstreamAnswering(429, 'never');
    const fine = await upstreamAnswering(200, '好的');
    const router = new ChannelRouter([channel('busy', busy.upstream, { priority: 2 }), channel('fine', fine.upstream, { priority: 1 })]);
    const routed = await router.chat(ask('chat-model', { stream: true }));
    expect(routed.channelId).toBe('fine');
    expect(isUpstreamStream(routed.result)).toBe(true);
    let text = '';
    for await (const c of routed.result as UpstreamStream<ChatCompletionChunk>) text += c.choices[0]!.delta.content;
    expect(text).toBe('好的');
    expect([busy.hits(), fine.hits()]).toEqual([1, 1]);
    expect(routed.attempts[0]!.error).toMatchObject({ status: 429, retryable: true });
  });
});
