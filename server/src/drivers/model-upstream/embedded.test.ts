import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, Completion, CompletionChunk } from '@console/contract';
import { describe, expect, it } from 'vitest';
import { EmbeddedUpstream, type Pacer } from './embedded.js';
import { NgramModel, corpusTexts } from './ngram.js';
import { encode } from './tokens.js';
import { UpstreamError, isUpstreamStream, type UpstreamStream } from './types.js';

const upstream = new EmbeddedUpstream({
  models: ['console-chat', 'console-chat-pro', { id: 'console-embed', type: 'embedding' }],
  tokensPerSecond: Infinity,
});

const ask = (content: string, extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'console-chat',
  messages: [
    { role: 'system', content: '你是算力云的助手。' },
    { role: 'user', content },
  ],
  ...extra,
});

async function answer(req: ChatCompletionRequest): Promise<ChatCompletion> {
  const result = await upstream.chat({ ...req, stream: false });
  if (isUpstreamStream(result)) throw new Error('expected a whole response');
  return result;
}

async function streamed(req: ChatCompletionRequest): Promise<ChatCompletionChunk[]> {
  const result = await upstream.chat({ ...req, stream: true });
  if (!isUpstreamStream<ChatCompletionChunk>(result)) throw new Error('expected a stream');
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of result) chunks.push(chunk);
  return chunks;
}

const contentOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

/** The chat template's count, recomputed here from its definition: role + content + 3 per message, 3 to prime the answer. */
const templateTokens = (messages: ChatMessage[]) => messages.reduce((sum, m) => sum + encode(m.role).length + encode(String(m.content)).length + 3, 3);

