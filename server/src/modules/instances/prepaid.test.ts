import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { yuanToUnits, type Instance, type Order, type PrepaidRefundQuote, type PrepaidRefundResult } from '@console/contract';
import { countRows, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { instances, orderPayments, orders, users, vouchers } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';
import { PrepaidService } from './prepaid.js';

const yuan = yuanToUnits;
const SEC = 1000;
const HOUR = 3600 * SEC;
const DAY = 24 * HOUR;
const LIST = '/upgpu/api/v2.1/instances';
const GPU_ORDER = '/infra/api/v2.1/gpu/order';
const DELAYS = { create: 4000, boot: 3000, start: 3000, stop: 2000, restart: 4000, destroy: 2000 };

describe('prepaid instances: auto-renew and refund of unused time', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
        AUTO_RENEW_LEAD_HOURS: '24',
      },
    });
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });

  async function fund(userId: string, amount: string, to: 'cash' | 'gift' = 'cash') {
    if (to === 'gift') {
      await s.ctx.db.transaction((tx) =>
        s.ctx.gifts.grant(tx, { userId, amount: yuan(amount), source: 'test', validDays: 90, key: `gift-${randomUUID()}`, memo: '测试赠送' }),
      );
      return;
    }
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan(amount) },
        { account: { userId, kind: 'cash' }, amount: yuan(amount) },
      ],
    });
  }
  /** The clock only moves forward. */
  const setTo = (t: number) => {
    const d = t - s.clock.now().getTime();
    expect(d).toBeGreaterThanOrEqual(0);
    s.clock.advance(d);
  };
  /** As if `t` were now for the instance (sessions last 7 days, so long waits move the instance's expiry back instead of the clock). */
  const ageTo = async (id: string, _boughtAt: number, t: number) => {
    const shift = t - s.clock.now().getTime();
    expect(shift).toBeGreaterThanOrEqual(0);
    const r = await row(id);
    await s.ctx.db
      .update(instances)
      .set({ expireAt: new Date(r.expireAt!.getTime() - shift) })
      .where(eq(instances.id, id));
  };
  const balances = (userId: string) => s.ctx.ledger.balances(userId);
  const row = async (id: string) => (await s.ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!;
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
  /** Buys a prepaid RTX 4090 (optionally at a set price) from the balance and brings it to Running. */
  async function prepaid(token: string, cycle: 'Day' | 'Month', opts: { price?: string } = {}) {
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: await pickHost(), cycle, duration: 1 }, token));
    if (opts.price)
      await s.ctx.db
        .update(orders)
        .set({ amount: yuan(opts.price) })
        .where(eq(orders.orderUid, order.orderUid));
    const paid = await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, token);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    const [o] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid));
    const id = o!.resourceId!;
    const boughtAt = s.clock.now().getTime();
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    expect((await row(id)).status).toBe('Running');
    return { id, boughtAt, orderUid: order.orderUid };
  }
  async function stop(token: string, id: string) {
    expect((await post(s.app, `${LIST}/${id}/stop`, undefined, token)).statusCode).toBe(200);
    await settle(DELAYS.stop);
    expect((await row(id)).status).toBe('Stopped');
  }
  const notices = async (mobile: string) => json<{ items: { text: string }[] }>(await get(s.app, `/dev/outbox?to=${mobile}`)).items.map((i) => i.text);
  const renewOrders = (userId: string) =>
    s.ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.userId, userId), eq(orders.type, 'Renew')));

  // --- auto-renew ---------------------------------------------------------------------------

  it('renews once, 12 h (half a Day; the lead time is 24 h) before expiry, from gift credit then cash; a repeated or concurrent tick renews once', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '200');
    const { id } = await prepaid(u.token, 'Day');
    const on = await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: true }, u.token);
    expect(json<Instance>(on)).toMatchObject({ id, autoRenew: true });
    const price = BigInt(json<{ total: string }>(await post(s.app, `${LIST}/${id}/renew/price`, { duration: 1 }, u.token)).total);
    await fund(u.user.id, '1', 'gift');
    const expireAt = (await row(id)).expireAt!.getTime();

    // More than the lead time before expiry: nothing.
    setTo(expireAt - 13 * HOUR);
    expect(await s.ctx.prepaid.autoRenewTick()).toBe(0);
    const before = await balances(u.user.id);
    setTo(expireAt - 11 * HOUR);
    const results = await Promise.all([s.ctx.prepaid.autoRenewTick(), s.ctx.prepaid.autoRenewTick()]);
    expect(results.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await s.ctx.prepaid.autoRenewTick()).toBe(0);
    expect((await row(id)).expireAt!.getTime()).toBe(expireAt + DAY);
    const after = await balances(u.user.id);
    expect(before.gift - after.gift).toBe(yuan('1'));
    expect(before.cash - after.cash).toBe(price - yuan('1'));
    const renewals = await renewOrders(u.user.id);
    expect(renewals).toHaveLength(1);
    expect(renewals[0]).toMatchObject({ status: 'Success', amount: price, payMethod: 'Balance' });
    const parts = await s.ctx.db.select().from(orderPayments).where(eq(orderPayments.orderId, renewals[0]!.id));
    expect(parts.map((p) => [p.source, p.amount])).toEqual([
      ['gift', yuan('1')],
      ['cash', price - yuan('1')],
    ]);
    // Past the old expiry the instance still runs; the operation log says who renewed.
    setTo(expireAt + HOUR);
    await s.ctx.instanceBilling.expiryTick();
    expect((await row(id)).status).toBe('Running');
    const log = json<{ items: { action: string; actorName: string }[] }>(await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, u.token));
    expect(log.items.find((i) => i.action === 'autoRenew')).toMatchObject({ actorName: '系统' });
    await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: false }, u.token);
  });

  it('with too little balance charges nothing, keeps the switch on, tells the owner once, and expiry stops the instance', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '200');
    const { id } = await prepaid(u.token, 'Day');
    await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: true }, u.token);
    // Spend down to almost nothing.
    const b = await balances(u.user.id);
    await s.ctx.ledger.post({
      key: `drain-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { userId: u.user.id, kind: 'cash' }, amount: -(b.cash - yuan('0.01')) },
        { account: { platform: 'compensation' }, amount: b.cash - yuan('0.01') },
      ],
    });
    const expireAt = (await row(id)).expireAt!;
    const before = await balances(u.user.id);
    setTo(expireAt.getTime() - 2 * HOUR);
    await s.ctx.prepaid.autoRenewTick();
    s.clock.advance(HOUR);
    await s.ctx.prepaid.autoRenewTick();
    expect(await balances(u.user.id)).toEqual(before);
    expect(await renewOrders(u.user.id)).toHaveLength(0);
    const r = await row(id);
    expect(r).toMatchObject({ autoRenew: true, expireAt });
    const texts = await notices(u.mobile);
    expect(texts.filter((t) => t.includes('自动续费失败'))).toHaveLength(1);
    // The normal expiry path takes over.
    setTo(expireAt.getTime() + SEC);
    await s.ctx.instanceBilling.expiryTick();
    await settle(DELAYS.stop);
    expect((await row(id)).status).toBe('Stopped');
    expect((await row(id)).releaseAt).not.toBeNull();
  });

  it('stops renewing once switched off; refuses post-paid instances and bad input', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '200');
    const { id } = await prepaid(u.token, 'Day');
    await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: true }, u.token);
    expect(json<Instance>(await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: false }, u.token)).autoRenew).toBe(false);
    const expireAt = (await row(id)).expireAt!;
    setTo(expireAt.getTime() - HOUR);
    await s.ctx.prepaid.autoRenewTick();
    expect((await row(id)).expireAt).toEqual(expireAt);

    const usage = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, u.token));
    const [uo] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, usage.orderUid));
    const usageId = uo!.resourceId!;
    const res = await put(s.app, `${LIST}/${usageId}/auto-renew`, { autoRenew: true }, u.token);
    expect(res.statusCode).toBe(400);
    expect(json(res)).toMatchObject({ code: 40023001 });
    expect(json(await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: 'yes' }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await put(s.app, `${LIST}/${id}/auto-renew`, {}, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await put(s.app, `${LIST}/not-a-uuid/auto-renew`, { autoRenew: true }, u.token))).toMatchObject({ code: 40000001 });
    expect((await row(usageId)).autoRenew).toBe(false);
  });

  // --- refund of unused time --------------------------------------------------------------

  it('refunds 20 of 30 days of a ¥300 month paid ¥50 gift + ¥250 cash in the same proportion, once, and releases the instance', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '250');
    await fund(u.user.id, '50', 'gift');
    const { id, boughtAt } = await prepaid(u.token, 'Month', { price: '300' });
    const spent = await balances(u.user.id);
    expect(spent).toMatchObject({ cash: 0n, gift: 0n });
    await stop(u.token, id);
    await ageTo(id, boughtAt, boughtAt + 10 * DAY);

    const quote = json<PrepaidRefundQuote>(await get(s.app, `${LIST}/${id}/refund/price`, u.token));
    expect(quote).toMatchObject({
      paid: String(yuan('300')),
      paidVoucher: '0',
      totalDays: 30,
      usedDays: 10,
      unusedDays: 20,
      // 250 × 20/30 = 166.6666…, 50 × 20/30 = 33.3333… (rounded down to 0.0001 yuan)
      toCash: '1666666',
      toGift: '333333',
      refundable: '1999999',
      fee: '0',
      refund: '1999999',
      feeRate: '0',
    });
    const res = await post(s.app, `${LIST}/${id}/refund`, undefined, u.token);
    expect(res.statusCode, res.body).toBe(200);
    const done = json<PrepaidRefundResult>(res);
    expect(done).toMatchObject({ refund: '1999999', instance: { id, status: 'Deleting' } });
    expect(await balances(u.user.id)).toMatchObject({ cash: 1666666n, gift: 333333n });
    const [refundOrder] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, done.orderUid));
    expect(refundOrder).toMatchObject({ type: 'Refund', status: 'Refunded', amount: 1999999n });
    // Replays: the same code, nothing moves.
    const again = await post(s.app, `${LIST}/${id}/refund`, undefined, u.token);
    expect(again.statusCode).toBe(409);
    expect(json(again)).toMatchObject({ code: 40923001 });
    await settle(DELAYS.destroy);
    expect((await row(id)).releasedAt).not.toBeNull();
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, u.token))).toMatchObject({ code: 40923001 });
    expect(json(await get(s.app, `${LIST}/${id}/refund/price`, u.token))).toMatchObject({ code: 40923001 });
    expect(await balances(u.user.id)).toMatchObject({ cash: 1666666n, gift: 333333n });
    // The gift credit went back to the grant it came from: it can be spent again.
    expect(await s.ctx.orders.spendable(u.user.id)).toBe(1999999n);
  });

  it('refunds concurrent requests once; renewals are refunded newest first; a fee is kept when configured', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '1000');
    const { id, boughtAt } = await prepaid(u.token, 'Day', { price: '10' });
    const renewal = json<Order>(await post(s.app, `${LIST}/${id}/renew`, { duration: 3 }, u.token));
    await s.ctx.db
      .update(orders)
      .set({ amount: yuan('60') })
      .where(eq(orders.orderUid, renewal.orderUid));
    expect(json(await post(s.app, `/order/api/v2.1/gpu/order/${renewal.orderUid}/pay`, { method: 'Balance' }, u.token))).toMatchObject({ status: 'Success' });
    await stop(u.token, id);
    // 4 days paid (1 at ¥10, then 3 at ¥60); 1.5 days used: 2 whole days unused, both of the renewal.
    await ageTo(id, boughtAt, boughtAt + 1.5 * DAY);
    const withFee = new PrepaidService({
      db: s.ctx.db,
      clock: s.clock,
      instances: s.ctx.instances,
      views: s.ctx.instanceViews,
      renewals: s.ctx.renewals,
      orders: s.ctx.orders,
      checkout: s.ctx.checkout,
      gifts: s.ctx.gifts,
      users: s.ctx.users,
      log: s.app.log,
      leadHours: 24,
      refundFeeRate: '0.05',
      notices: s.ctx.notices,
    });
    const owner = (await s.ctx.db.select().from(users).where(eq(users.id, u.user.id)))[0]!;
    expect(await withFee.refundQuote(owner, id)).toMatchObject({
      totalDays: 4,
      usedDays: 2,
      unusedDays: 2,
      refundable: String(yuan('40')),
      fee: String(yuan('2')),
      refund: String(yuan('38')),
    });
    const before = await balances(u.user.id);
    const results = await Promise.all([post(s.app, `${LIST}/${id}/refund`, undefined, u.token), post(s.app, `${LIST}/${id}/refund`, undefined, u.token)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect((await balances(u.user.id)).cash - before.cash).toBe(yuan('40'));
    expect(await countRows(s, `orders where type = 'Refund' and user_id = '${u.user.id}'`)).toBe(1);
  });

  it('refuses post-paid, expired, running, voucher-only and foreign instances with clear codes, writing nothing', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '500');
    const usage = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, u.token));
    const usageId = (await s.ctx.db.select().from(orders).where(eq(orders.orderUid, usage.orderUid)))[0]!.resourceId!;
    const ordersBefore = await countRows(s, 'orders');
    const transfersBefore = await countRows(s, 'ledger_transfers');
    expect(json(await get(s.app, `${LIST}/${usageId}/refund/price`, u.token))).toMatchObject({ code: 40023001 });
    expect(json(await post(s.app, `${LIST}/${usageId}/refund`, undefined, u.token))).toMatchObject({ code: 40023001 });

    expect(await countRows(s, 'orders')).toBe(ordersBefore);
    expect(await countRows(s, 'ledger_transfers')).toBe(transfersBefore);
    const { id, boughtAt } = await prepaid(u.token, 'Day');
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, u.token))).toMatchObject({ code: 40021001 });
    expect((await row(id)).status).toBe('Running');
    await stop(u.token, id);
    const other = await registerUser(s);
    const ordersMid = await countRows(s, 'orders');
    const transfersMid = await countRows(s, 'ledger_transfers');
    // Less than one whole day left: nothing to refund.
    await ageTo(id, boughtAt, boughtAt + 2 * HOUR);
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, u.token))).toMatchObject({ code: 40023003 });
    await ageTo(id, boughtAt, boughtAt + DAY + SEC);
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, u.token))).toMatchObject({ code: 40023002 });
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, other.token))).toMatchObject({ code: 40400004 });
    expect(json(await post(s.app, `${LIST}/not-a-uuid/refund`, undefined, u.token))).toMatchObject({ code: 40000001 });
    expect(await countRows(s, 'orders')).toBe(ordersMid);
    expect(await countRows(s, 'ledger_transfers')).toBe(transfersMid);
    expect((await row(id)).status).toBe('Stopped');
  });

  it('does not return the voucher part', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '300');
    const order = json<Order>(
      await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: await pickHost(), cycle: 'Month', duration: 1 }, u.token),
    );
    await s.ctx.db
      .update(orders)
      .set({ amount: yuan('300') })
      .where(eq(orders.orderUid, order.orderUid));
    const [v] = await s.ctx.db
      .select()
      .from(vouchers)
      .where(and(eq(vouchers.userId, u.user.id), eq(vouchers.status, 'Unused')));
    const paid = await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance', voucherId: v!.id }, u.token);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    const boughtAt = s.clock.now().getTime();
    const id = (await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid)))[0]!.resourceId!;
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    await stop(u.token, id);
    await ageTo(id, boughtAt, boughtAt + 15 * DAY);
    const quote = json<PrepaidRefundQuote>(await get(s.app, `${LIST}/${id}/refund/price`, u.token));
    // ¥300 = ¥50 voucher + ¥250 cash; half the month unused: half the cash.
    expect(quote).toMatchObject({ paid: String(yuan('300')), paidVoucher: String(yuan('50')), unusedDays: 15, toCash: String(yuan('125')), toGift: '0' });
  });

  it('lets a child with the gpu flag refund and switch auto-renew on Gpu instances, and no other child', async () => {
    const parent = await registerUser(s);
    await fund(parent.user.id, '500');
    const { id } = await prepaid(parent.token, 'Month', { price: '30' });
    const child = await registerUser(s);
    await s.ctx.db
      .update(users)
      // 财务: the parent's instances are the child's to see; the gpu flag decides what it may do to them.
      .set({ isChild: true, parentId: parent.user.id, childName: 'intern', gpu: false, app: true, finance: true })
      .where(eq(users.id, child.user.id));
    expect(json(await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: true }, child.token))).toMatchObject({ code: 40300002 });
    await stop(parent.token, id);
    expect(json(await post(s.app, `${LIST}/${id}/refund`, undefined, child.token))).toMatchObject({ code: 40300002 });
    expect(await countRows(s, `orders where type = 'Refund' and user_id = '${parent.user.id}'`)).toBe(0);
    await s.ctx.db.update(users).set({ gpu: true }).where(eq(users.id, child.user.id));
    expect(json<Instance>(await put(s.app, `${LIST}/${id}/auto-renew`, { autoRenew: true }, child.token)).autoRenew).toBe(true);
    // ¥30 for 30 days, a few seconds used: 29 whole days unused.
    const res = await post(s.app, `${LIST}/${id}/refund`, undefined, child.token);
    expect(json(res), res.body).toMatchObject({ unusedDays: 29, toCash: String(yuan('29')), instance: { status: 'Deleting' } });
    const [refund] = await s.ctx.db
      .select()
      .from(orders)
      .where(eq(orders.orderUid, json<PrepaidRefundResult>(res).orderUid));
    expect(refund).toMatchObject({ userId: parent.user.id, createdBy: child.user.id });
  });
});
