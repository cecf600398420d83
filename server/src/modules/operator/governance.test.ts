/**
 * Operator roles, the audit trail and money moves that need a second operator (issue 32): who may
 * call each operator endpoint, what a 客服's large credit waits for, that an approval moves money
 * once, that every action leaves an audit row, and that nobody can edit the audit table.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { API, yuanToUnits, type AuditEntry, type MoneyMoveResult, type MoneyRequest, type OperatorRole } from '@console/contract';
import { countRows, get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { operatorAudit } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const LOCAL = { 'x-operator-token': 'governance-token' };
const uuid = randomUUID();
const channel = { name: '内置模型', kind: 'embedded', models: ['qwen-mini-sim'], priority: 0, weight: 1, enabled: true };
const image = { reference: 'ai/cuda-pytorch:2.3', name: 'PyTorch 2.3 · 运营方', kind: 'system', categories: ['Gpu', 'Generic'] };

/** Each operator endpoint with a valid request, and a role that must not pass it. */
const ENDPOINTS: { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; body?: object; wrong: OperatorRole | 'cli-only' }[] = [
  { method: 'GET', url: API.operatorAccounts, wrong: 'finance' },
  { method: 'POST', url: API.operatorRoleGrant, body: { mobile: '13800000000', role: 'ops' }, wrong: 'finance' },
  { method: 'POST', url: API.operatorRoleRevoke, body: { mobile: '13800000000', role: 'ops' }, wrong: 'support' },
  { method: 'GET', url: API.operatorAudit, wrong: 'ops' },
  { method: 'POST', url: API.operatorMoney, body: { mobile: '13800000000', amount: '1', reason: '测试补偿', requestId: uuid }, wrong: 'ops' },
  { method: 'GET', url: API.operatorMoneyRequests, wrong: 'ops' },
  { method: 'POST', url: API.operatorMoneyRequestApprove.replace(':id', uuid), body: {}, wrong: 'support' },
  { method: 'POST', url: API.operatorMoneyRequestReject.replace(':id', uuid), body: {}, wrong: 'ops' },
  { method: 'POST', url: API.operatorCredit, body: { mobile: '13800000000', amount: '1', reason: '测试补偿', requestId: uuid }, wrong: 'finance' },
  { method: 'POST', url: API.operatorRole, body: { mobile: '13800000000', isOperator: true }, wrong: 'admin' },
  { method: 'GET', url: `${API.operatorReviews}?kind=enterprise`, wrong: 'ops' },
  { method: 'POST', url: API.operatorReview.replace(':kind', 'enterprise').replace(':id', uuid), body: { decision: 'approve' }, wrong: 'finance' },
  { method: 'GET', url: API.operatorReviewImage.replace(':kind', 'enterprise').replace(':id', uuid), wrong: 'ops' },
  { method: 'GET', url: API.operatorUsers, wrong: 'ops' },
  { method: 'GET', url: API.operatorReviewLog, wrong: 'ops' },
  { method: 'GET', url: API.operatorModelChannels, wrong: 'finance' },
  { method: 'PUT', url: API.operatorModelChannel.replace(':id', 'embedded'), body: channel, wrong: 'finance' },
  { method: 'DELETE', url: API.operatorModelChannel.replace(':id', 'embedded'), wrong: 'support' },
  { method: 'PUT', url: API.operatorModel.replace(':id', 'qwen-mini-sim'), body: { active: true }, wrong: 'finance' },
  { method: 'GET', url: API.operatorImages, wrong: 'finance' },
  { method: 'POST', url: API.operatorImages, body: image, wrong: 'support' },
  { method: 'DELETE', url: API.operatorImage.replace(':id', 'reg-x'), wrong: 'finance' },
  { method: 'GET', url: API.operatorInvoices, wrong: 'ops' },
  { method: 'POST', url: API.operatorInvoiceIssue.replace(':id', uuid), body: { invoiceNo: '25332000000012345678' }, wrong: 'support' },
  { method: 'POST', url: API.operatorInvoiceReject.replace(':id', uuid), body: { reason: '抬头有误' }, wrong: 'ops' },
];

