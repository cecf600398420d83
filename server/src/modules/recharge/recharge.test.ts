import { createPrivateKey } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { countRows, get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { paymentNotifications, users } from '../../db/schema.js';
import { SandboxPaymentDriver } from '../../drivers/payment/index.js';
import { BASE, sandboxWiring, until } from '../../../test/payment-sandbox.js';
import { encodeForm, parseForm, signAlipayNotification } from '../../drivers/payment/alipay-protocol.js';
import { checkLedger } from '../ledger/check.js';

const yuan = yuanToUnits;

describe('recharge through the sandbox gateway', () => {
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    s = await startTestServer({ env: { PUBLIC_BASE_URL: BASE }, drivers: { payment: w.drivers } });
    clock = s.clock;
    w.wiring.app = s.app;
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    w.wiring.deliver = true;
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  const pagePath = (qr: string) => new URL(qr).pathname;
  async function startRecharge(token: string, amount = '100', method = 'Alipay') {
    const res = await post(s.app, '/billing/api/v1/recharge', { amount, method }, token);
    expect(res.statusCode, res.body).toBe(200);
    return json(res);
  }
  const payOnScanPage = (qr: string) => s.app.inject({ method: 'POST', url: `${pagePath(qr)}/pay` });
  const rechargeOf = (token: string, id: string) => get(s.app, `/billing/api/v1/recharge/${id}`, token).then(json);

  it('offers the operator’s amounts and bonus', async () => {
    expect(json(await get(s.app, '/billing/api/v1/recharge/options'))).toMatchObject({
      min: String(yuan('10')),
      max: String(yuan('50000')),
      bonusRate: '0.18',
      giftValidDays: 365,
      presets: ['500000', '1000000', '5000000', '10000000', '50000000'],
    });
  });

  for (const method of ['Alipay', 'Wechat'] as const) {
    it(`${method}: 100 yuan paid on the scan page arrive as 100 cash and 18 gift credit`, async () => {
      const u = await registerUser(s);
      const r = await startRecharge(u.token, '100', method);
      expect(r).toMatchObject({ status: 'Unpaid', amount: String(yuan('100')), bonus: String(yuan('18')), method });
      expect(r.qrContent).toBe(`${BASE}/dev/pay/sandbox/${r.outTradeNo}`);

      const page = await s.app.inject({ method: 'GET', url: pagePath(r.qrContent) });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('100.00');

      expect((await payOnScanPage(r.qrContent)).statusCode).toBe(200);
      const paid = await until(
        () => rechargeOf(u.token, r.id),
        (x) => x.status === 'Paid',
        'the recharge to be paid',
      );
      expect(paid.qrContent).toBe('');
      const money = json(await get(s.app, '/billing/api/v1/user/money', u.token));
      expect(money).toMatchObject({ cash: String(yuan('100')), gift: String(yuan('18')), available: String(yuan('118')) });
      const gifts = json(await get(s.app, '/order/api/v2.1/gift', u.token));
      expect(gifts.items).toEqual([expect.objectContaining({ source: 'recharge_bonus', amount: String(yuan('18')), remain: String(yuan('18')), status: 1 })]);
      expect(Date.parse(gifts.items[0].expireAt) - s.clock.now().getTime()).toBe(365 * 86400_000);
      const cash = json(await get(s.app, '/billing/api/v1/user/statement?kind=cash', u.token));
      expect(cash.items[0]).toMatchObject({ kind: 'gateway_in', amount: String(yuan('100')), balanceAfter: String(yuan('100')) });
    });
  }

  it('credits a notification replayed 10 times once', async () => {
    const u = await registerUser(s);
    const r = await startRecharge(u.token, '50');
    const before = w.sent.length;
    await payOnScanPage(r.qrContent);
    // Wait for the notification itself (polling the recharge could credit it through a query first).
    const appliedOf = () => s.ctx.db.select().from(paymentNotifications).where(eq(paymentNotifications.outTradeNo, r.outTradeNo));
    await until(appliedOf, (rows) => rows.some((n) => n.outcome === 'applied'), 'the notification to be applied');
    const original = w.sent.slice(before).find((d) => d.body.includes(r.outTradeNo))!;
    for (let i = 0; i < 10; i++) {
      const res = await s.app.inject({ method: 'POST', url: new URL(original.url).pathname, headers: original.headers, payload: original.body });
      expect(res.body).toBe('success');
    }
    expect(json(await get(s.app, '/billing/api/v1/user/money', u.token)).cash).toBe(String(yuan('50')));
    const logged = await s.ctx.db.select().from(paymentNotifications).where(eq(paymentNotifications.outTradeNo, r.outTradeNo));
    expect(logged.filter((n) => n.outcome === 'applied')).toHaveLength(1);
    expect(logged.filter((n) => n.outcome === 'replayed')).toHaveLength(10);
  });

  it('credits nothing for an unsigned, wrongly signed, tampered or amount-mismatched notification, and logs each', async () => {
    const u = await registerUser(s);
    const r = await startRecharge(u.token, '20');
    const gatewayKey = createPrivateKey(w.keys.privateKey);
    const otherKey = createPrivateKey(SandboxPaymentDriver.generateKeys().privateKey);
    const fields = {
      notify_type: 'trade_status_sync',
      notify_id: 'forged-1',
      app_id: '9021000000000001',
      out_trade_no: r.outTradeNo,
      trade_no: '2026112322001400000000000001',
      trade_status: 'TRADE_SUCCESS',
      total_amount: '20.00',
      gmt_payment: '2026-11-23 16:00:00',
      charset: 'utf-8',
      version: '1.0',
    };
    const notify = (body: string) =>
      s.app.inject({
        method: 'POST',
        url: '/billing/api/v1/payment/notify/alipay',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: body,
      });

    const signedRight = encodeForm(signAlipayNotification(fields, gatewayKey));
    const tampered = parseForm(signedRight) as { params: Record<string, string> };
    tampered.params.total_amount = '2000.00';
    const mismatch = encodeForm(signAlipayNotification({ ...fields, total_amount: '19.00' }, gatewayKey));
    for (const body of [encodeForm(fields), encodeForm(signAlipayNotification(fields, otherKey)), encodeForm(tampered.params), mismatch, 'not a form at all']) {
      const res = await notify(body);
      expect(res.body).toBe('fail');
    }
    expect(json(await get(s.app, '/billing/api/v1/user/money', u.token)).cash).toBe('0');
    const refused = await s.ctx.db.select().from(paymentNotifications).where(eq(paymentNotifications.outcome, 'refused'));
    expect(refused.length).toBeGreaterThanOrEqual(5);
    expect(refused.some((n) => /金额不符/.test(n.reason))).toBe(true);

    // The genuine one still goes through afterwards.
    expect((await notify(signedRight)).body).toBe('success');
    expect(json(await get(s.app, '/billing/api/v1/user/money', u.token)).cash).toBe(String(yuan('20')));
  });

  it('asks the gateway when the notification never arrives, and credits what it says was paid', async () => {
    const u = await registerUser(s);
    const r = await startRecharge(u.token, '30', 'Wechat');
    w.wiring.deliver = false;
    await payOnScanPage(r.qrContent);
    await new Promise((res) => setTimeout(res, 50)); // every retry fails
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(0n);
    const polled = await rechargeOf(u.token, r.id);
    expect(polled.status).toBe('Paid');
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(yuan('30'));
  });

  it('expires an unpaid recharge after the timeout; the scan page then refuses to pay', async () => {
    const u = await registerUser(s);
    const r = await startRecharge(u.token, '40');
    s.clock.advance(15 * 60_000 + 1000);
    expect((await rechargeOf(u.token, r.id)).status).toBe('Expired');
    const pay = await payOnScanPage(r.qrContent);
    expect(pay.statusCode).toBe(409);
    expect(json(pay).code).toBe(40930001);
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(0n);
  });

  it('cancels an unpaid recharge, closing the trade at the gateway', async () => {
    const u = await registerUser(s);
    const r = await startRecharge(u.token, '60');
    const cancelled = json(await post(s.app, `/billing/api/v1/recharge/${r.id}/cancel`, {}, u.token));
    expect(cancelled.status).toBe('Cancelled');
    const pay = await payOnScanPage(r.qrContent);
    expect(json(pay).code).toBe(40930002);
    const list = json(await get(s.app, '/billing/api/v1/recharge', u.token));
    expect(list).toMatchObject({ total: 1, items: [expect.objectContaining({ id: r.id, status: 'Cancelled' })] });
  });

  it('refuses bad amounts and methods with 400, writing nothing; others’ recharges are not visible', async () => {
    const u = await registerUser(s);
    const before = await countRows(s, 'recharges');
    for (const [body, detail] of [
      [{ amount: 'abc', method: 'Alipay' }, /^amount/],
      [{ amount: '10.001', method: 'Alipay' }, /^amount/],
      [{ amount: '9.99', method: 'Alipay' }, /10.00 到 50000.00/],
      [{ amount: '50000.01', method: 'Alipay' }, /10.00 到 50000.00/],
      [{ amount: '100', method: 'Paypal' }, /^method/],
      [{ amount: 100, method: 'Alipay' }, /^amount/],
      [{ method: 'Alipay' }, /^amount/],
    ] as const) {
      const res = await post(s.app, '/billing/api/v1/recharge', body, u.token);
      expect(res.statusCode).toBe(400);
      expect(json(res).code).toBe(40000001);
      expect(json(res).detail).toMatch(detail);
    }
    expect(await countRows(s, 'recharges')).toBe(before);
    expect((await post(s.app, '/billing/api/v1/recharge', { amount: '100', method: 'Alipay' })).statusCode).toBe(401);

    const other = await registerUser(s);
    const mine = await startRecharge(u.token, '10');
    const peek = await get(s.app, `/billing/api/v1/recharge/${mine.id}`, other.token);
    expect(peek.statusCode).toBe(404);
    expect(json(peek).code).toBe(40400004);
    expect((await get(s.app, '/billing/api/v1/recharge/not-a-uuid', u.token)).statusCode).toBe(400);
  });

  it('a child account’s recharge (with 财务) lands in its parent’s balance', async () => {
    const parent = await registerUser(s);
    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: parent.user.id, finance: true }).where(eq(users.id, child.user.id));
    const r = await startRecharge(child.token, '10');
    await payOnScanPage(r.qrContent);
    await until(
      () => rechargeOf(child.token, r.id),
      (x) => x.status === 'Paid',
      'paid',
    );
    expect((await s.ctx.ledger.balances(parent.user.id)).cash).toBe(yuan('10'));
    expect((await s.ctx.ledger.balances(child.user.id)).cash).toBe(0n);
  });
});