describe('embedded upstream: text', () => {
  it('trains on the committed corpus in well under a second', () => {
    const texts = corpusTexts();
    const bytes = texts.reduce((sum, t) => sum + Buffer.byteLength(t), 0);
    expect(bytes).toBeGreaterThan(30_000);
    expect(texts.some((t) => /\p{Script=Han}{20}/u.test(t)) && texts.some((t) => /[A-Za-z ,]{200}/.test(t))).toBe(true);
    const started = performance.now();
    const model = new NgramModel(texts);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(model.vocabularySize).toBeGreaterThan(1000);
  });

  it('answers different questions with different text about them, in their language', async () => {
    const gpu = (await answer(ask('显存不够用了怎么办？', { seed: 7 }))).choices[0]!.message.content!;
    const python = (await answer(ask('How do I set up a virtual environment for Python?', { seed: 7 }))).choices[0]!.message.content!;
    expect(gpu).not.toBe(python);
    expect(gpu).toContain('显存');
    expect(gpu).toMatch(/^\p{Script=Han}/u);
    expect(python).toMatch(/^[A-Z]/);
    expect(python.toLowerCase()).toMatch(/environment|python/);
    for (const text of [gpu, python]) {
      expect(encode(text).length).toBeGreaterThanOrEqual(12);
      expect(text).not.toContain('\uFFFD');
      expect(text).not.toMatch(/^\s/);
    }
  });

  it('is deterministic for a seed; another seed or temperature gives another answer', async () => {
    const a = await answer(ask('介绍一下云计算的计费方式', { seed: 42 }));
    const b = await answer(ask('介绍一下云计算的计费方式', { seed: 42 }));
    expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
    const others = await Promise.all([1, 2, 3].map((seed) => answer(ask('介绍一下云计算的计费方式', { seed }))));
    expect(others.some((o) => o.choices[0]!.message.content !== a.choices[0]!.message.content)).toBe(true);
    // Temperature 0 always takes the likeliest way, whatever the seed; a high temperature does not.
    const texts = async (temperature: number) =>
      new Set(
        await Promise.all(
          [1, 2, 3, 4, 5].map(async (seed) => (await answer(ask('介绍一下云计算的计费方式', { seed, temperature }))).choices[0]!.message.content),
        ),
      );
    expect((await texts(0)).size).toBe(1);
    expect((await texts(1.5)).size).toBeGreaterThan(2);
  });

  it('reports exact usage: the chat template for the prompt, the tokens produced for the answer', async () => {
    for (const [question, seed] of [
      ['什么是GPU？', 1],
      ['What is a transformer?', 2],
      ['周末去哪里散步比较好', 3],
      ['Explain batch size and memory', 4],
    ] as const) {
      const req = ask(question, { seed });
      const res = await answer(req);
      const content = res.choices[0]!.message.content!;
      expect(res.usage).toEqual({
        prompt_tokens: templateTokens(req.messages),
        completion_tokens: encode(content).length,
        total_tokens: templateTokens(req.messages) + encode(content).length,
      });
      expect(res.object).toBe('chat.completion');
      expect(res.model).toBe('console-chat');
    }
  });

  it('stops at max_tokens (finish_reason length) and at a stop sequence (not included)', async () => {
    const short = await answer(ask('讲讲深度学习', { seed: 5, max_tokens: 6 }));
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.usage!.completion_tokens).toBe(6);
    expect(encode(short.choices[0]!.message.content!)).toHaveLength(6);

    const full = (await answer(ask('讲讲深度学习', { seed: 5 }))).choices[0]!.message.content!;
    const stop = '，';
    const cut = full.indexOf(stop);
    expect(cut).toBeGreaterThan(0);
    const stopped = await answer(ask('讲讲深度学习', { seed: 5, stop: [stop, '不会出现的停止词'] }));
    expect(stopped.choices[0]!.message.content).toBe(full.slice(0, cut));
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    // The stop sequence's own token was produced, so it is counted.
    expect(stopped.usage!.completion_tokens).toBe(encode(full.slice(0, cut + stop.length)).length);
    const streamedStop = await streamed(ask('讲讲深度学习', { seed: 5, stop: stop }));
    expect(contentOf(streamedStop)).toBe(full.slice(0, cut));
  });

  it('streams chunk by chunk in OpenAI’s shape; the chunks join to the same text as without streaming', async () => {
    const req = ask('How do GPUs help deep learning?', { seed: 11, stream_options: { include_usage: true } });
    const whole = await answer(req);
    const chunks = await streamed(req);
    expect(contentOf(chunks)).toBe(whole.choices[0]!.message.content);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id && c.model === 'console-chat')).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(whole.usage);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe(whole.choices[0]!.finish_reason);
    // One token per content chunk.
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBe(whole.usage!.completion_tokens);

    const noUsage = await streamed({ ...req, stream_options: null });
    expect(noUsage.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
  });

  it('stops at once when the client aborts, and keeps the usage of what was produced', async () => {
    const slow = new EmbeddedUpstream({ models: ['console-chat'], tokensPerSecond: 5 });
    const controller = new AbortController();
    const req = ask('讲一讲GPU的显存和带宽', { seed: 3, max_tokens: 200, stream: true });
    const stream = (await slow.chat(req, controller.signal)) as UpstreamStream<ChatCompletionChunk>;
    const iterator = stream[Symbol.asyncIterator]();
    let delivered = '';
    for (let i = 0; i < 4; i++) delivered += (await iterator.next()).value!.choices[0]!.delta.content;
    const pending = iterator.next(); // waiting for the next token's time
    const abortedAt = performance.now();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ kind: 'aborted', retryable: false });
    expect(performance.now() - abortedAt).toBeLessThan(100); // not the 200 ms a token takes
    const usage = stream.usageSoFar()!;
    expect(usage.completion_tokens).toBe(3);
    expect(encode(delivered)).toHaveLength(3);
    expect(stream.textSoFar()).toBe(delivered);
    expect(usage.prompt_tokens).toBe(templateTokens(req.messages));
    // Nothing more is produced afterwards.
    await new Promise((r) => setTimeout(r, 450));
    expect(stream.usageSoFar()!.completion_tokens).toBe(3);

    // Leaving the loop early ends it the same way.
    const again = (await slow.chat({ ...req, stream: true })) as UpstreamStream<ChatCompletionChunk>;
    let seen = 0;
    for await (const chunk of again) if (chunk.choices[0]?.delta.content && ++seen === 2) break;
    expect(again.usageSoFar()!.completion_tokens).toBe(2);
  });

  it('paces the stream at the configured tokens per second', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const pacer: Pacer = {
      now: () => now,
      sleep: async (ms) => {
        sleeps.push(ms);
        now += ms;
      },
    };
    const paced = new EmbeddedUpstream({ models: ['console-chat'], tokensPerSecond: 10, pacer });
    const res = (await paced.chat(ask('介绍一下 Python', { seed: 9, max_tokens: 12 }))) as ChatCompletion;
    expect(res.usage!.completion_tokens).toBe(12);
    expect(now).toBeCloseTo(1100); // 12 tokens, 100 ms apart, the first at once
    expect(sleeps.every((ms) => Math.abs(ms - 100) < 1e-6)).toBe(true);
  });

  it('continues a prompt through the legacy completions endpoint (16 tokens by default)', async () => {
    const res = (await upstream.completion({ model: 'console-chat', prompt: 'Deep learning is', seed: 1 })) as Completion;
    expect(res.object).toBe('text_completion');
    expect(res.usage).toEqual({
      prompt_tokens: encode('Deep learning is').length,
      completion_tokens: 16,
      total_tokens: encode('Deep learning is').length + 16,
    });
    expect(res.choices[0]!.finish_reason).toBe('length');
    expect(res.choices[0]!.text).toMatch(/^ [a-z]/);

    const stream = (await upstream.completion({ model: 'console-chat', prompt: 'Deep learning is', seed: 1, stream: true })) as UpstreamStream<CompletionChunk>;
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(res.choices[0]!.text);
  });

  it('refuses what it cannot answer with OpenAI’s statuses, not retryable', async () => {
    await expect(upstream.chat(ask('你好', { model: 'no-such-model' }))).rejects.toMatchObject({
      status: 404,
      retryable: false,
      body: { error: { code: 'model_not_found' } },
    });
    await expect(upstream.chat(ask('你好', { model: 'console-embed' }))).rejects.toMatchObject({ status: 400, retryable: false });
    await expect(upstream.embeddings({ model: 'console-chat', input: '你好' })).rejects.toMatchObject({ status: 400 });
    const small = new EmbeddedUpstream({ models: [{ id: 'tiny', contextLength: 50 }], tokensPerSecond: Infinity });
    await expect(small.chat(ask('GPU '.repeat(60), { model: 'tiny' }))).rejects.toMatchObject({
      status: 400,
      body: { error: { code: 'context_length_exceeded' } },
    });
    await expect(small.chat(ask('你好', { model: 'tiny', max_tokens: 45 }))).rejects.toMatchObject({ status: 400, body: { error: { param: 'max_tokens' } } });
    await expect(upstream.completion({ model: 'console-chat', prompt: ['a', 'b'] })).rejects.toBeInstanceOf(UpstreamError);
    expect((await upstream.models()).map((m) => m.id)).toEqual(['console-chat', 'console-chat-pro', 'console-embed']);
  });
});