describe('operator roles and audit', () => {
  let s: TestServer;
  const people: Partial<Record<OperatorRole | 'plain', { token: string; mobile: string; user: { id: string } }>> = {};
  const as = (who: keyof typeof people) => people[who]!;

  beforeAll(async () => {
    s = await startTestServer({ env: { OPERATOR_APPROVAL_THRESHOLD_YUAN: '1000' } });
    s.ctx.localOperatorToken = LOCAL['x-operator-token'];
    for (const role of ['admin', 'finance', 'support', 'ops'] as const) {
      people[role] = await registerUser(s);
      const res = await s.app.inject({ method: 'POST', url: API.operatorRoleGrant, payload: { mobile: people[role].mobile, role }, headers: LOCAL });
      expect(res.statusCode, res.body).toBe(200);
    }
    people.plain = await registerUser(s);
  });
  afterAll(async () => s.close());

  const call = (e: (typeof ENDPOINTS)[number], headers: Record<string, string>) => s.app.inject({ method: e.method, url: e.url, payload: e.body, headers });
  const bearer = (who: keyof typeof people) => ({ authorization: `Bearer ${as(who).token}` });
  const audit = async (query: string) => json<{ items: AuditEntry[]; total: number }>(await get(s.app, `${API.operatorAudit}?${query}`, as('admin').token));
  const move = async (who: keyof typeof people, body: object) => {
    const res = await post(s.app, API.operatorMoney, { requestId: randomUUID(), reason: '工单补偿', ...body }, as(who).token);
    return { status: res.statusCode, body: json(res) };
  };

  it('refuses every operator endpoint to a visitor (401), a user (403) and a wrong role (403), with 40300002', async () => {
    for (const e of ENDPOINTS) {
      const what = `${e.method} ${e.url}`;
      expect((await call(e, {})).statusCode, what).toBe(401);
      expect(json(await call(e, bearer('plain'))), what).toMatchObject({ code: 40300002, detail: '需要运营方权限' });
      const wrong = json(await call(e, bearer(e.wrong as OperatorRole)));
      expect(wrong.code, what).toBe(40300002);
    }
  });

  it('answers each role its own permissions, and keeps a 财务 away from the model channels', async () => {
    const me = async (who: OperatorRole) => json<{ roles: string[]; permissions: string[] }>(await get(s.app, API.operatorMe, as(who).token));
    expect(await me('finance')).toMatchObject({ roles: ['finance'], permissions: expect.arrayContaining(['money.credit', 'invoices.manage']) });
    expect((await me('finance')).permissions).not.toContain('catalogue.manage');
    expect((await me('admin')).permissions).toContain('roles.manage');
    const edit = await s.app.inject({
      method: 'PUT',
      url: API.operatorModel.replace(':id', 'qwen-mini-sim'),
      payload: { sort: 5 },
      headers: bearer('finance'),
    });
    expect(json(edit)).toMatchObject({ code: 40300002, detail: expect.stringContaining('运维') });
    const byOps = await s.app.inject({ method: 'PUT', url: API.operatorModel.replace(':id', 'qwen-mini-sim'), payload: { sort: 5 }, headers: bearer('ops') });
    expect(byOps.statusCode, byOps.body).toBe(200);
    const [row] = (await audit(`action=model.update&actor=${as('ops').mobile}`)).items;
    expect(row).toMatchObject({ targetId: 'qwen-mini-sim', actor: as('ops').mobile, after: expect.objectContaining({ sort: 5 }) });
  });

  it('lets 管理员 grant and revoke roles (audited), and no one else; 管理员 cannot drop their own', async () => {
    const u = await registerUser(s);
    const grant = await post(s.app, API.operatorRoleGrant, { mobile: u.mobile, role: 'support', reason: '新入职客服' }, as('admin').token);
    expect(json(grant)).toMatchObject({ userId: u.user.id, roles: ['support'] });
    expect((await get(s.app, `${API.operatorUsers}?page=1`, u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, API.meInfo, u.token))).toMatchObject({ isOperator: true });
    expect(json(await post(s.app, API.operatorRoleGrant, { mobile: u.mobile, role: 'admin' }, u.token))).toMatchObject({ code: 40300002 });
    const list = json<{ items: { userId: string; roles: string[] }[] }>(await get(s.app, API.operatorAccounts, as('admin').token));
    expect(list.items.find((o) => o.userId === u.user.id)).toMatchObject({ roles: ['support'] });

    expect(json(await post(s.app, API.operatorRoleRevoke, { mobile: u.mobile, role: 'support' }, as('admin').token))).toMatchObject({ roles: [] });
    expect((await get(s.app, `${API.operatorUsers}?page=1`, u.token)).statusCode).toBe(403);
    expect(json(await get(s.app, API.meInfo, u.token))).toMatchObject({ isOperator: false });
    expect(json(await post(s.app, API.operatorRoleRevoke, { mobile: as('admin').mobile, role: 'admin' }, as('admin').token))).toMatchObject({
      code: 40332002,
    });

    const rows = (await audit(`target=${u.user.id}`)).items;
    expect(rows.map((r) => r.action)).toEqual(['role.revoke', 'role.grant']);
    expect(rows[1]).toMatchObject({ actor: as('admin').mobile, before: { roles: [] }, after: { roles: ['support'] }, reason: '新入职客服' });
    expect(rows[1]!.requestId).not.toBe('');
  });

  it('lets a 客服 credit under the threshold alone, but not over it: that waits for another operator', async () => {
    const target = await registerUser(s);
    expect(await move('support', { mobile: target.mobile, amount: '200' })).toMatchObject({
      status: 200,
      body: { state: 'done', balance: String(yuanToUnits('200')) },
    });
    const big = await move('support', { mobile: target.mobile, amount: '1500' });
    expect(big.body).toMatchObject({ state: 'pending', balance: null, request: { status: 'pending', amount: String(yuanToUnits('1500')) } });
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('200'));
    const id = (big.body as MoneyMoveResult).request!.id;
    const approve = (who: keyof typeof people) => post(s.app, API.operatorMoneyRequestApprove.replace(':id', id), {}, as(who).token);

    expect(json(await approve('support'))).toMatchObject({ code: 40300002 });
    const ok = await approve('finance');
    expect(json<MoneyRequest>(ok)).toMatchObject({ status: 'approved', decidedBy: as('finance').mobile, requestedBy: as('support').mobile });
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('1700'));
    expect(json(await approve('admin'))).toMatchObject({ code: 40932501 });
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('1700'));

    const actions = (await audit(`target=${id}`)).items.map((r) => r.action);
    expect(actions).toEqual(['money.approve', 'money.request']);
    expect((await audit(`target=${target.user.id}&action=money.credit`)).items).toMatchObject([{ actor: as('support').mobile, reason: '工单补偿' }]);
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('never lets a requester approve their own, and moves the money once when two approve at once', async () => {
    const target = await registerUser(s);
    const other = await registerUser(s);
    await s.app.inject({ method: 'POST', url: API.operatorRoleGrant, payload: { mobile: other.mobile, role: 'finance' }, headers: LOCAL });
    const req = (await move('finance', { mobile: target.mobile, amount: '5000' })).body as MoneyMoveResult;
    const url = API.operatorMoneyRequestApprove.replace(':id', req.request!.id);
    expect(json(await post(s.app, url, {}, as('finance').token))).toMatchObject({ code: 40332001 });
    const both = await Promise.all([post(s.app, url, {}, as('admin').token), post(s.app, url, {}, other.token)]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('5000'));

    // A rejected one moves nothing; a debit takes from cash.
    const second = (await move('support', { mobile: target.mobile, amount: '1200', direction: 'debit' })).body as MoneyMoveResult;
    const rejected = await post(s.app, API.operatorMoneyRequestReject.replace(':id', second.request!.id), { reason: '金额有误' }, as('finance').token);
    expect(json(rejected)).toMatchObject({ status: 'rejected', decisionReason: '金额有误' });
    expect(await move('admin', { mobile: target.mobile, amount: '1200', direction: 'debit' })).toMatchObject({ body: { state: 'done' } });
    expect((await s.ctx.ledger.balances(target.user.id)).cash).toBe(yuanToUnits('3800'));
    const pending = json<{ items: MoneyRequest[] }>(await get(s.app, `${API.operatorMoneyRequests}?status=pending`, as('finance').token));
    expect(pending.items.map((r) => r.id)).not.toContain(second.request!.id);
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('records the local command as 本机命令行 and searches by operator, action and time, page by page', async () => {
    const target = await registerUser(s);
    const res = await s.app.inject({
      method: 'POST',
      url: API.operatorCredit,
      payload: { mobile: target.mobile, amount: '3', reason: '本机补偿', requestId: randomUUID() },
      headers: LOCAL,
    });
    expect(res.statusCode, res.body).toBe(200);
    const cli = await audit('actor=cli&action=money.credit');
    expect(cli.items[0]).toMatchObject({ actor: '本机命令行', actorId: null, targetId: target.user.id, reason: '本机补偿' });
    const page1 = await audit('page=1&pageSize=2');
    const page2 = await audit('page=2&pageSize=2');
    expect(page1.items).toHaveLength(2);
    expect(page1.total).toBeGreaterThan(4);
    expect(page2.items[0]!.id).not.toBe(page1.items[0]!.id);
    expect((await audit(`from=${new Date(Date.now() + 86_400_000 * 365).toISOString()}`)).total).toBe(0);
    expect((await audit('actor=13999999999')).total).toBe(0);
    expect(json(await get(s.app, `${API.operatorAudit}?from=yesterday`, as('admin').token))).toMatchObject({ code: 40000001 });
  });

  it('keeps the audit table append-only: raw UPDATE, DELETE and TRUNCATE fail', async () => {
    const before = await countRows(s, 'operator_audit');
    expect(before).toBeGreaterThan(0);
    for (const statement of [sql`update operator_audit set reason = '改过'`, sql`delete from operator_audit`, sql`truncate operator_audit`]) {
      const refused = await s.ctx.db.execute(statement).then(
        () => null,
        (e: Error & { cause?: Error }) => e.cause?.message ?? e.message,
      );
      expect(refused).toMatch(/append-only/);
    }
    expect(await countRows(s, 'operator_audit')).toBe(before);
    expect(await s.ctx.db.select().from(operatorAudit).where(eq(operatorAudit.reason, '改过'))).toEqual([]);
  });
});
