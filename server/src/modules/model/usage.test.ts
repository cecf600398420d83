/**
 * The model service beyond the wire format: 大模型 Token 包 paying before cash, the online experience
 * calling /v1 with the console session, the stats and call log (live, rolled up, after retention),
 * and the playground's saved conversations.
 */
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { API, yuanToUnits, type ApiKeyPage, type Child, type Conversation, type ModelCallPage, type ModelStats, type Order } from '@console/contract';
import { get, json, post, put, registerUser, type TestServer } from '../../../test/harness.js';
import { modelSuite } from '../../../test/model-kit.js';
import { orders, resourcePackages } from '../../db/schema.js';
import { modelCalls } from './schema.js';
import { tokenCost, uncovered } from './gateway.js';

const QWEN = { inputPricePerMillion: 8000n, outputPricePerMillion: 20000n }; // qwen-mini-sim: ¥0.8 / ¥2 per million
const AI_ORDER = '/shinichi/api/v2.1/tiio/resource';
const DAY = 86400_000;
const del = (s: TestServer, url: string, token: string) => s.app.inject({ method: 'DELETE', url, headers: { authorization: `Bearer ${token}` } });

describe('model usage: Token 包, online experience, stats, conversations', () => {
  const { server, client, settled, cash, fund, failure } = modelSuite({ MODEL_EMBEDDED_TOKENS_PER_SECOND: '2000', MODEL_CALL_RETENTION_DAYS: '30' });
  let s: TestServer;
  beforeAll(() => {
    s = server();
  });
  /** Buys 大模型 Token 包 1000 万 through the API with ¥50 of cash, then leaves `tokens` in it. */
  async function tokenPackage(token: string, userId: string, tokens: number) {
    await fund(userId, '50');
    const order = json<Order>(await post(s.app, AI_ORDER, { productId: 'llm-tokens-10m' }, token));
    const paid = await post(s.app, `/order/api/v2.1/tiio/resource/${order.orderUid}/pay`, { method: 'Balance' }, token);
    expect(json(paid)).toMatchObject({ status: 'Success' });
    const [row] = await s.ctx.db
      .select({ id: resourcePackages.id })
      .from(resourcePackages)
      .innerJoin(orders, eq(orders.id, resourcePackages.orderId))
      .where(eq(orders.orderUid, order.orderUid));
    await s.ctx.db
      .update(resourcePackages)
      .set({ total: BigInt(tokens), remain: BigInt(tokens) })
      .where(eq(resourcePackages.id, row!.id));
    return row!.id;
  }
  const remain = async (id: string) => {
    await settled();
    const [row] = await s.ctx.db.select().from(resourcePackages).where(eq(resourcePackages.id, id));
    return row!.remain;
  };
  const chat = async (ai: OpenAI, maxTokens: number, content = '你好') => {
    const answer = await ai.chat.completions.create({ model: 'qwen-mini-sim', messages: [{ role: 'user', content }], max_tokens: maxTokens });
    await settled();
    return answer;
  };

  it('pays with Token 包 first: a ¥0 account with a package is served, the package shrinks by exactly the tokens used', async () => {
    const u = await registerUser(s);
    const pkg = await tokenPackage(u.token, u.user.id, 1000);
    expect(await cash(u.user.id)).toBe(0n);
    const ai = client(json<{ secret: string }>(await post(s.app, API.modelKeys, { name: 'pkg' }, u.token)).secret);

    const answer = await chat(ai, 40);
    const used = answer.usage!.total_tokens;
    expect(await remain(pkg)).toBe(BigInt(1000 - used));
    expect(await cash(u.user.id)).toBe(0n);
    const [row] = await s.ctx.db.select().from(modelCalls).where(eq(modelCalls.userId, u.user.id));
    expect(row).toMatchObject({ status: 'ok', packageTokens: used, cost: 0n });

    // An estimate the package cannot cover and no cash: refused, and the package keeps every token.
    const before = await remain(pkg);
    const refused = await failure(chat(ai, 5000));
    expect(refused).toMatchObject({ status: 402, code: 'insufficient_quota' });
    expect(refused.message).toContain('Token 包');
    expect(await remain(pkg)).toBe(before);

    // With cash, the package pays for what it has left (prompt first) and the cash for the rest.
    await fund(u.user.id, '1');
    const left = 10;
    await s.ctx.db
      .update(resourcePackages)
      .set({ remain: BigInt(left) })
      .where(eq(resourcePackages.id, pkg));
    const big = await chat(ai, 2000, 'Tell me a long story about the sea and the mountains');
    const usage = big.usage!;
    expect(usage.total_tokens).toBeGreaterThan(left);
    expect(await remain(pkg)).toBe(0n);
    const rest = uncovered(usage.prompt_tokens, usage.completion_tokens, left);
    expect(yuanToUnits('1') - (await cash(u.user.id))).toBe(tokenCost(QWEN, rest.prompt, rest.completion));
  });

  it('gives reserved package tokens back when the upstream fails or the call is never settled', async () => {
    const u = await registerUser(s);
    const pkg = await tokenPackage(u.token, u.user.id, 5000);
    const key = (await s.ctx.apiKeys.playground((await s.ctx.users.findById(u.user.id))!)) as { ok: true; key: Parameters<typeof s.ctx.modelGateway.hold>[0] };
    const model = (await s.ctx.models.get('qwen-mini-sim'))!;
    const failed = await s.ctx.modelGateway.hold(key.key, model, 100, 400);
    expect(await remain(pkg)).toBe(4500n);
    await s.ctx.modelGateway.settle(failed, { usage: null, channel: null, status: 'error', error: 'upstream down' });
    expect(await remain(pkg)).toBe(5000n);

    await s.ctx.modelGateway.hold(key.key, model, 100, 400);
    expect(await remain(pkg)).toBe(4500n);
    s.clock.advance(2 * 3600_000);
    expect(await s.ctx.modelGateway.sweepStaleHolds()).toBeGreaterThanOrEqual(1);
    expect(await remain(pkg)).toBe(5000n);
  });

  it('lets the online experience call /v1 with the console session, billed and logged under 在线体验, never listed as a key', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '5');
    const answer = await chat(client(u.token), 20);
    expect(answer.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const charged = tokenCost(QWEN, answer.usage!.prompt_tokens, answer.usage!.completion_tokens);
    expect(yuanToUnits('5') - (await cash(u.user.id))).toBe(charged);
    const keys = json<ApiKeyPage>(await get(s.app, API.modelKeys, u.token));
    expect(keys.items).toEqual([]);
    const calls = json<ModelCallPage>(await get(s.app, API.modelCalls, u.token));
    expect(calls.items).toHaveLength(1);
    expect(calls.items[0]).toMatchObject({ keyId: 'playground', keyName: '在线体验', cost: String(charged), status: 'ok' });

    const bad = await failure(chat(client('not-a-session'), 5));
    expect(bad).toMatchObject({ status: 401, code: 'invalid_api_key' });

    const made = await post(s.app, API.children, { childName: 'pg_kid', password: 'Kid12345', permissions: { usingLLM: false } }, u.token);
    const login = await post(s.app, API.childLogin, { parentMobile: u.mobile, childName: 'pg_kid', password: 'Kid12345' });
    const kid = await failure(chat(client(json<{ token: string }>(login).token), 5));
    expect(kid).toMatchObject({ status: 403, code: 'permission_denied' });
    expect(json<Child>(made).id).toBeTruthy();
  });

  it('sums the calls per day, model and key, the same live, from the rollups, and after the calls are deleted', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '5');
    const k = json<{ id: string; secret: string }>(await post(s.app, API.modelKeys, { name: '统计用' }, u.token));
    await chat(client(k.secret), 10);
    await chat(client(k.secret), 12, 'second');
    await chat(client(u.token), 8);
    await client(k.secret).embeddings.create({ model: 'text-embedding-sim', input: 'hello' });
    await settled();

    const rows = await s.ctx.db.select().from(modelCalls).where(eq(modelCalls.payerId, u.user.id));
    const expected = {
      requests: 4,
      failed: 0,
      promptTokens: rows.reduce((n, r) => n + r.promptTokens, 0),
      completionTokens: rows.reduce((n, r) => n + r.completionTokens, 0),
      packageTokens: 0,
      cost: String(rows.reduce((n, r) => n + r.cost, 0n)),
    };
    expect(yuanToUnits('5') - (await cash(u.user.id))).toBe(BigInt(expected.cost));

    const live = json<ModelStats>(await get(s.app, API.modelStats, u.token));
    expect(live.days).toHaveLength(7);
    expect(live.total).toEqual(expected);
    expect(live.days.at(-1)).toMatchObject({ requests: 4, cost: expected.cost });
    expect(live.models.map((m) => m.model).sort()).toEqual(['qwen-mini-sim', 'text-embedding-sim']);
    expect(live.keys.find((x) => x.keyId === 'playground')).toMatchObject({ keyName: '在线体验', requests: 1 });
    expect(live.keys.find((x) => x.keyId === k.id)).toMatchObject({ keyName: '统计用', requests: 3 });
    const onlyKey = json<ModelStats>(await get(s.app, `${API.modelStats}?keyId=${k.id}&model=qwen-mini-sim`, u.token));
    expect(onlyKey.total.requests).toBe(2);

    const today = live.to;
    const range = `${API.modelStats}?from=${today}&to=${today}`;
    await s.ctx.modelUsage.rollup();
    s.clock.advance(5 * 3600_000);
    await s.ctx.modelUsage.rollup();
    expect(json<ModelStats>(await get(s.app, range, u.token)).total).toEqual(expected);

    // Past the retention (30 days here) the calls go; their sums stay. (The session has expired by then: the service is asked directly.)
    s.clock.advance(31 * DAY);
    await s.ctx.modelUsage.rollup();
    expect(await s.ctx.modelUsage.purge()).toBeGreaterThanOrEqual(4);
    expect(await s.ctx.db.select().from(modelCalls).where(eq(modelCalls.payerId, u.user.id))).toEqual([]);
    const viewer = { id: u.user.id, isChild: false };
    expect((await s.ctx.modelUsage.stats(viewer, { from: today, to: today })).total).toEqual(expected);
    const day = await s.ctx.modelUsage.calls(viewer, { page: 1, pageSize: 20, date: today });
    expect(day).toMatchObject({ items: [], total: 0, retentionDays: 30 });
  });

  it('lists a day of calls with their sums, and refuses bad ranges with a clear message', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '5');
    const k = json<{ secret: string }>(await post(s.app, API.modelKeys, { name: 'bill' }, u.token));
    for (let i = 0; i < 3; i++) await chat(client(k.secret), 6, `q${i}`);
    const today = json<ModelStats>(await get(s.app, API.modelStats, u.token)).to;
    const page = json<ModelCallPage>(await get(s.app, `${API.modelCalls}?date=${today}&pageSize=2`, u.token));
    expect(page.items).toHaveLength(2);
    expect(page.total).toBe(3);
    expect(page.sums.requests).toBe(3);
    expect(BigInt(page.sums.cost)).toBe(yuanToUnits('5') - (await cash(u.user.id)));
    // Someone else sees none of them.
    const other = await registerUser(s);
    expect(json<ModelCallPage>(await get(s.app, `${API.modelCalls}?date=${today}`, other.token)).total).toBe(0);

    const reversed = await get(s.app, `${API.modelStats}?from=2026-11-20&to=2026-11-01`, u.token);
    expect(reversed.statusCode).toBe(400);
    expect(json<{ message: string; detail?: string }>(reversed).detail ?? json(reversed).message).toContain('开始日期不能晚于结束日期');
    const tooLong = await get(s.app, `${API.modelStats}?from=2026-01-01&to=2026-11-01`, u.token);
    expect(tooLong.statusCode).toBe(400);
    expect(JSON.stringify(json(tooLong))).toContain('一次最多查询 92 天');
    expect((await get(s.app, `${API.modelCalls}?date=2026-13-45`, u.token)).statusCode).toBe(400);
  });

  it('keeps the playground conversations per user: save, list, reopen, update, delete', async () => {
    const u = await registerUser(s);
    const other = await registerUser(s);
    const id = randomUUID();
    const path = API.modelConversation.replace(':id', id);
    const body = {
      title: '第一个会话',
      model: 'qwen-mini-sim',
      system: '你是助手',
      temperature: 0.5,
      maxTokens: 256,
      messages: [
        { role: 'user', content: '你好' },
        { role: 'assistant', content: '你好！', usage: { promptTokens: 5, completionTokens: 3, cost: '1' } },
      ],
    };
    expect((await put(s.app, path, body, u.token)).statusCode).toBe(200);
    const list = json<{ list: { id: string; messageCount: number }[] }>(await get(s.app, API.modelConversations, u.token)).list;
    expect(list).toEqual([expect.objectContaining({ id, title: '第一个会话', messageCount: 2 })]);
    expect(json<Conversation>(await get(s.app, path, u.token))).toMatchObject({ ...body, id });

    await put(s.app, path, { ...body, messages: [...body.messages, { role: 'user', content: '再见' }] }, u.token);
    expect(json<Conversation>(await get(s.app, path, u.token)).messages).toHaveLength(3);

    // Another account can neither read nor overwrite it.
    expect((await get(s.app, path, other.token)).statusCode).toBe(404);
    expect((await put(s.app, path, body, other.token)).statusCode).toBe(404);
    expect(json(await get(s.app, API.modelConversations, other.token)).list).toEqual([]);

    const bad = await put(s.app, path, { ...body, temperature: 3 }, u.token);
    expect(bad.statusCode).toBe(400);
    expect(JSON.stringify(json(bad))).toContain('温度须在 0 到 2 之间');
    const unknownModel = await put(s.app, API.modelConversation.replace(':id', randomUUID()), { ...body, model: 'no-such-model' }, u.token);
    expect(unknownModel.statusCode).toBe(400);

    expect((await del(s, path, u.token)).statusCode).toBe(200);
    expect((await get(s.app, path, u.token)).statusCode).toBe(404);
    expect((await del(s, path, u.token)).statusCode).toBe(404);
    const counted = (await s.ctx.db.execute(sql`select count(*)::int as n from model_conversations where user_id = ${u.user.id}`)) as unknown as {
      rows: { n: number }[];
    };
    expect(counted.rows[0]!.n).toBe(0);
  });
});
