import { createServer, type Agent, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, Completion, CompletionChunk } from '@console/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EmbeddedUpstream } from './embedded.js';
import { HttpUpstream } from './http.js';
import { answerFromUpstream } from './serve.js';
import { UpstreamError, isUpstreamStream, type ModelUpstream, type UpstreamStream } from './types.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: any) => void | Promise<void>;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A local OpenAI-compatible server on a free port; `seen` records every request. */
async function fakeServer(handler: Handler) {
  const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: any }[] = [];
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const part of req) raw += part;
    const body = raw ? JSON.parse(raw) : undefined;
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    await handler(req, res, body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

const sse = (res: ServerResponse, data: unknown) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
const chunk = (content: string) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'up-model',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});
const usageChunk = {
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'up-model',
  choices: [],
  usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
};
const ask = (extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'up-model',
  messages: [{ role: 'user', content: '你好' }],
  ...extra,
});

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('HTTP upstream', () => {
  it('passes a stream on chunk by chunk: the first chunk is here before the server sends the last', async () => {
    const release = deferred();
    let sentLast = false;
    const { url, seen } = await fakeServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, { ...chunk(''), choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
      sse(res, chunk('你'));
      await release.promise;
      sentLast = true;
      sse(res, chunk('好'));
      sse(res, { ...chunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      sse(res, usageChunk);
      sse(res, '[DONE]');
      res.end();
    });
    const upstream = new HttpUpstream({ baseUrl: url, apiKey: 'sk-channel' });
    const stream = (await upstream.chat(ask({ stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    expect(isUpstreamStream(stream)).toBe(true);
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value!.choices[0]!.delta.role).toBe('assistant');
    expect((await iterator.next()).value!.choices[0]!.delta.content).toBe('你');
    expect(sentLast).toBe(false);
    release.resolve();
    const rest: ChatCompletionChunk[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.map((c) => c.choices[0]?.delta.content ?? '')).toEqual(['好', '']);
    // Usage was asked for upstream though the caller did not want it sent: kept, not passed on.
    expect(seen[0]!.body).toMatchObject({ model: 'up-model', stream: true, stream_options: { include_usage: true } });
    expect(seen[0]!.headers.authorization).toBe('Bearer sk-channel');
    expect(seen[0]!.url).toBe('/v1/chat/completions');
    expect(rest.every((c) => c.usage === undefined)).toBe(true);
    expect(stream.usageSoFar()).toEqual(usageChunk.usage);
    expect(stream.textSoFar()).toBe('你好');
  });

  it('passes the usage chunk on when the caller asked for it, and answers whole responses too', async () => {
    const { url } = await fakeServer((_req, res, body) => {
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // One write holding several events and one event split over two writes.
        res.write(
          `data: ${JSON.stringify(chunk('a'))}\n\ndata: ${JSON.stringify(chunk('b'))}\r\n\r\n: keep-alive\n\ndata: ${JSON.stringify(chunk('c')).slice(0, 20)}`,
        );
        setTimeout(() => {
          res.write(`${JSON.stringify(chunk('c')).slice(20)}\n\n`);
          sse(res, usageChunk);
          sse(res, '[DONE]');
          res.end();
        }, 20);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'up-model',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: usageChunk.usage,
          system_fingerprint: 'fp_1',
        }),
      );
    });
    const upstream = new HttpUpstream({ baseUrl: `${url}/` });
    const stream = (await upstream.chat(ask({ stream: true, stream_options: { include_usage: true } }))) as UpstreamStream<ChatCompletionChunk>;
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content)).toEqual(['a', 'b', 'c', undefined]);
    expect(chunks.at(-1)!.usage).toEqual(usageChunk.usage);

    const whole = (await upstream.chat(ask())) as ChatCompletion;
    expect(whole.choices[0]!.message.content).toBe('hi');
    expect(whole.usage).toEqual(usageChunk.usage);
    expect(whole.system_fingerprint).toBe('fp_1'); // fields this side does not know pass through
  });

  it('classifies failures: 429 and 5xx retryable with the status kept, 400 not, refused connections retryable', async () => {
    const { url } = await fakeServer((_req, res, body) => {
      const status = Number(body.model.slice(1));
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '2' } : {}) });
      res.end(JSON.stringify({ error: { message: `upstream says ${status}`, type: 'x', param: status === 400 ? 'temperature' : null, code: 'c' } }));
    });
    const upstream = new HttpUpstream({ baseUrl: url });
    for (const stream of [false, true]) {
      const failure = async (model: string) => {
        const err = await upstream.chat(ask({ model, stream })).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UpstreamError);
        return err as UpstreamError;
      };
      expect(await failure('s429')).toMatchObject({ kind: 'http', status: 429, retryable: true, retryAfterMs: 2000, message: 'upstream says 429' });
      expect(await failure('s500')).toMatchObject({ status: 500, retryable: true });
      expect(await failure('s503')).toMatchObject({ status: 503, retryable: true });
      expect(await failure('s400')).toMatchObject({ status: 400, retryable: false, body: { error: { message: 'upstream says 400', param: 'temperature' } } });
      expect(await failure('s404')).toMatchObject({ status: 404, retryable: false });
    }

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = new HttpUpstream({ baseUrl: `http://127.0.0.1:${port}/v1` });
    await expect(refused.chat(ask({ stream: true }))).rejects.toMatchObject({ kind: 'connect', retryable: true, status: 503 });
    await expect(refused.embeddings({ model: 'e', input: 'x' })).rejects.toMatchObject({ kind: 'connect', retryable: true });
  });

  it('times out before the first byte (retryable); a stream broken after chunks is not retryable', async () => {
    const { url } = await fakeServer((_req, res, body) => {
      if (body.model === 'silent') return; // never answers
      if (body.model === 'whole') return json(res, 200, { id: 'x', object: 'chat.completion', created: 1, model: 'whole', choices: [] });
      if (body.model === 'empty') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (body.model === 'headers-only') return void res.flushHeaders(); // headers, then nothing
      sse(res, chunk('a'));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const upstream = new HttpUpstream({ baseUrl: url, firstByteTimeoutMs: 150, responseTimeoutMs: 150 });
    await expect(upstream.chat(ask({ model: 'silent', stream: true }))).rejects.toMatchObject({ kind: 'timeout', retryable: true });
    await expect(upstream.chat(ask({ model: 'silent' }))).rejects.toMatchObject({ kind: 'timeout', retryable: true });
    // An upstream that answers a stream request whole, or ends it empty, failed before any byte: another channel may answer.
    await expect(upstream.chat(ask({ model: 'whole', stream: true }))).rejects.toMatchObject({ kind: 'protocol', retryable: true, status: 502 });
    const empty = (await upstream.chat(ask({ model: 'empty', stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    await expect(empty[Symbol.asyncIterator]().next()).rejects.toMatchObject({ kind: 'protocol', retryable: true });
    const quiet = (await upstream.chat(ask({ model: 'headers-only', stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    await expect(quiet[Symbol.asyncIterator]().next()).rejects.toMatchObject({ kind: 'timeout', retryable: true });

    const broken = (await upstream.chat(ask({ model: 'breaks', stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    const iterator = broken[Symbol.asyncIterator]();
    expect((await iterator.next()).value!.choices[0]!.delta.content).toBe('a');
    await expect(iterator.next()).rejects.toMatchObject({ kind: 'interrupted', retryable: false });
    expect(broken.textSoFar()).toBe('a');
  });

  it('ends the upstream request when the caller aborts or stops reading', async () => {
    const closes: Promise<void>[] = [];
    const { url } = await fakeServer((req, res) => {
      closes.push(new Promise((resolve) => res.on('close', () => resolve())));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, chunk('a'));
      const timer = setInterval(() => sse(res, chunk('.')), 200); // an endless slow stream
      req.socket.on('close', () => clearInterval(timer));
    });
    const upstream = new HttpUpstream({ baseUrl: url });
    const within = <T>(promise: Promise<T>, ms: number) =>
      Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))]);

    const controller = new AbortController();
    const stream = (await upstream.chat(ask({ stream: true }), controller.signal)) as UpstreamStream<ChatCompletionChunk>;
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const waiting = iterator.next();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ kind: 'aborted' });
    await within(closes[0]!, 1000);

    const again = (await upstream.chat(ask({ stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    for await (const _ of again) break;
    await within(closes[1]!, 1000);

    const third = (await upstream.chat(ask({ stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    await third.close();
    await within(closes[2]!, 1000);

    // Aborted before the answer came: the request is ended too.
    const early = new AbortController();
    const { url: slowUrl } = await fakeServer((_req, res) => {
      closes.push(new Promise((resolve) => res.on('close', () => resolve())));
      setTimeout(() => early.abort(), 20);
    });
    await expect(new HttpUpstream({ baseUrl: slowUrl }).chat(ask(), early.signal)).rejects.toMatchObject({ kind: 'aborted', retryable: false });
    await within(closes[3]!, 1000);
  });

  it('keeps one connection for calls read to their end, and closes the one a caller stopped reading', async () => {
    const { url } = await fakeServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, chunk('你'));
      sse(res, chunk('好'));
      sse(res, usageChunk);
      res.end('data: [DONE]\n\n');
    });
    const server = servers.at(-1)!;
    const sockets: Socket[] = [];
    server.on('connection', (socket) => sockets.push(socket));
    const upstream = new HttpUpstream({ baseUrl: url });
    for (let i = 0; i < 3; i++) {
      const stream = (await upstream.chat(ask({ stream: true }))) as UpstreamStream<ChatCompletionChunk>;
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
      await stream.close(); // what the gateway does after every stream
      expect(text).toBe('你好');
      expect(stream.usageSoFar()).toEqual(usageChunk.usage);
      // The body's last bytes are read after [DONE]; then the connection waits in the agent for the next call.
      await vi.waitFor(() => expect(idleConnections(upstream)).toBe(1));
    }
    // No new connection per call: a new one would cost the next call its connect before the upstream hears it.
    expect(sockets).toHaveLength(1);

    const closed = deferred();
    sockets[0]!.once('close', closed.resolve);
    const stopped = (await upstream.chat(ask({ stream: true }))) as UpstreamStream<ChatCompletionChunk>;
    for await (const c of stopped) {
      expect(c.choices[0]?.delta.content).toBe('你');
      break;
    }
    await closed.promise; // the stopped call's connection is closed, not handed to the next call half-read
  });

  it('speaks to the embedded model served over HTTP: same text and usage as calling it directly', async () => {
    const embedded = new EmbeddedUpstream({ models: ['console-chat', { id: 'console-embed', type: 'embedding' }], tokensPerSecond: Infinity });
    const { url } = await fakeServer(adapter(embedded));
    const upstream = new HttpUpstream({ baseUrl: url });
    const req = ask({ model: 'console-chat', messages: [{ role: 'user', content: 'What does a GPU do?' }], seed: 21 });
    const direct = (await embedded.chat(req)) as ChatCompletion;

    const overHttp = (await upstream.chat({ ...req, stream: true })) as UpstreamStream<ChatCompletionChunk>;
    let text = '';
    let chunks = 0;
    for await (const c of overHttp) {
      text += c.choices[0]?.delta.content ?? '';
      chunks++;
    }
    expect(text).toBe(direct.choices[0]!.message.content);
    expect(chunks).toBeGreaterThan(direct.usage!.completion_tokens);
    expect(overHttp.usageSoFar()).toEqual(direct.usage);

    const whole = (await upstream.chat(req)) as ChatCompletion;
    expect(whole.choices[0]!.message.content).toBe(direct.choices[0]!.message.content);
    const completion = (await upstream.completion({
      model: 'console-chat',
      prompt: 'Cloud computing',
      seed: 3,
      stream: true,
    })) as UpstreamStream<CompletionChunk>;
    let completed = '';
    for await (const c of completion) completed += c.choices[0]?.text ?? '';
    expect(completed).toBe(((await embedded.completion({ model: 'console-chat', prompt: 'Cloud computing', seed: 3 })) as Completion).choices[0]!.text);

    expect(await upstream.embeddings({ model: 'console-embed', input: ['显存', 'GPU'] })).toEqual(
      await embedded.embeddings({ model: 'console-embed', input: ['显存', 'GPU'] }),
    );
    expect((await upstream.models()).map((m) => m.id)).toEqual(['console-chat', 'console-embed']);
    await expect(upstream.chat({ ...req, model: 'nope' })).rejects.toMatchObject({
      status: 404,
      retryable: false,
      body: { error: { code: 'model_not_found' } },
    });
  });
});

/** A tiny OpenAI-compatible HTTP front for any upstream (what the gateway will do, minus keys and billing). */
function adapter(upstream: ModelUpstream): Handler {
  return (req, res, body) => answerFromUpstream(upstream, req, res, body);
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Connections the upstream's keep-alive agent holds ready for the next call. */
function idleConnections(upstream: HttpUpstream): number {
  const { agent } = upstream as unknown as { agent: Agent };
  return Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);
}
