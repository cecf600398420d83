import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { API, beijingMonthStart, orderPath, yuanToUnits, type Child, type Instance, type Order, type PermissionFlag, type SpendLimit } from '@console/contract';
import { countRows, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { instances } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const yuan = yuanToUnits;
const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const CHILD_PASSWORD = 'Kid12345';
const DELAYS = { create: 1000, boot: 1000, start: 1000, stop: 1000, restart: 1000, destroy: 1000 };
const DAY_GPU = { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1 };
const POSTPAID_GPU = { ...DAY_GPU, cycle: 'Usage' };

/** A parent's spending limit on a child: enforced on every payment, post-paid start and billing tick. */
describe('child spending limits', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
        BILLING_TICK_SECONDS: '60',
      },
    });
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  async function fundedParent(amount = '500') {
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan(amount) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuan(amount) },
      ],
    });
    return u;
  }
  async function child(parent: { token: string; mobile: string }, childName: string, spendLimit: SpendLimit | null) {
    const permissions: Partial<Record<PermissionFlag, boolean>> = { createGPUInstance: true, gpu: true };
    const made = await post(s.app, API.children, { childName, password: CHILD_PASSWORD, permissions, spendLimit }, parent.token);
    expect(made.statusCode, made.body).toBe(200);
    expect(json<Child>(made).spendLimit).toEqual(spendLimit);
    const login = await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName, password: CHILD_PASSWORD });
    return { id: json<Child>(made).id, token: json<{ token: string }>(login).token };
  }
  const setLimit = (parentToken: string, childId: string, spendLimit: SpendLimit | null) =>
    put(s.app, API.child.replace(':id', childId), { spendLimit }, parentToken);
  const spentOf = async (parentToken: string, childId: string) =>
    json<{ items: Child[] }>(await get(s.app, API.children, parentToken)).items.find((c) => c.id === childId)!.spent;
  const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
  async function settle(ms: number) {
    s.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  const status = async (id: string) => (await s.ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!.status;

  it('refuses a payment past the limit, balance or QR, and nothing changes; the parent sees the spend', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'buyer', { amount: String(yuan('40')), period: 'Month' });
    const order = json<Order>(await post(s.app, API.gpuOrderCreate, DAY_GPU, kid.token));
    const price = BigInt(order.amount);
    expect(price).toBeGreaterThan(yuan('40'));
    const before = await cash(parent.user.id);
    const instancesBefore = await countRows(s, 'instances');

    const refused = await post(s.app, orderPath('Personal', order.orderUid, '/pay'), { method: 'Balance' }, kid.token);
    expect(refused.statusCode).toBe(403);
    expect(json(refused)).toMatchObject({ code: 40330102, detail: expect.stringContaining('本月额度 40.00 元，已用 0.00 元，剩余 40.00 元') });
    expect(json(await post(s.app, orderPath('Personal', order.orderUid, '/pay'), { method: 'Alipay' }, kid.token))).toMatchObject({ code: 40330102 });
    // The parent's money, the order and the fleet are as they were; no QR was opened.
    expect(await cash(parent.user.id)).toBe(before);
    expect(json<Order>(await get(s.app, orderPath('Personal', order.orderUid), kid.token)).status).toBe('Unpaid');
    expect(await countRows(s, 'instances')).toBe(instancesBefore);
    expect(json(await get(s.app, orderPath('Personal', order.orderUid, '/pay'), kid.token)).payment).toBeNull();
    // Paying the child's order from the parent's session is the child's spend all the same.
    expect(json(await post(s.app, orderPath('Personal', order.orderUid, '/pay'), { method: 'Balance' }, parent.token))).toMatchObject({ code: 40330102 });

    // A higher limit lets the same payment through; the parent's child list shows what it cost.
    expect((await setLimit(parent.token, kid.id, { amount: String(yuan('50')), period: 'Month' })).statusCode).toBe(200);
    const paid = await post(s.app, orderPath('Personal', order.orderUid, '/pay'), { method: 'Balance' }, kid.token);
    expect(paid.statusCode, paid.body).toBe(200);
    expect(before - (await cash(parent.user.id))).toBe(price);
    expect(await spentOf(parent.token, kid.id)).toEqual({ month: String(price), total: String(price) });

    // What is left (50 − 45.14) does not pay a second day.
    const second = json<Order>(await post(s.app, API.gpuOrderCreate, DAY_GPU, kid.token));
    expect(json(await post(s.app, orderPath('Personal', second.orderUid, '/pay'), { method: 'Balance' }, kid.token))).toMatchObject({
      code: 40330102,
      detail: expect.stringContaining('剩余 4.86 元'),
    });
    // Unlimited again: it pays.
    await setLimit(parent.token, kid.id, null);
    expect((await post(s.app, orderPath('Personal', second.orderUid, '/pay'), { method: 'Balance' }, kid.token)).statusCode).toBe(200);
    expect(await spentOf(parent.token, kid.id)).toEqual({ month: String(2n * price), total: String(2n * price) });
  });

  it('refuses a post-paid purchase when an hour of it does not fit the limit, creating nothing', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'renter', { amount: String(yuan('1')), period: 'Total' });
    const [orders, machines] = [await countRows(s, 'orders'), await countRows(s, 'instances')];
    const res = await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, kid.token);
    expect(json(res)).toMatchObject({ code: 40330102, detail: expect.stringContaining('累计额度 1.00 元') });
    expect([await countRows(s, 'orders'), await countRows(s, 'instances')]).toEqual([orders, machines]);
  });

  it('two post-paid purchases racing for one limit: the hour of the first counts against the second', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'racer', { amount: String(yuan('3')), period: 'Total' });
    const machines = await countRows(s, 'instances');
    const answers = await Promise.all([1, 2].map(() => post(s.app, API.gpuOrderCreate, POSTPAID_GPU, kid.token)));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 403]);
    expect(json(answers.find((r) => r.statusCode === 403)!)).toMatchObject({
      code: 40330102,
      detail: expect.stringContaining('已在运行的按量实例预留 1 小时'),
    });
    expect(await countRows(s, 'instances')).toBe(machines + 1);
  });

  it('stops a child’s post-paid instance at its limit on a tick; a new Beijing month gives the room back', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'trainer', { amount: String(yuan('3')), period: 'Month' });
    const before = await cash(parent.user.id);
    expect((await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, kid.token)).statusCode).toBe(200);
    const [inst] = json<{ items: Instance[] }>(await get(s.app, API.instances, kid.token)).items;
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    expect(await status(inst!.id)).toBe('Running');

    // An hour at ¥1.98 fits the ¥3 limit: it keeps running.
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect(await status(inst!.id)).toBe('Running');
    // Half an hour more is past it: the tick stops the instance, as an empty balance would.
    s.clock.advance(31 * MIN);
    await s.ctx.instanceBilling.meterTick();
    expect(await status(inst!.id)).toBe('Stopping');
    await settle(DELAYS.stop);
    expect(await status(inst!.id)).toBe('Stopped');
    const log = json<{ items: { action: string; detail: string }[] }>(await get(s.app, `${API.operationLogs}?filterBy=instance,${inst!.id}`, parent.token));
    expect(log.items.find((i) => i.action === 'stop')!.detail).toContain('子账号 trainer 本月额度 3.00 元');
    const spent = await spentOf(parent.token, kid.id);
    expect(spent.month).toBe(String(before - (await cash(parent.user.id))));
    expect(BigInt(spent.month)).toBeGreaterThanOrEqual(yuan('3'));
    // Started again within the month: refused, nothing charged.
    expect(json(await post(s.app, `${API.instances}/${inst!.id}/start`, undefined, kid.token))).toMatchObject({ code: 40330102 });

    // The next Beijing month (a week on, so both log in again): the monthly spend starts from zero, the total stays.
    s.clock.advance(beijingMonthStart(new Date(beijingMonthStart(s.clock.now()).getTime() + 32 * 24 * HOUR)).getTime() - s.clock.now().getTime());
    parent.token = json<{ token: string }>(await post(s.app, API.login, { account: parent.mobile, password: parent.password })).token;
    kid.token = json<{ token: string }>(
      await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName: 'trainer', password: CHILD_PASSWORD }),
    ).token;
    expect(await spentOf(parent.token, kid.id)).toEqual({ month: '0', total: spent.month });
    // A total limit of the same amount is still spent...
    await setLimit(parent.token, kid.id, { amount: String(yuan('3')), period: 'Total' });
    expect(json(await post(s.app, `${API.instances}/${inst!.id}/start`, undefined, kid.token))).toMatchObject({ code: 40330102 });
    // ...the monthly one has room again.
    await setLimit(parent.token, kid.id, { amount: String(yuan('3')), period: 'Month' });
    expect(json<Instance>(await post(s.app, `${API.instances}/${inst!.id}/start`, undefined, kid.token)).status).toBe('Starting');
    await settle(DELAYS.start);
  });

  it('validates the limit the parent sets', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'checked', null);
    for (const bad of [
      { amount: '-1', period: 'Month' },
      { amount: '12.5', period: 'Month' },
      { amount: '100', period: 'Week' },
      { amount: 100, period: 'Total' },
    ]) {
      expect(json(await setLimit(parent.token, kid.id, bad as unknown as SpendLimit))).toMatchObject({ code: 40000001 });
    }
    expect(json<Child>(await setLimit(parent.token, kid.id, { amount: '0', period: 'Total' })).spendLimit).toEqual({ amount: '0', period: 'Total' });
    // Only the parent sets it.
    expect(json(await setLimit(kid.token, kid.id, null))).toMatchObject({ code: 40300005 });
  });
});
