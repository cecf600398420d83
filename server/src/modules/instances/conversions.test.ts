import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { yuanToUnits, type ConversionQuote, type Order, type PrepaidRefundQuote } from '@console/contract';
import { countRows, get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { instanceOperations, instances, orders, users } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const yuan = yuanToUnits;
const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const LIST = '/upgpu/api/v2.1/instances';
const GPU_ORDER = '/infra/api/v2.1/gpu/order';
const DELAYS = { create: 4000, boot: 3000, start: 3000, stop: 2000, restart: 4000, destroy: 2000 };
/** RTX 4090 Month: list 1425.60 × 0.7. */
const MONTH_PRICE = yuan('997.92');

describe('conversions: day to month, post-paid to long-term rental', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      },
    });
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });

  async function fund(userId: string, amount: string) {
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan(amount) },
        { account: { userId, kind: 'cash' }, amount: yuan(amount) },
      ],
    });
  }
  const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
  const row = async (id: string) => (await s.ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!;
  const orderRow = async (uid: string) => (await s.ctx.db.select().from(orders).where(eq(orders.orderUid, uid)))[0]!;
  const ops = (id: string, action: string) =>
    s.ctx.db
      .select()
      .from(instanceOperations)
      .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, action)));
  const pay = (token: string, uid: string) => post(s.app, `/order/api/v2.1/gpu/order/${uid}/pay`, { method: 'Balance' }, token);
  async function settle(ms: number) {
    s.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  async function pickHost(): Promise<string> {
    const q = json<{ placement: { hostId: string } }>(
      await post(s.app, '/infra/api/v2.1/gpu/order/price', { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1 }),
    );
    return q.placement.hostId;
  }
  /** A Day (or Month) RTX 4090 bought for `price` yuan from the balance, brought to Running. */
  async function prepaid(token: string, cycle: 'Day' | 'Month', price?: string) {
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: await pickHost(), cycle, duration: 1 }, token));
    if (price)
      await s.ctx.db
        .update(orders)
        .set({ amount: yuan(price) })
        .where(eq(orders.orderUid, order.orderUid));
    const paid = await pay(token, order.orderUid);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    const id = (await orderRow(order.orderUid)).resourceId!;
    const boughtAt = s.clock.now().getTime();
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    expect((await row(id)).status).toBe('Running');
    return { id, boughtAt };
  }
  /** A post-paid RTX 4090 (¥1.98/h) brought to Running; returns when its metering started. */
  async function usage(token: string) {
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, token));
    const id = (await orderRow(order.orderUid)).resourceId!;
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    const r = await row(id);
    expect(r.status).toBe('Running');
    return { id, usageOrderUid: order.orderUid, since: r.meterSince!.getTime() };
  }
  const setTo = (t: number) => {
    const d = t - s.clock.now().getTime();
    expect(d).toBeGreaterThanOrEqual(0);
    s.clock.advance(d);
  };

  // --- day to month -----------------------------------------------------------------------

  it('Day ¥10 bought for 1 day, converted after 6 h to Month ¥997.92: pays 997.92 − 7.5 = ¥990.42, once; expireAt = payment + 30 days', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '1100');
    const { id, boughtAt } = await prepaid(u.token, 'Day', '10');
    setTo(boughtAt + 6 * HOUR);

    const q = json<ConversionQuote>(await get(s.app, `${LIST}/${id}/day-to-month/price`, u.token));
    expect(q).toMatchObject({ cycle: 'Month', duration: 1, credit: String(yuan('7.5')), creditHours: 18, total: String(MONTH_PRICE - yuan('7.5')) });
    expect(q.lines.at(-1)).toMatchObject({ kind: 'credit', amount: String(-yuan('7.5')) });

    // Concurrent and repeated requests: one order (one unpaid order per account).
    const created = await Promise.all([
      post(s.app, `${LIST}/${id}/day-to-month`, undefined, u.token),
      post(s.app, `${LIST}/${id}/day-to-month`, undefined, u.token),
    ]);
    const ok = created.filter((r) => r.statusCode === 200);
    expect(ok).toHaveLength(1);
    expect(json(created.find((r) => r.statusCode !== 200)!)).toMatchObject({ code: 40011007 });
    const order = json<Order>(ok[0]!);
    expect(order).toMatchObject({ type: 'DayToMonth', status: 'Unpaid', amount: String(yuan('990.42')) });
    expect(json(await post(s.app, `${LIST}/${id}/day-to-month`, undefined, u.token))).toMatchObject({ code: 40011007 });

    const before = await cash(u.user.id);
    expect(json(await pay(u.token, order.orderUid))).toMatchObject({ status: 'Success' });
    expect(before - (await cash(u.user.id))).toBe(yuan('990.42'));
    const r = await row(id);
    expect(r.cycle).toBe('Month');
    expect(r.status).toBe('Running');
    expect(r.expireAt!.getTime()).toBe(s.clock.now().getTime() + 720 * HOUR);

    // Applied once: a replayed fulfilment (or two at once) changes nothing more.
    const o = await orderRow(order.orderUid);
    await Promise.all([s.ctx.conversions.apply(o), s.ctx.conversions.apply(o)]);
    expect((await row(id)).expireAt).toEqual(r.expireAt);
    const logged = await ops(id, 'dayToMonth');
    expect(logged).toHaveLength(1);
    expect(logged[0]!.detail).toContain(order.orderUid);
    expect(json(await pay(u.token, order.orderUid))).toMatchObject({ code: 40020005 });

    // Now a Month instance: no second conversion. Its refund counts from the conversion order only.
    expect(json(await get(s.app, `${LIST}/${id}/day-to-month/price`, u.token))).toMatchObject({ code: 40024001 });
    await post(s.app, `${LIST}/${id}/stop`, undefined, u.token);
    await settle(DELAYS.stop);
    const refund = json<PrepaidRefundQuote>(await get(s.app, `${LIST}/${id}/refund/price`, u.token));
    expect(refund).toMatchObject({ totalDays: 30, paid: String(yuan('990.42')), unusedDays: 29 });
  });

  it('a renewal between ordering and paying fails the conversion and refunds it whole (credit fixed at ordering: 12 h left of ¥10 = ¥5)', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '1200');
    const { id, boughtAt } = await prepaid(u.token, 'Day', '10');
    setTo(boughtAt + 12 * HOUR);
    const order = json<Order>(await post(s.app, `${LIST}/${id}/day-to-month`, undefined, u.token));
    expect(order.amount).toBe(String(MONTH_PRICE - yuan('5')));
    // A renewal from elsewhere (auto-renew) moves the expiry.
    await s.ctx.db
      .update(instances)
      .set({ expireAt: new Date((await row(id)).expireAt!.getTime() + 24 * HOUR) })
      .where(eq(instances.id, id));
    const before = await cash(u.user.id);
    await pay(u.token, order.orderUid);
    expect((await orderRow(order.orderUid)).status).toBe('Refunded');
    expect(await cash(u.user.id)).toBe(before);
    expect((await row(id)).cycle).toBe('Day');
    expect(await ops(id, 'dayToMonth')).toHaveLength(0);
  });

  it('refuses bad input and the wrong cycle or category permission, writing nothing', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '2000');
    const month = await prepaid(u.token, 'Month');
    const post_ = await usage(u.token);
    const ordersBefore = await countRows(s, 'orders');
    expect(json(await get(s.app, `${LIST}/not-a-uuid/day-to-month/price`, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/${randomUUID()}/day-to-month`, undefined, u.token))).toMatchObject({ code: 40400004 });
    expect(json(await post(s.app, `${LIST}/${month.id}/day-to-month`, undefined, u.token))).toMatchObject({ code: 40024001 });
    expect(json(await post(s.app, `${LIST}/${post_.id}/day-to-month`, undefined, u.token))).toMatchObject({ code: 40024001 });
    expect(json(await post(s.app, `${LIST}/${month.id}/transfer-to-long`, { cycle: 'Month', duration: 1 }, u.token))).toMatchObject({ code: 40024002 });
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long`, { cycle: 'Day', duration: 1 }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long`, { cycle: 'Month', duration: 0 }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long/price`, { cycle: 'Week', duration: 'x' }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long`, {}, u.token))).toMatchObject({ code: 40000001 });
    // A child without the GPU manage permission may not convert; with it, it may.
    const child = await registerUser(s);
    await s.ctx.db
      .update(users)
      .set({ isChild: true, parentId: u.user.id, childName: 'ops', gpu: false, app: true, finance: true })
      .where(eq(users.id, child.user.id));
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long`, { cycle: 'Month', duration: 1 }, child.token))).toMatchObject({ code: 40300002 });
    expect(json(await get(s.app, `${LIST}/${month.id}/day-to-month/price`, child.token))).toMatchObject({ code: 40300002 });
    // Arrears first.
    await s.ctx.db
      .update(instances)
      .set({ arrears: yuan('1') })
      .where(eq(instances.id, post_.id));
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long`, { cycle: 'Month', duration: 1 }, u.token))).toMatchObject({ code: 40024004 });
    await s.ctx.db.update(instances).set({ arrears: 0n }).where(eq(instances.id, post_.id));
    expect(await countRows(s, 'orders')).toBe(ordersBefore);
    expect((await row(post_.id)).cycle).toBe('Usage');
    await s.ctx.db.update(users).set({ gpu: true }).where(eq(users.id, child.user.id));
    expect(json(await post(s.app, `${LIST}/${post_.id}/transfer-to-long/price`, { cycle: 'Week', duration: 2 }, child.token))).toMatchObject({
      cycle: 'Week',
      duration: 2,
      credit: '0',
    });
  });

  // --- post-paid to long-term rental --------------------------------------------------------

  it('a running post-paid instance (¥1.98/h) becomes Month: 90 min settled (¥2.97) at ordering, 10 more (¥0.33) at payment, then ¥997.92 and no more metering', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '1100');
    const { id, usageOrderUid, since } = await usage(u.token);
    const start = await cash(u.user.id);
    setTo(since + 90 * MIN);
    const q = json<ConversionQuote>(await post(s.app, `${LIST}/${id}/transfer-to-long/price`, { cycle: 'Month', duration: 1 }, u.token));
    expect(q).toMatchObject({ cycle: 'Month', duration: 1, total: String(MONTH_PRICE), credit: '0' });
    expect(start - (await cash(u.user.id))).toBe(0n); // a quote charges nothing

    const order = json<Order>(await post(s.app, `${LIST}/${id}/transfer-to-long`, { cycle: 'Month', duration: 1 }, u.token));
    expect(order).toMatchObject({ type: 'TransferToLong', amount: String(MONTH_PRICE) });
    expect(start - (await cash(u.user.id))).toBe(yuan('2.97'));
    expect(json(await post(s.app, `${LIST}/${id}/transfer-to-long`, { cycle: 'Month', duration: 1 }, u.token))).toMatchObject({ code: 40011007 });

    setTo(since + 100 * MIN);
    expect(json(await pay(u.token, order.orderUid))).toMatchObject({ status: 'Success' });
    expect(start - (await cash(u.user.id))).toBe(yuan('3.30') + MONTH_PRICE);
    const r = await row(id);
    expect(r).toMatchObject({ cycle: 'Month', status: 'Running', meterSince: null, meterSegment: null, meterRate: 0n, diskBilledUntil: null, arrears: 0n });
    expect(r.expireAt!.getTime()).toBe(s.clock.now().getTime() + 720 * HOUR);
    expect((await orderRow(usageOrderUid)).status).toBe('Success');

    // Not metered any more; a replayed fulfilment changes nothing.
    s.clock.advance(2 * HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect(start - (await cash(u.user.id))).toBe(yuan('3.30') + MONTH_PRICE);
    await s.ctx.conversions.apply(await orderRow(order.orderUid));
    expect((await row(id)).expireAt).toEqual(r.expireAt);
    expect(await ops(id, 'transferToLong')).toHaveLength(1);
    expect(json(await post(s.app, `${LIST}/${id}/transfer-to-long/price`, { cycle: 'Month', duration: 1 }, u.token))).toMatchObject({ code: 40024002 });
  });
});