describe('embedded upstream: embeddings', () => {
  const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
  const embed = async (input: string[]) => {
    const res = await upstream.embeddings({ model: 'console-embed', input });
    return res.data.map((d) => d.embedding as number[]);
  };

  it('are unit vectors, deterministic, and similar texts score closer', async () => {
    const [q, near, far] = await embed(['GPU 显存不足怎么办', '显卡的显存不够用了，训练报错怎么办', '周末去公园散步，天气很好']);
    expect(q).toHaveLength(256);
    expect(cosine(q!, q!)).toBeCloseTo(1, 6);
    expect(cosine(q!, near!)).toBeGreaterThan(cosine(q!, far!));
    const [q2] = await embed(['GPU 显存不足怎么办']);
    expect(q2).toEqual(q);

    const [en, enNear, enFar] = await embed(['How do I rent a GPU in the cloud?', 'Renting a cloud GPU by the hour', 'My grandmother bakes bread on Sundays']);
    expect(cosine(en!, enNear!)).toBeGreaterThan(cosine(en!, enFar!));
  });

  it('honour dimensions and base64 (little-endian float32, what the openai client asks for)', async () => {
    const res = await upstream.embeddings({ model: 'console-embed', input: 'hello world', dimensions: 64, encoding_format: 'base64' });
    const bytes = Buffer.from(res.data[0]!.embedding as string, 'base64');
    const floats = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    expect(floats).toHaveLength(64);
    const plain = await upstream.embeddings({ model: 'console-embed', input: ['hello world'], dimensions: 64 });
    (plain.data[0]!.embedding as number[]).forEach((x, i) => expect(floats[i]).toBeCloseTo(x, 6));
    expect(res.usage).toEqual({ prompt_tokens: encode('hello world').length, total_tokens: encode('hello world').length });
  });
});
