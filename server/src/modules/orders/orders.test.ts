import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { countRows, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { BASE, sandboxWiring, until } from '../../../test/payment-sandbox.js';
import { giftGrants, users, vouchers } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';
import { FULFIL_GRACE_MS } from './checkout.js';
import type { Fulfiller, OrderRow } from './service.js';
import { PURCHASE_TYPES } from './fulfillers.js';

const yuan = yuanToUnits;
const AI = '/shinichi/api/v2.1/tiio/resource';
const aiPath = (uid: string, tail = '') => `/order/api/v2.1/tiio/resource/${uid}${tail}`;
const gpuPath = (uid: string, tail = '') => `/order/api/v2.1/gpu/order/${uid}${tail}`;
const GPU = { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1 };

/** A GPU fulfiller the test steers: deliver, fail, or hang like a process that died mid-way. */
class TestFulfiller implements Fulfiller {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  calls: string[] = [];
  async fulfil(order: OrderRow) {
    this.calls.push(order.orderUid);
    if (this.mode === 'fail') throw new Error('主机创建失败');
    if (this.mode === 'hang') return new Promise<never>(() => {});
    return { resourceId: `ins-${order.orderUid}` };
  }
}

describe('orders', () => {
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  const gpu = new TestFulfiller();
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    s = await startTestServer({
      env: { PUBLIC_BASE_URL: BASE },
      drivers: { payment: w.drivers },
      fulfillers: [{ categories: ['Gpu'], types: PURCHASE_TYPES, fulfiller: gpu }],
    });
    clock = s.clock;
    w.wiring.app = s.app;
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    gpu.mode = 'ok';
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  async function fund(userId: string, cash: string, gift = '0') {
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan(cash) },
        { account: { userId, kind: 'cash' }, amount: yuan(cash) },
      ],
    });
    if (gift !== '0') {
      await s.ctx.db.transaction((tx) =>
        s.ctx.gifts.grant(tx, { userId, amount: yuan(gift), source: 'recharge_bonus', validDays: 30, key: randomUUID(), memo: '测试赠送' }),
      );
    }
  }
  const voucherOf = async (userId: string) => (await s.ctx.db.select().from(vouchers).where(eq(vouchers.userId, userId)))[0]!;
  const balances = (userId: string) => s.ctx.ledger.balances(userId);

  it('lists the resource packages on sale', async () => {
    const items = json(await get(s.app, '/shinichi/api/v2.1/tiio/resource/products')).items;
    expect(items.map((p: { id: string }) => p.id)).toEqual([
      'llm-tokens-10m',
      'llm-tokens-100m',
      'gpu-hours-4090-100',
      'gpu-hours-4090-10',
      'gpu-hours-3090-100',
      'gpu-hours-a100-50',
    ]);
    expect(items[1]).toMatchObject({ price: String(yuan('400')), unit: 'tokens', quantity: '100000000', gpuTypeId: null, listPrice: null });
    // A GPU-hour package against its hours at the card's post-paid rate (¥1.32/h × 100 h).
    expect(items[4]).toMatchObject({ price: String(yuan('112')), gpuTypeId: 'rtx3090', listPrice: String(yuan('132')) });
  });

  it('creates an Ai order priced by the server; a second one waits for the first (40011007)', async () => {
    const u = await registerUser(s);
    const res = await post(s.app, AI, { productId: 'llm-tokens-100m', count: 2 }, u.token);
    expect(res.statusCode).toBe(200);
    const order = json(res);
    expect(order).toMatchObject({ kind: 'Ai', type: 'NewBuy', status: 'Unpaid', amount: String(yuan('800')), paid: [] });
    expect(order.orderUid).toMatch(/^O\d{14}[0-9a-f]{8}$/);
    expect(json(await get(s.app, aiPath(order.orderUid), u.token)).orderUid).toBe(order.orderUid);

    const second = await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token);
    expect(second.statusCode).toBe(400);
    expect(json(second).code).toBe(40011007);
    const list = json(await get(s.app, '/order/api/v2.1/orders?filterBy=status,Unpaid', u.token));
    expect(list).toMatchObject({ total: 1, items: [expect.objectContaining({ orderUid: order.orderUid })] });
  });

  it('says which kind of package an Ai order buys: GPU hours or model tokens', async () => {
    const u = await registerUser(s);
    const hours = json(await post(s.app, AI, { productId: 'gpu-hours-4090-10' }, u.token));
    expect(hours).toMatchObject({ kind: 'Ai', packageKind: 'gpuHours' });
    expect(json(await post(s.app, aiPath(hours.orderUid, '/cancel'), {}, u.token)).status).toBe('Cancelled');
    const tokens = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    expect(json(await get(s.app, aiPath(tokens.orderUid), u.token))).toMatchObject({ packageKind: 'tokens' });
  });

  it('exports a GPU-hour package order as GPU 时长包, not 模型资源包', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '200');
    const order = json(await post(s.app, AI, { productId: 'gpu-hours-4090-10' }, u.token));
    await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    const row = (await get(s.app, '/order/api/v2.1/orders/export?filterBy=kind,Ai', u.token)).body.split('\r\n').find((l) => l.startsWith(order.orderUid))!;
    expect(row).toContain(',GPU 时长包,');
    expect(row).not.toContain('模型资源包');
  });

  it('pays from the balance: the voucher first, then gift credit, then cash; the package is delivered', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '400', '18');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-100m' }, u.token));
    const v = await voucherOf(u.user.id);
    const paid = await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance', voucherId: v.id }, u.token);
    expect(paid.statusCode, paid.body).toBe(200);
    expect(json(paid)).toMatchObject({ status: 'Success', payment: null });

    const detail = json(await get(s.app, aiPath(order.orderUid), u.token));
    expect(detail).toMatchObject({ status: 'Success', payMethod: 'Balance', voucherDeduction: String(yuan('50')) });
    expect(detail.paid).toEqual([
      { source: 'voucher', amount: String(yuan('50')) },
      { source: 'gift', amount: String(yuan('18')) },
      { source: 'cash', amount: String(yuan('332')) },
    ]);
    expect(await balances(u.user.id)).toMatchObject({ cash: yuan('68'), gift: 0n, voucher: 0n });
    expect((await voucherOf(u.user.id)).status).toBe('Used');
    const pkgs = json(await get(s.app, '/order/api/v2.1/resource/packages', u.token)).items;
    expect(pkgs).toEqual([expect.objectContaining({ name: '大模型 Token 包 1 亿', total: '100000000', remain: '100000000', orderUid: order.orderUid })]);
    const statement = json(await get(s.app, '/billing/api/v1/user/statement?kind=cash', u.token)).items;
    expect(statement[0]).toMatchObject({ kind: 'order', amount: String(-yuan('332')), orderId: order.orderUid });

    // Paying again is refused and charges nothing.
    const again = await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    expect(json(again).code).toBe(40020005);
    expect((await balances(u.user.id)).cash).toBe(yuan('68'));
  });

  it('keeps the chosen voucher on the unpaid order: a refreshed pay dialog shows it and paying uses it', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '400');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-100m' }, u.token));
    const v = await voucherOf(u.user.id);
    const chosen = await put(s.app, aiPath(order.orderUid, '/voucher'), { voucherId: v.id }, u.token);
    expect(chosen.statusCode, chosen.body).toBe(200);
    expect(json(chosen)).toMatchObject({ status: 'Unpaid', amount: String(yuan('400')), voucherId: v.id, voucherDeduction: String(yuan('50')) });
    // Read again (a refresh): the order still has it, with what it will deduct.
    expect(json(await get(s.app, aiPath(order.orderUid), u.token))).toMatchObject({ voucherId: v.id, voucherDeduction: String(yuan('50')) });
    const listed = json(await get(s.app, '/order/api/v2.1/orders?filterBy=status,Unpaid', u.token)).items[0];
    expect(listed).toMatchObject({ orderUid: order.orderUid, voucherId: v.id, voucherDeduction: String(yuan('50')) });
    // Paying without naming a voucher pays with the chosen one: 350 of cash, not 400.
    const paid = await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    expect(json(await get(s.app, aiPath(order.orderUid), u.token)).paid).toEqual([
      { source: 'voucher', amount: String(yuan('50')) },
      { source: 'cash', amount: String(yuan('350')) },
    ]);
    expect(await balances(u.user.id)).toMatchObject({ cash: yuan('50'), voucher: 0n });
    // A paid order's voucher no longer changes.
    expect(json(await put(s.app, aiPath(order.orderUid, '/voucher'), { voucherId: null }, u.token))).toMatchObject({ code: 40020005 });
  });

  it('takes off or refuses a chosen voucher: null, someone else’s, a used one, a QR opened for what the voucher leaves', async () => {
    const u = await registerUser(s);
    const other = await registerUser(s);
    await fund(u.user.id, '100');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    const mine = await voucherOf(u.user.id);
    const theirs = await voucherOf(other.user.id);
    const choose = (voucherId: unknown, token = u.token) => put(s.app, aiPath(order.orderUid, '/voucher'), { voucherId }, token);

    expect(json(await choose(theirs.id))).toMatchObject({ code: 40020002, detail: '代金券不存在或不属于当前账号' });
    expect(json(await choose('not-a-uuid'))).toMatchObject({ code: 40000001 });
    expect(json(await choose(mine.id, other.token))).toMatchObject({ code: 40400004 });
    expect(json(await get(s.app, aiPath(order.orderUid), u.token))).toMatchObject({ voucherId: null, voucherDeduction: '0' });

    // A ¥50 voucher on a ¥50 order covers it all.
    expect(json(await choose(mine.id))).toMatchObject({ voucherId: mine.id, voucherDeduction: String(yuan('50')) });
    expect(json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Alipay' }, u.token))).toMatchObject({
      code: 40000001,
      detail: 'method：代金券已抵扣全部金额，请使用余额支付',
    });
    // Taken off: a QR asks for the whole amount; putting it back closes that QR (it asks for another amount).
    expect(json(await choose(null))).toMatchObject({ voucherId: null, voucherDeduction: '0' });
    const qr = json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Alipay' }, u.token));
    expect(qr.payment).toMatchObject({ amount: String(yuan('50')), status: 'Pending' });
    await choose(mine.id);
    expect(json(await get(s.app, aiPath(order.orderUid, '/pay'), u.token)).payment).toMatchObject({ status: 'Closed' });

    // Spent elsewhere meanwhile: the order says so when it is paid, and can be paid without it.
    await s.ctx.db.update(vouchers).set({ status: 'Used' }).where(eq(vouchers.id, mine.id));
    expect(json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token))).toMatchObject({ code: 40020002 });
    expect(json(await choose(mine.id))).toMatchObject({ code: 40020002, detail: '该代金券已使用' });
    const paid = json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance', voucherId: null }, u.token));
    expect(paid).toMatchObject({ status: 'Success' });
    expect(json(await get(s.app, aiPath(order.orderUid), u.token))).toMatchObject({
      voucherId: null,
      voucherDeduction: '0',
      paid: [{ source: 'cash', amount: String(yuan('50')) }],
    });
  });

  it('refuses a payment the balance does not cover and leaves everything as it was', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '10', '5');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-100m' }, u.token));
    const v = await voucherOf(u.user.id);
    const res = await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance', voucherId: v.id }, u.token);
    expect(res.statusCode).toBe(400);
    expect(json(res)).toMatchObject({ code: 40011001, detail: '还差 335.00 元' });
    expect(json(await get(s.app, aiPath(order.orderUid), u.token)).status).toBe('Unpaid');
    expect(await balances(u.user.id)).toMatchObject({ cash: yuan('10'), gift: yuan('5'), voucher: yuan('50') });
    expect((await voucherOf(u.user.id)).status).toBe('Unused');
    const [grant] = await s.ctx.db.select().from(giftGrants).where(eq(giftGrants.userId, u.user.id));
    expect(grant!.remain).toBe(yuan('5'));
  });

  it('charges once when the same order is paid ten times at once', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '1000');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    const results = await Promise.all(Array.from({ length: 10 }, () => post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token)));
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.statusCode !== 200)) expect(json(r).code).toBe(40020005);
    expect((await balances(u.user.id)).cash).toBe(yuan('950'));
    expect(json(await get(s.app, '/order/api/v2.1/resource/packages', u.token)).items).toHaveLength(1);
  });

  it('refunds every part to where it came from when fulfilment fails', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '100', '10');
    const order = json(await post(s.app, '/infra/api/v2.1/gpu/order', { ...GPU, name: '训练机' }, u.token));
    expect(order).toMatchObject({ kind: 'Personal', category: 'Gpu', amount: String(yuan('45.144')) });
    gpu.mode = 'fail';
    const v = await voucherOf(u.user.id);
    const res = json(await post(s.app, gpuPath(order.orderUid, '/pay'), { method: 'Balance', voucherId: v.id }, u.token));
    expect(res.status).toBe('Refunded');
    const detail = json(await get(s.app, gpuPath(order.orderUid), u.token));
    expect(detail).toMatchObject({ status: 'Refunded', failReason: '主机创建失败' });
    expect(await balances(u.user.id)).toMatchObject({ cash: yuan('100'), gift: yuan('10'), voucher: yuan('50') });
    expect((await voucherOf(u.user.id)).status).toBe('Unused');
    const [grant] = await s.ctx.db.select().from(giftGrants).where(eq(giftGrants.userId, u.user.id));
    expect(grant!.remain).toBe(yuan('10'));
  });

  it('after a crash between payment and fulfilment, recovery fulfils the order, or refunds it', async () => {
    for (const outcome of ['ok', 'fail'] as const) {
      const u = await registerUser(s);
      await fund(u.user.id, '100');
      const order = json(await post(s.app, '/infra/api/v2.1/gpu/order', GPU, u.token));
      gpu.mode = 'hang';
      void post(s.app, gpuPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token); // the process "dies" inside fulfil
      await until(
        () => get(s.app, gpuPath(order.orderUid), u.token).then(json),
        (o) => o.status === 'Paid',
        'the payment',
      );
      expect((await balances(u.user.id)).cash).toBe(yuan('100') - yuan('45.144'));

      s.clock.advance(FULFIL_GRACE_MS + 1000);
      gpu.mode = outcome;
      expect(await s.ctx.orders.recoverPaid()).toBeGreaterThanOrEqual(1);
      const after = json(await get(s.app, gpuPath(order.orderUid), u.token));
      if (outcome === 'ok') {
        expect(after).toMatchObject({ status: 'Success', resourceId: `ins-${order.orderUid}` });
        expect((await balances(u.user.id)).cash).toBe(yuan('100') - yuan('45.144'));
      } else {
        expect(after.status).toBe('Refunded');
        expect((await balances(u.user.id)).cash).toBe(yuan('100'));
      }
    }
  });

  it('pays by Alipay QR what is left after the voucher; the money goes through cash into the order', async () => {
    const u = await registerUser(s);
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-100m' }, u.token));
    const v = await voucherOf(u.user.id);
    const started = json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Alipay', voucherId: v.id }, u.token));
    expect(started).toMatchObject({ status: 'Unpaid', payment: { method: 'Alipay', amount: String(yuan('350')), status: 'Pending' } });
    const qr = json(await get(s.app, aiPath(order.orderUid, '/qrcode/alipay'), u.token));
    expect(qr.qrContent).toBe(started.payment.qrContent);

    await s.app.inject({ method: 'POST', url: `${new URL(qr.qrContent).pathname}/pay` });
    const done = await until(
      () => get(s.app, aiPath(order.orderUid, '/pay'), u.token).then(json),
      (x) => x.status === 'Success',
      'the order',
    );
    expect(done.payment.status).toBe('Succeeded');
    expect(await balances(u.user.id)).toMatchObject({ cash: 0n, voucher: 0n });
    const detail = json(await get(s.app, aiPath(order.orderUid), u.token));
    expect(detail).toMatchObject({
      payMethod: 'Alipay',
      paid: [
        { source: 'voucher', amount: String(yuan('50')) },
        { source: 'cash', amount: String(yuan('350')) },
      ],
    });
  });

  it('cancels an unpaid order (closing its QR) and then refuses to pay or cancel it again', async () => {
    const u = await registerUser(s);
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    const started = json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Wechat' }, u.token));
    expect(json(await post(s.app, aiPath(order.orderUid, '/cancel'), {}, u.token)).status).toBe('Cancelled');
    expect(json(await s.app.inject({ method: 'POST', url: `${new URL(started.payment.qrContent).pathname}/pay` })).code).toBe(40930002);
    expect(json(await post(s.app, aiPath(order.orderUid, '/cancel'), {}, u.token)).code).toBe(40020005);
    expect(json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token)).code).toBe(40020005);
    expect((await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token)).statusCode).toBe(200); // a new order is allowed
  });

  it('expires an unpaid order after the payment time; a new order is then allowed', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '100');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    s.clock.advance(15 * 60_000 + 1);
    const pay = await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    expect(json(pay).code).toBe(40020006);
    expect(json(await get(s.app, aiPath(order.orderUid), u.token)).status).toBe('Expired');
    expect((await balances(u.user.id)).cash).toBe(yuan('100'));
    expect((await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token)).statusCode).toBe(200);
  });

  it('refuses what is not in the catalogue, what a child may not buy, bad input, and other people’s orders', async () => {
    const u = await registerUser(s);
    const before = await countRows(s, 'orders');
    const sizeOrder = await post(s.app, '/infra/api/v2.1/order', { sizeId: 'no-such-size', regionId: 'bj-b', cycle: 'Day', duration: 1 }, u.token);
    expect(json(sizeOrder)).toMatchObject({ code: 40020001 });
    for (const [path, body, detail] of [
      [AI, { productId: 'no-such' }, /资源包 no-such/],
      [AI, { productId: 'llm-tokens-10m', count: 0 }, /^count/],
      [AI, {}, /^productId/],
      ['/infra/api/v2.1/gpu/order', { ...GPU, gpuCount: 0 }, /^gpuCount/],
      ['/infra/api/v2.1/gpu/order', { ...GPU, name: 'x'.repeat(31) }, /实例名称最多 30 个字/],
    ] as const) {
      const res = await post(s.app, path, body, u.token);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res).detail).toMatch(detail);
    }
    expect(await countRows(s, 'orders')).toBe(before);

    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: u.user.id }).where(eq(users.id, child.user.id));
    const denied = await post(s.app, '/infra/api/v2.1/gpu/order', GPU, child.token);
    expect(denied.statusCode).toBe(403);
    expect(json(denied).code).toBe(40300002);
    expect((await post(s.app, AI, { productId: 'llm-tokens-10m' }, child.token)).statusCode).toBe(403);

    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    const stranger = await registerUser(s);
    expect(json(await get(s.app, aiPath(order.orderUid), stranger.token)).code).toBe(40400004);
    expect(json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, stranger.token)).code).toBe(40400004);
    expect(json(await get(s.app, gpuPath(order.orderUid), u.token)).code).toBe(40400004); // wrong kind
    expect(json(await get(s.app, aiPath('O123'), u.token)).detail).toMatch(/^order_uid/);
    expect(json(await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Cash' }, u.token)).detail).toMatch(/^method/);
    expect(json(await get(s.app, '/order/api/v2.1/orders?filterBy=status,Whatever', u.token)).code).toBe(40000001);
  });

  it('lists several order kinds, statuses and types at once when a filter key repeats', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '200');
    const paid = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    await post(s.app, aiPath(paid.orderUid, '/pay'), { method: 'Balance' }, u.token);
    const cancelled = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    await post(s.app, aiPath(cancelled.orderUid, '/cancel'), undefined, u.token);
    const gpuOrder = json(await post(s.app, '/infra/api/v2.1/gpu/order', GPU, u.token));
    const uids = async (filterBy: string) => {
      const res = await get(s.app, `/order/api/v2.1/orders?filterBy=${encodeURIComponent(filterBy)}`, u.token);
      expect(res.statusCode, res.body).toBe(200);
      return json<{ items: { orderUid: string }[] }>(res)
        .items.map((o) => o.orderUid)
        .sort();
    };
    expect(await uids('status,Success,status,Cancelled')).toEqual([paid.orderUid, cancelled.orderUid].sort());
    expect(await uids('kind,Ai,kind,Personal')).toEqual([paid.orderUid, cancelled.orderUid, gpuOrder.orderUid].sort());
    expect(await uids('kind,Ai,kind,Personal,status,Unpaid,status,Success')).toEqual([paid.orderUid, gpuOrder.orderUid].sort());
    expect(await uids('kind,Personal,kind,default')).toEqual([gpuOrder.orderUid]);
    expect(await uids('type,NewBuy,type,Renew,status,Cancelled')).toEqual([cancelled.orderUid]);
    expect(await uids('status,Success,status,Success')).toEqual([paid.orderUid]);
    for (const bad of ['status,Success,status,Whatever', 'toString,x', 'kind,Ai,kind', '__proto__,x']) {
      const res = await get(s.app, `/order/api/v2.1/orders?filterBy=${encodeURIComponent(bad)}`, u.token);
      expect(res.statusCode, bad).toBe(400);
      expect(json(res).code).toBe(40000001);
    }
    await post(s.app, gpuPath(gpuOrder.orderUid, '/cancel'), undefined, u.token);
  });

  it('exports the bills as CSV that Excel reads, with formula-looking text defused', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, '100');
    const order = json(await post(s.app, AI, { productId: 'llm-tokens-10m' }, u.token));
    await post(s.app, aiPath(order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    const res = await get(s.app, '/order/api/v2.1/orders/export?filterBy=kind,Ai', u.token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/csv/);
    expect(res.headers['content-disposition']).toMatch(/attachment; filename="bills-\d{4}-\d{2}-\d{2}\.csv"/);
    const lines = res.body
      .replace(/^\uFEFF/, '')
      .trim()
      .split('\r\n');
    expect(lines[0]).toBe('订单号,下单时间,类型,产品,说明,状态,应付（元）,代金券抵扣（元）,实付（元）,支付方式,支付时间');
    expect(lines[1]).toContain('模型资源包');
    expect(lines[1]).toContain('余额');
    // Bills are read in Beijing time, to the second.
    expect(lines[1]).toMatch(/,2026-11-23 16:\d\d:\d\d,/);
    expect(lines[1]).toContain(order.orderUid);
    expect(lines[1]).toContain('已完成');
    expect(lines[1]).toContain('50.00');
    expect((await get(s.app, '/order/api/v2.1/orders/export')).statusCode).toBe(401);
  });
});
