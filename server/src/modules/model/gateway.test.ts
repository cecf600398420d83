/**
 * The /v1 gateway driven by the official `openai` npm client against the running server: the wire
 * format, errors in OpenAI's shape with the right status, and billing through the ledger.
 */
import OpenAI from 'openai';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { API, type ApiKeyCreated, type Child } from '@console/contract';
import { get, json, post, put, type TestServer } from '../../../test/harness.js';
import { modelSuite } from '../../../test/model-kit.js';
import { UpstreamError, type ChatResult } from '../../drivers/model-upstream/index.js';
import { chatRequestPromptTokens } from '../../drivers/model-upstream/tokens.js';
import { modelCalls } from './schema.js';
import { tokenCost } from './gateway.js';

const QWEN = { inputPricePerMillion: 8000n, outputPricePerMillion: 20000n }; // qwen-mini-sim: ¥0.8 / ¥2 per million

describe('model gateway /v1 with the openai client', () => {
  const { server, baseURL: gatewayURL, client, settled, cash, fundedUser, failure } = modelSuite({ MODEL_EMBEDDED_TOKENS_PER_SECOND: '400' });
  let s: TestServer;
  let baseURL: string;
  beforeAll(() => {
    s = server();
    baseURL = gatewayURL();
  });
  async function createKey(token: string, body: Record<string, unknown> = {}) {
    const res = await post(s.app, API.modelKeys, { name: 'gw', ...body }, token);
    expect(res.statusCode, res.body).toBe(200);
    return json<ApiKeyCreated>(res);
  }
  const holdTotal = async () => {
    await settled();
    const res = (await s.ctx.db.execute(sql`select coalesce(sum(balance), 0)::text as t from ledger_accounts where kind = 'hold'`)) as unknown as {
      rows: { t: string }[];
    };
    return BigInt(res.rows[0]!.t);
  };
  const callsOf = async (keyId: string) => {
    await settled();
    return s.ctx.db.select().from(modelCalls).where(eq(modelCalls.keyId, keyId));
  };

  it('lists models, answers a chat, a completion and an embedding, each charged exactly once at usage × price', async () => {
    const u = await fundedUser('10');
    const k = await createKey(u.token);
    const ai = client(k.secret);

    const models = await ai.models.list();
    expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining(['qwen-mini-sim', 'text-embedding-sim']));

    const before = await cash(u.user.id);
    const { data: chat, response } = await ai.chat.completions
      .create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: '你好，介绍一下你自己' }], max_tokens: 50 })
      .withResponse();
    expect(response.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+(\.\d+)?$/);
    expect(chat.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const usage = chat.usage!;
    expect(usage.completion_tokens).toBeGreaterThan(0);
    const expected = tokenCost(QWEN, usage.prompt_tokens, usage.completion_tokens);
    expect(before - (await cash(u.user.id))).toBe(expected);
    const rows = await callsOf(k.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      status: 'ok',
      cost: expected,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      channel: 'embedded',
    });
    expect(await holdTotal()).toBe(0n);

    const completion = await ai.completions.create({ model: 'qwen-mini-sim', prompt: 'Once upon a time', max_tokens: 20 });
    expect(completion.choices[0]!.text.length).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeLessThanOrEqual(20);

    const emb = await ai.embeddings.create({ model: 'text-embedding-sim', input: ['hello world', '你好世界'] });
    expect(emb.data).toHaveLength(2);
    expect(emb.data[0]!.embedding.length).toBe(256);

    const all = await callsOf(k.id);
    expect(all).toHaveLength(3);
    const charged = all.reduce((n, r) => n + r.cost, 0n);
    expect(10_0000n - (await cash(u.user.id))).toBe(charged);
    expect(await holdTotal()).toBe(0n);
  });

  it('streams a chat as SSE chunks ending in [DONE], with the usage chunk only when asked', async () => {
    const u = await fundedUser('10');
    const k = await createKey(u.token);
    const ai = client(k.secret);
    const stream = await ai.chat.completions.create({
      model: 'qwen-mini-sim',
      messages: [{ role: 'user', content: 'Tell me a story' }],
      max_tokens: 30,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text.length).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    const [row] = await callsOf(k.id);
    expect(row!.cost).toBe(tokenCost(QWEN, usage!.prompt_tokens, usage!.completion_tokens));

    // Raw SSE: ends with [DONE]; without include_usage no usage chunk is sent.
    const raw = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, stream: true }),
    });
    expect(raw.headers.get('content-type')).toMatch(/text\/event-stream/);
    const body = await raw.text();
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(body).not.toMatch(/"usage"/);
    expect(await callsOf(k.id)).toHaveLength(2);
  });

  it('answers bad, disabled and expired keys 401, a model the key may not use 403, an unknown model 404, a bad field 400', async () => {
    const u = await fundedUser('1');
    const k = await createKey(u.token, { allowedModels: ['qwen-mini-sim'], expiresAt: new Date(s.clock.now().getTime() + 3_600_000).toISOString() });
    const msg = [{ role: 'user' as const, content: 'hi' }];

    const bad = await failure(client('sk-' + 'x'.repeat(48)).chat.completions.create({ model: 'qwen-mini-sim', messages: msg }));
    expect(bad).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'authentication_error' });

    const notAllowed = await failure(client(k.secret).chat.completions.create({ model: 'deepseek-lite-sim', messages: msg }));
    expect(notAllowed).toMatchObject({ status: 403, code: 'model_not_allowed' });

    const open = await createKey(u.token);
    const unknown = await failure(client(open.secret).chat.completions.create({ model: 'no-such-model', messages: msg }));
    expect(unknown).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });

    const badField = await failure(client(open.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: [] }));
    expect(badField).toMatchObject({ status: 400, param: 'messages', type: 'invalid_request_error' });
    expect(badField.message).toContain('messages');
    const badTemp = await failure(client(open.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: msg, temperature: 5 }));
    expect(badTemp).toMatchObject({ status: 400, param: 'temperature' });

    // Not the console envelope: an unknown /v1 path and a body that is not JSON answer OpenAI's shape.
    const lost = await fetch(`${baseURL}/nothing`, { headers: { authorization: `Bearer ${open.secret}` } });
    expect(lost.status).toBe(404);
    expect(await lost.json()).toMatchObject({ error: { code: 'unknown_url' } });
    const broken = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${open.secret}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: { type: 'invalid_request_error' } });

    s.clock.advance(2 * 3_600_000);
    const expired = await failure(client(k.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: msg }));
    expect(expired).toMatchObject({ status: 401, code: 'api_key_expired' });

    const off = await put(s.app, `${API.modelKeys}/${open.id}`, { enabled: false }, u.token);
    expect(off.statusCode, off.body).toBe(200);
    const disabled = await failure(client(open.secret).models.list());
    expect(disabled).toMatchObject({ status: 401, code: 'api_key_disabled' });
  });

  it('refuses a child without usingLLM 403, a key over its rpm 429, and a payer with no balance 402 before any upstream call', async () => {
    const parent = await fundedUser('1');
    const made = await post(s.app, API.children, { childName: 'gw_llm', password: 'Kid12345', permissions: { usingLLM: true } }, parent.token);
    expect(made.statusCode, made.body).toBe(200);
    const login = await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName: 'gw_llm', password: 'Kid12345' });
    const childKey = await createKey(json<{ token: string }>(login).token);
    const childId = json<Child>(made).id;
    expect(
      (await client(childKey.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).usage,
    ).toBeTruthy();
    await put(s.app, API.child.replace(':id', childId), { permissions: { usingLLM: false } }, parent.token);
    const child = await failure(client(childKey.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hi' }] }));
    expect(child).toMatchObject({ status: 403, code: 'permission_denied' });
    expect(child.message).toContain('usingLLM');

    const limited = await createKey(parent.token, { rpmLimit: 1 });
    await client(limited.secret).models.list();
    const rate = await failure(client(limited.secret).models.list());
    expect(rate).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'rate_limit_error' });

    const poor = await fundedUser('0');
    const poorKey = await createKey(poor.token);
    const router = await s.ctx.models.router();
    const spy = vi.spyOn(router, 'chat');
    try {
      const broke = await failure(client(poorKey.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hi' }] }));
      expect(broke).toMatchObject({ status: 402, code: 'insufficient_quota' });
      expect(broke.message).toContain('充值');
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    expect(await callsOf(poorKey.id)).toHaveLength(0);
    expect(await cash(poor.user.id)).toBe(0n);
  });

  it("holds a key's spend limit against calls at once: calls under way count, so twelve at once on room for four admit four", async () => {
    const u = await fundedUser('10');
    // One call's estimate: ~12 prompt tokens × ¥0.8/M + 500 × ¥2/M = 11 units; a limit of 50 has room for four.
    const k = await createKey(u.token, { spendLimit: '50' });
    const router = await s.ctx.models.router();
    const chat = router.chat.bind(router);
    // The admitted calls wait upstream until every call was admitted or refused: all twelve are under way at once.
    let reached = 0;
    let refused = 0;
    let release!: () => void;
    const everyoneIn = new Promise<void>((resolve) => (release = resolve));
    const counted = () => reached + refused === 12 && release();
    const spy = vi.spyOn(router, 'chat').mockImplementation(async (...args) => {
      reached++;
      counted();
      await everyoneIn;
      return chat(...args);
    });
    let results: PromiseSettledResult<unknown>[];
    try {
      const ai = client(k.secret);
      results = await Promise.allSettled(
        Array.from({ length: 12 }, () =>
          ai.chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 500 }).catch((e: unknown) => {
            refused++;
            counted();
            throw e;
          }),
        ),
      );
    } finally {
      spy.mockRestore();
    }
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    for (const r of results.filter((r) => r.status === 'rejected'))
      expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 403, code: 'api_key_spend_limit' });
    const rows = await callsOf(k.id);
    expect(rows.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    const spent = rows.reduce((n, r) => n + r.cost, 0n);
    const [listed] = json<{ items: { id: string; spent: string }[] }>(await get(s.app, API.modelKeys, u.token)).items.filter((i) => i.id === k.id);
    expect(BigInt(listed!.spent)).toBe(spent);
    expect(spent).toBeLessThanOrEqual(50n);
    expect(await holdTotal()).toBe(0n);
  });

  it("holds what a call can really cost against a key's spend limit: tools count in the prompt, the larger of max_tokens and max_completion_tokens", async () => {
    const u = await fundedUser('100');
    // Forty tools of ~300 tokens each: ~12,000 prompt tokens the messages alone do not show.
    const tools = Array.from({ length: 40 }, (_, i) => ({
      type: 'function' as const,
      function: {
        name: `tool_${i}`,
        description: '查询指定地区的 GPU 实例库存与价格，返回可用规格。'.repeat(20),
        parameters: { type: 'object', properties: {} },
      },
    }));
    // max_completion_tokens alone says one token; an upstream honouring max_tokens writes 5,000.
    const ask = { model: 'qwen-mini-sim', messages: [{ role: 'user' as const, content: '查一下库存' }], tools, max_completion_tokens: 1, max_tokens: 5000 };
    const prompt = chatRequestPromptTokens(ask);
    const estimate = tokenCost(QWEN, prompt, 5000);
    // Both halves weigh: leaving out either lets the twelve calls pass the limit by more than one estimate.
    expect(tokenCost(QWEN, prompt, 0) * 3n).toBeGreaterThan(estimate);
    expect(tokenCost(QWEN, 0, 5000) * 3n).toBeGreaterThan(estimate);
    const limit = estimate * 4n; // room for four calls held at what they cost
    const k = await createKey(u.token, { spendLimit: String(limit) });
    const router = await s.ctx.models.router();
    // An upstream that counts the tools and honours max_tokens, answering once all twelve were admitted or refused.
    let reached = 0;
    let refused = 0;
    let release!: () => void;
    const everyoneIn = new Promise<void>((resolve) => (release = resolve));
    const counted = () => reached + refused === 12 && release();
    const spy = vi.spyOn(router, 'chat').mockImplementation(async (req) => {
      reached++;
      counted();
      await everyoneIn;
      const usage = { prompt_tokens: chatRequestPromptTokens(req), completion_tokens: req.max_tokens!, total_tokens: 0 };
      const message = { role: 'assistant', content: '好的' };
      return {
        channelId: 'test',
        attempts: [],
        result: {
          id: 'c',
          object: 'chat.completion',
          created: 0,
          model: req.model,
          choices: [{ index: 0, message, finish_reason: 'length' }],
          usage,
        } as unknown as ChatResult,
      };
    });
    try {
      const ai = client(k.secret);
      await Promise.allSettled(
        Array.from({ length: 12 }, () =>
          ai.chat.completions.create(ask).catch((e: unknown) => {
            refused++;
            counted();
            throw e;
          }),
        ),
      );
    } finally {
      spy.mockRestore();
    }
    const spent = (await callsOf(k.id)).reduce((n, r) => n + r.cost, 0n);
    const [listed] = json<{ items: { id: string; spent: string }[] }>(await get(s.app, API.modelKeys, u.token)).items.filter((i) => i.id === k.id);
    expect(BigInt(listed!.spent)).toBe(spent);
    expect(spent).toBeLessThanOrEqual(limit + estimate);
    expect(refused).toBeGreaterThan(0);
    expect(await holdTotal()).toBe(0n);
  });

  it("gives a dead process's hold back to its key's spend limit when the sweeper releases the call", async () => {
    const u = await fundedUser('1');
    const k = await createKey(u.token, { spendLimit: '5000' });
    const auth = await s.ctx.apiKeys.authenticate(`Bearer ${k.secret}`, '127.0.0.1', 'qwen-mini-sim');
    if (!auth.ok) throw new Error(auth.reason);
    const spentNow = async () => BigInt(json<{ items: { id: string; spent: string }[] }>(await get(s.app, API.modelKeys, u.token)).items[0]!.spent);
    const call = await s.ctx.modelGateway.hold(auth.key, (await s.ctx.models.get('qwen-mini-sim'))!, 20, 1000);
    expect(await spentNow()).toBe(call.held);
    s.clock.advance(61 * 60_000);
    expect(await s.ctx.modelGateway.sweepStaleHolds()).toBe(1);
    expect(await spentNow()).toBe(0n);
    expect(await cash(u.user.id)).toBe(1_0000n);
  });

  it('answers a rate-limited call 429 with Retry-After in whole seconds and retry-after-ms, as OpenAI does', async () => {
    const u = await fundedUser('1');
    const k = await createKey(u.token, { rpmLimit: 1 });
    const call = () => fetch(`${baseURL}/models`, { headers: { authorization: `Bearer ${k.secret}` } });
    expect((await call()).status).toBe(200);
    const limited = await call();
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit_exceeded', type: 'rate_limit_error' } });
    const ms = Number(limited.headers.get('retry-after-ms'));
    expect(Number.isInteger(ms) && ms > 0 && ms <= 60_000, String(ms)).toBe(true);
    expect(limited.headers.get('retry-after')).toBe(String(Math.ceil(ms / 1000)));
  });

  it('retrieves a model as the official client does, 404 in OpenAI shape for one unknown or not allowed to the key', async () => {
    const u = await fundedUser('1');
    const all = client((await createKey(u.token)).secret);
    expect(await all.models.retrieve('qwen-mini-sim')).toEqual({ id: 'qwen-mini-sim', object: 'model', created: 0, owned_by: expect.any(String) });
    expect(await failure(all.models.retrieve('no-such-model'))).toMatchObject({ status: 404, code: 'model_not_found', type: 'invalid_request_error' });
    const narrow = client((await createKey(u.token, { allowedModels: ['qwen-mini-sim'] })).secret);
    expect((await narrow.models.retrieve('qwen-mini-sim')).id).toBe('qwen-mini-sim');
    expect(await failure(narrow.models.retrieve('deepseek-lite-sim'))).toMatchObject({ status: 404, code: 'model_not_found' });
    expect(await failure(client('sk-' + 'x'.repeat(48)).models.retrieve('qwen-mini-sim'))).toMatchObject({ status: 401 });
  });

  it('releases the whole hold when the upstream fails before any token, answering 503 in OpenAI shape', async () => {
    const u = await fundedUser('1');
    const k = await createKey(u.token);
    const router = await s.ctx.models.router();
    const spy = vi.spyOn(router, 'chat').mockRejectedValue(new UpstreamError('connect', 'connection refused'));
    try {
      const down = await failure(client(k.secret).chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hi' }] }));
      expect(down).toMatchObject({ status: 503, code: 'upstream_unavailable', type: 'api_error' });
    } finally {
      spy.mockRestore();
    }
    expect(await cash(u.user.id)).toBe(1_0000n);
    expect(await callsOf(k.id)).toMatchObject([{ status: 'error', cost: 0n, completionTokens: 0 }]);
    expect(await holdTotal()).toBe(0n);
  });

  it('gives back the float of a process that died, once, and logs a call settled after that at no cost', async () => {
    const u = await fundedUser('1');
    const k = await createKey(u.token);
    const auth = await s.ctx.apiKeys.authenticate(`Bearer ${k.secret}`, '127.0.0.1', 'qwen-mini-sim');
    if (!auth.ok) throw new Error(auth.reason);
    const model = (await s.ctx.models.get('qwen-mini-sim'))!;
    // The process holds, then "dies" before settling: its float stays open and untouched.
    const call = await s.ctx.modelGateway.hold(auth.key, model, 20, 1000);
    const funded = 1_0000n - (await cash(u.user.id));
    expect(funded).toBeGreaterThanOrEqual(call.held);
    expect(await holdTotal()).toBe(funded);
    expect(await s.ctx.modelGateway.sweepStaleHolds()).toBe(0);
    s.clock.advance(11 * 60_000);
    const swept = await Promise.all([s.ctx.modelGateway.sweepStaleHolds(), s.ctx.modelGateway.sweepStaleHolds()]);
    expect(swept[0]! + swept[1]!).toBe(1);
    expect(await cash(u.user.id)).toBe(1_0000n);
    expect(await holdTotal()).toBe(0n);
    // A settle arriving after the sweep is logged and takes nothing.
    await s.ctx.modelGateway.settle(call, { usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 }, channel: 'embedded', status: 'ok' });
    expect(await cash(u.user.id)).toBe(1_0000n);
    expect(await callsOf(k.id)).toMatchObject([{ status: 'ok', cost: 0n, completionTokens: 10, error: '预扣已被回收，本次调用未计费' }]);
    expect(await holdTotal()).toBe(0n);
  });

  it('never takes a small balance below zero under fifty concurrent calls on a balance that covers ten', async () => {
    // One hold: ~12 prompt tokens × ¥0.8/M + 500 × ¥2/M ≈ 11 units; 110 units cover about ten at once.
    const u = await fundedUser('0.011');
    const k = await createKey(u.token);
    const ai = client(k.secret);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        ai.chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 500 }),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as InstanceType<typeof OpenAI.APIError>);
    expect(ok).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const e of refused) expect(e.status).toBe(402);
    const left = await cash(u.user.id);
    expect(left).toBeGreaterThanOrEqual(0n);
    const rows = await callsOf(k.id);
    expect(rows).toHaveLength(ok);
    expect(110n - left).toBe(rows.reduce((n, r) => n + r.cost, 0n));
    const floats = await s.ctx.db.execute(sql`select funded::text, charged::text, status, flushes from model_floats where payer_id = ${u.user.id}`);
    expect(await holdTotal(), JSON.stringify(floats)).toBe(0n);
  });
});

