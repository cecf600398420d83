import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { session } from '../../../session/store';
import { answerCost, ChatError, SseParser, streamChat } from './modelPlayground';

const chunk = (content: string) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content } }] });
const usageChunk = JSON.stringify({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [],
  usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
});

/** A response whose body delivers `pieces` as separate reads (as bytes, cut wherever the test says). */
function sseResponse(pieces: (string | Uint8Array)[], status = 200) {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      pieces.forEach((p) => c.enqueue(typeof p === 'string' ? enc.encode(p) : p));
      c.close();
    },
  });
  return new Response(body, { status, headers: { 'content-type': 'text/event-stream' } });
}

describe('SseParser', () => {
  it('gives the data of each event, whatever way the text was cut into reads', () => {
    const p = new SseParser();
    expect(p.push('data: {"a"')).toEqual([]);
    expect(p.push(':1}\n')).toEqual([]);
    expect(p.push('\ndata: [DO')).toEqual(['{"a":1}']);
    expect(p.push('NE]\n\n')).toEqual(['[DONE]']);
  });

  it('handles CRLF split between reads, comments, other fields and multi-line data', () => {
    const p = new SseParser();
    expect(p.push(': keep-alive\r\n\r\nevent: message\r\ndata: one\r')).toEqual([]);
    expect(p.push('\ndata:two\r\n\r')).toEqual([]);
    expect(p.push('\n')).toEqual(['one\ntwo']);
  });

  it('gives the last event even when the stream ends without its blank line', () => {
    const p = new SseParser();
    expect(p.push('data: a\n\ndata: b')).toEqual(['a']);
    expect(p.end()).toEqual(['b']);
    expect(p.end()).toEqual([]);
  });
});

describe('streamChat', () => {
  beforeEach(() => session.setToken('console-token'));
  afterEach(() => vi.unstubAllGlobals());

  const req = { model: 'm', messages: [{ role: 'user' as const, content: '你好' }], temperature: 0.7, maxTokens: 100 };

  it('signs with the console session, streams the text and reads the usage chunk and [DONE]', async () => {
    const full = `data: ${chunk('你')}\n\ndata: ${chunk('好呀')}\n\ndata: ${usageChunk}\n\ndata: [DONE]\n\n`;
    // Cut the bytes in the middle of a multi-byte character and of an event.
    const bytes = new TextEncoder().encode(full);
    const cut = new TextEncoder().encode(full.slice(0, full.indexOf('你'))).length + 1; // inside the 3 bytes of 你
    const fetch = vi.fn<typeof globalThis.fetch>(async () => sseResponse([bytes.slice(0, cut), bytes.slice(cut, cut + 5), bytes.slice(cut + 5)]));
    vi.stubGlobal('fetch', fetch);
    const deltas: string[] = [];
    const result = await streamChat(req, { onDelta: (t) => deltas.push(t) });
    expect(result).toEqual({ content: '你好呀', usage: { promptTokens: 7, completionTokens: 3 }, finishReason: null, stopped: false });
    expect(deltas).toEqual(['你', '好呀']);
    const [url, init] = fetch.mock.calls[0]!;
    expect(String(url)).toBe('/v1/chat/completions');
    expect((init!.headers as Record<string, string>).Authorization).toBe('Bearer console-token');
    expect(JSON.parse(String(init!.body))).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: '你好' }],
      temperature: 0.7,
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('rejects with the message of an error event in the middle of the stream', async () => {
    vi.stubGlobal('fetch', async () =>
      sseResponse([`data: ${chunk('半句')}\n\n`, 'data: {"error":{"message":"上游模型服务出错，请稍后重试","type":"api_error","code":"upstream_error"}}\n\n']),
    );
    const deltas: string[] = [];
    const error = await streamChat(req, { onDelta: (t) => deltas.push(t) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChatError);
    expect(error).toMatchObject({ message: '上游模型服务出错，请稍后重试', code: 'upstream_error', midStream: true });
    expect(deltas).toEqual(['半句']);
  });

  it('rejects with the gateway message and status of an HTTP error', async () => {
    vi.stubGlobal('fetch', async () =>
      Response.json({ error: { message: '余额不足以支付本次调用的预估费用', type: 'insufficient_quota', code: 'insufficient_quota' } }, { status: 402 }),
    );
    await expect(streamChat(req, { onDelta: () => undefined })).rejects.toMatchObject({
      status: 402,
      type: 'insufficient_quota',
      message: '余额不足以支付本次调用的预估费用',
    });
  });

  it('says the connection broke when the stream ends without [DONE]', async () => {
    vi.stubGlobal('fetch', async () => sseResponse([`data: ${chunk('半')}\n\n`]));
    await expect(streamChat(req, { onDelta: () => undefined })).rejects.toMatchObject({ message: '连接中断，回答不完整，请重试', midStream: true });
  });

  it('resolves with what arrived and `stopped` when the user aborts', async () => {
    let push!: (s: string) => void;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (push = (s) => c.enqueue(new TextEncoder().encode(s))) });
    vi.stubGlobal('fetch', async () => new Response(body, { status: 200 }));
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = streamChat(req, { signal: controller.signal, onDelta: (t) => deltas.push(t) });
    push(`data: ${chunk('一半')}\n\n`);
    await vi.waitFor(() => expect(deltas).toEqual(['一半']));
    controller.abort();
    await expect(pending).resolves.toEqual({ content: '一半', stopped: true, finishReason: null });
  });
});

describe('answerCost', () => {
  it('prices prompt and completion tokens per million and rounds up to 0.0001 yuan', () => {
    // ¥2 / ¥8 per million: 12 × 20000 + 34 × 80000 = 2 960 000 → 2.96 units → 3
    expect(answerCost({ inputPricePerMillion: '20000', outputPricePerMillion: '80000' }, { promptTokens: 12, completionTokens: 34 })).toBe('3');
    expect(answerCost({ inputPricePerMillion: '20000', outputPricePerMillion: '80000' }, { promptTokens: 1_000_000, completionTokens: 500_000 })).toBe('60000');
    expect(answerCost({ inputPricePerMillion: '0', outputPricePerMillion: '0' }, { promptTokens: 5, completionTokens: 5 })).toBe('0');
  });
});
