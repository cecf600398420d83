import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { API, yuanToUnits, type OperatorUser } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { ledgerTransfers, users } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const CREDIT = '/api/v1/operator/credit';

describe('operator credit', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    s.ctx.localOperatorToken = 'local-secret-token';
  });
  afterAll(async () => s.close());

  const call = (body: object, headers: Record<string, string> = {}) => s.app.inject({ method: 'POST', url: CREDIT, payload: body, headers });
  const local = { 'x-operator-token': 'local-secret-token' };

  it('credits cash with the reason on the ledger, once per request id, from the local command', async () => {
    const u = await registerUser(s);
    const body = { mobile: u.mobile, amount: '25.50', reason: '服务中断补偿', requestId: randomUUID() };
    const first = json(await call(body, local));
    expect(first).toMatchObject({ to: 'cash', amount: String(yuanToUnits('25.5')), balance: String(yuanToUnits('25.5')), replayed: false });
    expect(json(await call(body, local))).toMatchObject({ replayed: true, balance: String(yuanToUnits('25.5')) });
    const [t] = await s.ctx.db
      .select()
      .from(ledgerTransfers)
      .where(eq(ledgerTransfers.idempotencyKey, `operator-credit:${body.requestId}`));
    expect(t).toMatchObject({ kind: 'compensation', memo: '平台补偿：服务中断补偿' });
    const gift = json(await call({ ...body, amount: '8', to: 'gift', requestId: randomUUID() }, local));
    expect(gift).toMatchObject({ to: 'gift', balance: String(yuanToUnits('8')) });
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('lets a logged-in operator credit, recording who did it, and refuses everyone else', async () => {
    const target = await registerUser(s);
    const op = await registerUser(s);
    const plain = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, op.user.id));
    const body = { mobile: target.mobile, amount: '3', reason: '工单 #1024', requestId: randomUUID() };
    expect((await call(body, { authorization: `Bearer ${op.token}` })).statusCode).toBe(200);
    const [t] = await s.ctx.db
      .select()
      .from(ledgerTransfers)
      .where(eq(ledgerTransfers.idempotencyKey, `operator-credit:${body.requestId}`));
    expect(t!.actorId).toBe(op.user.id);

    const denied = await call({ ...body, requestId: randomUUID() }, { authorization: `Bearer ${plain.token}` });
    expect(denied.statusCode).toBe(403);
    expect(json(denied).code).toBe(40300002);
    expect((await call({ ...body, requestId: randomUUID() })).statusCode).toBe(401);
    expect(json(await call({ ...body, requestId: randomUUID() }, { 'x-operator-token': 'guess' })).code).toBe(40300002);
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('3'));
  });

  it('refuses bad input and unknown numbers, crediting nothing', async () => {
    const u = await registerUser(s);
    const ok = { mobile: u.mobile, amount: '1', reason: '测试补偿', requestId: randomUUID() };
    for (const [patch, code, detail] of [
      [{ amount: '-1' }, 40000001, /^amount/],
      [{ amount: '0' }, 40000001, /金额须大于 0/],
      [{ amount: '1.001' }, 40000001, /^amount/],
      [{ reason: 'x' }, 40000001, /^reason/],
      [{ to: 'voucher' }, 40000001, /^to/],
      [{ requestId: 'r1' }, 40000001, /^requestId/],
      [{ mobile: '13912345678' }, 40400002, /未注册/],
    ] as const) {
      const res = await call({ ...ok, ...patch }, local);
      expect(json(res).code, JSON.stringify(patch)).toBe(code);
      expect(json(res).detail).toMatch(detail);
    }
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(0n);
  });
});

describe('operator role', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    s.ctx.localOperatorToken = 'local-secret-token';
  });
  afterAll(async () => s.close());

  const role = (body: object, headers: Record<string, string> = {}) => s.app.inject({ method: 'POST', url: API.operatorRole, payload: body, headers });
  const local = { 'x-operator-token': 'local-secret-token' };

  it('is given and taken by the local command, and applies to the holder’s next request', async () => {
    const u = await registerUser(s);
    const area = () => get(s.app, `${API.operatorReviews}?kind=enterprise`, u.token);
    expect((await area()).statusCode).toBe(403);
    expect(json(await role({ mobile: u.mobile, isOperator: true }, local))).toEqual({ userId: u.user.id, mobile: u.mobile, isOperator: true });
    expect((await area()).statusCode).toBe(200);
    expect(json(await get(s.app, API.meInfo, u.token))).toMatchObject({ isOperator: true });
    expect(json(await role({ mobile: u.mobile, isOperator: false }, local))).toMatchObject({ isOperator: false });
    expect(json(await area())).toMatchObject({ code: 40300002 });
  });

  it('refuses operators, users, guessed tokens and bad input, changing nobody', async () => {
    const op = await registerUser(s);
    const plain = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, op.user.id));
    const body = { mobile: plain.mobile, isOperator: true };
    expect(json(await role(body, { authorization: `Bearer ${op.token}` }))).toMatchObject({
      code: 40300002,
      detail: expect.stringContaining('npm run operator'),
    });
    expect(json(await role(body, { authorization: `Bearer ${plain.token}` }))).toMatchObject({ code: 40300002 });
    expect(json(await role(body, { 'x-operator-token': 'guess' }))).toMatchObject({ code: 40300002 });
    expect((await role(body)).statusCode).toBe(401);
    expect(json(await role({ mobile: '123', isOperator: true }, local))).toMatchObject({ code: 40000001 });
    expect(json(await role({ mobile: plain.mobile, isOperator: 'yes' }, local))).toMatchObject({ code: 40000001 });
    expect(json(await role({ mobile: '13912345678', isOperator: true }, local))).toMatchObject({ code: 40400002, detail: expect.stringContaining('未注册') });
    expect(json(await get(s.app, API.meInfo, plain.token))).toMatchObject({ isOperator: false });
  });
});

describe('operator users list', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it("counts each main account's own live children, whatever the page", async () => {
    const op = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, op.user.id));
    const busy = await registerUser(s);
    const single = await registerUser(s);
    const none = await registerUser(s);
    const child = async (parentToken: string, childName: string) => {
      const res = await post(s.app, API.children, { childName, password: 'Kid12345' }, parentToken);
      expect(res.statusCode, res.body).toBe(200);
      return json<{ id: string }>(res).id;
    };
    await child(busy.token, 'kid_a1');
    await child(busy.token, 'kid_a2');
    const gone = await child(busy.token, 'kid_a3');
    await s.app.inject({ method: 'DELETE', url: API.child.replace(':id', gone), headers: { authorization: `Bearer ${busy.token}` } });
    await child(single.token, 'kid_b1');

    const list = async (query: string) => json<{ items: OperatorUser[]; total: number }>(await get(s.app, `${API.operatorUsers}?${query}`, op.token));
    const all = await list('page=1&pageSize=50');
    const count = (items: OperatorUser[], id: string) => items.find((u) => u.id === id)?.children;
    expect(all.items.map((u) => u.id)).not.toContain(gone);
    expect([count(all.items, busy.user.id), count(all.items, single.user.id), count(all.items, none.user.id)]).toEqual([2, 1, 0]);
    expect((await list(`q=${busy.mobile}&page=1&pageSize=10`)).items).toMatchObject([{ id: busy.user.id, children: 2 }]);
    // One per page: each row still counts its own children.
    const pages = await Promise.all([1, 2, 3, 4].map((page) => list(`page=${page}&pageSize=1`)));
    expect(pages.map((p) => p.items[0]!.children)).toEqual([0, 1, 2, 0]);
  });
});