describe('model gateway /v1: a client that leaves mid-stream', () => {
  // Slow enough that a client leaving after ten chunks leaves mid-answer even on a loaded machine (at 400 tokens/s the
  // whole answer was written before a loaded client had read ten chunks, and the call was settled as complete).
  const { server, client, settled, cash, fundedUser } = modelSuite({ MODEL_EMBEDDED_TOKENS_PER_SECOND: '20' });
  let s: TestServer;
  beforeAll(() => {
    s = server();
  });
  const createKey = async (token: string) => json<ApiKeyCreated>(await post(s.app, API.modelKeys, { name: 'gw' }, token));
  const callsOf = async (keyId: string) => {
    await settled();
    return s.ctx.db.select().from(modelCalls).where(eq(modelCalls.keyId, keyId));
  };
  const holdTotal = async () => {
    await settled();
    const res = (await s.ctx.db.execute(sql`select coalesce(sum(balance), 0)::text as t from ledger_accounts where kind = 'hold'`)) as unknown as {
      rows: { t: string }[];
    };
    return BigInt(res.rows[0]!.t);
  };

  it('charges a stream the client aborts halfway only for the tokens produced', async () => {
    const u = await fundedUser('10');
    const k = await createKey(u.token);
    const before = await cash(u.user.id);
    const stream = await client(k.secret).chat.completions.create({
      model: 'qwen-mini-sim',
      messages: [{ role: 'user', content: '请写一篇很长的文章，讲讲算力云平台的故事' }],
      max_tokens: 2000,
      // This seed's answer is 143 tokens (about 7 s at 20 tokens/s): the client leaves well before its end, however loaded the machine.
      seed: 8,
      stream: true,
    });
    let chunks = 0;
    for await (const _ of stream) {
      if (++chunks === 10) break; // leaving the loop aborts the HTTP request
    }
    // The call is on record (open) from its hold; it is settled once the gateway notices the client left.
    await vi.waitFor(async () => expect((await callsOf(k.id)).map((c) => c.status)).toEqual(['aborted']), { timeout: 5000 });
    const [row] = await callsOf(k.id);
    expect(
      row,
      JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
    ).toMatchObject({ status: 'aborted' });
    expect(row!.completionTokens).toBeGreaterThanOrEqual(9);
    expect(row!.completionTokens).toBeLessThan(2000);
    expect(row!.cost).toBe(tokenCost(QWEN, row!.promptTokens, row!.completionTokens));
    expect(before - (await cash(u.user.id))).toBe(row!.cost);
    expect(await holdTotal()).toBe(0n);
  });
});
