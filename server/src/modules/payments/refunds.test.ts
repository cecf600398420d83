/**
 * Refunds to the original payment method, end to end through the sandbox gateway: the operator's
 * endpoint, the ledger, the gateway's answer (a poll for the Alipay style, a signed notification
 * for the WeChat style), the user's bill.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { BASE, until } from '../../../test/payment-sandbox.js';
import { MemorySandboxStore, SandboxPaymentDriver, makePaymentDrivers, type PaymentDrivers } from '../../drivers/payment/index.js';
import { paymentNotifications } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const yuan = yuanToUnits;
const REFUNDS = '/api/v1/operator/refunds';
const OPERATOR = { 'x-operator-token': 'refund-test-operator' };

/** The sandbox gateways, their notifications delivered through app.inject and kept for replays. */
function wiring(clock: () => Date) {
  const sent: { url: string; headers: Record<string, string>; body: string }[] = [];
  const w = { app: null as TestServer['app'] | null };
  const fakeFetch = (async (url: string | URL, init?: RequestInit) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const d = { url: String(url), headers, body: String(init?.body ?? '') };
    sent.push(d);
    const res = await w.app!.inject({ method: 'POST', url: new URL(d.url).pathname, headers, payload: d.body });
    return new Response(res.body || null, { status: res.statusCode });
  }) as typeof fetch;
  const drivers: PaymentDrivers = makePaymentDrivers(
    { PAYMENT_DRIVER: 'sandbox', PUBLIC_BASE_URL: BASE },
    {
      now: clock,
      fetch: fakeFetch,
      sandbox: { store: new MemorySandboxStore(), gatewayKeys: SandboxPaymentDriver.generateKeys(), retryDelaysMs: [5, 10], refundDelayMs: 3_600_000 },
    },
  );
  return { sent, w, drivers };
}

describe('refunds to the original payment method', () => {
  let s: TestServer;
  let g: ReturnType<typeof wiring>;
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    g = wiring(() => clock!.now());
    s = await startTestServer({ env: { PUBLIC_BASE_URL: BASE }, drivers: { payment: g.drivers } });
    clock = s.clock;
    g.w.app = s.app;
    s.ctx.localOperatorToken = OPERATOR['x-operator-token'];
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    await Promise.all(Object.values(g.drivers).map((d) => (d as SandboxPaymentDriver).idle()));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  /** A user who recharged `amount` yuan by `method` (18% bonus as gift credit). */
  async function recharged(amount: string, method: 'Alipay' | 'Wechat' = 'Alipay') {
    const u = await registerUser(s);
    const r = json(await post(s.app, '/billing/api/v1/recharge', { amount, method }, u.token));
    await s.app.inject({ method: 'POST', url: `${new URL(r.qrContent).pathname}/pay` });
    await until(
      () => get(s.app, `/billing/api/v1/recharge/${r.id}`, u.token).then(json),
      (x) => x.status === 'Paid',
      'the recharge to be paid',
    );
    return { ...u, outTradeNo: r.outTradeNo as string };
  }
  const refund = (body: object, headers: Record<string, string> = OPERATOR) => s.app.inject({ method: 'POST', url: REFUNDS, payload: body, headers });
  const ask = (outTradeNo: string, amount: string, requestId = randomUUID()) => refund({ outTradeNo, amount, reason: '用户申请退款', requestId });
  const money = async (token: string) => json(await get(s.app, '/billing/api/v1/user/money', token));
  const myRefunds = async (token: string) => json(await get(s.app, '/billing/api/v1/refunds', token)).items;
  /** The sandbox finishes a WeChat-style refund (its delay is an hour here: only this settles it) and notifies. */
  const complete = (outTradeNo: string, refundNo: string) => (g.drivers.Wechat as SandboxPaymentDriver).completeRefund(outTradeNo, refundNo);
  /** The poller's next round, once its interval and the sandbox's refund time have passed. */
  async function poll() {
    await Promise.all(Object.values(g.drivers).map((d) => (d as SandboxPaymentDriver).idle()));
    s.clock.advance(3_600_000);
    await s.ctx.refunds.pollProcessing();
  }
  const platformRefundBalance = async () => {
    const res = await s.ctx.db.execute(sql`select coalesce(sum(balance), 0)::text as b from ledger_accounts where kind = 'refund'`);
    return (res as unknown as { rows: { b: string }[] }).rows[0]!.b;
  };

  it('Alipay: partial refunds up to what was paid, each taking back its share of the bonus, then refused', async () => {
    const u = await recharged('100');
    const first = await ask(u.outTradeNo, '30');
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toMatchObject({
      status: 'Processing',
      statusText: '退款中',
      amount: String(yuan('30')),
      bonusTaken: String(yuan('5.4')),
      replayed: false,
    });
    // At request the money is in flight: out of the user's cash, the bonus's share out of gift credit.
    expect(await money(u.token)).toMatchObject({ cash: String(yuan('70')), gift: String(yuan('12.6')) });
    expect(await myRefunds(u.token)).toEqual([expect.objectContaining({ outTradeNo: u.outTradeNo, statusText: '退款中', method: 'Alipay' })]);
    const cash = json(await get(s.app, '/billing/api/v1/user/statement?kind=cash', u.token)).items;
    expect(cash[0]).toMatchObject({ kind: 'refund_out', amount: String(-yuan('30')), balanceAfter: String(yuan('70')) });

    await poll();
    expect(await myRefunds(u.token)).toEqual([expect.objectContaining({ statusText: '已退款', settledAt: expect.any(String) })]);
    expect(await platformRefundBalance()).toBe('0');

    expect(json(await ask(u.outTradeNo, '70'))).toMatchObject({ status: 'Processing', bonusTaken: String(yuan('12.6')) });
    expect(await money(u.token)).toMatchObject({ cash: '0', gift: '0' });
    const over = await ask(u.outTradeNo, '0.01');
    expect(over.statusCode).toBe(400);
    expect(json(over)).toMatchObject({ code: 40034001, detail: expect.stringContaining('最多还可退 0.00 元') });
    await poll();
    expect((await myRefunds(u.token)).map((r: { statusText: string }) => r.statusText)).toEqual(['已退款', '已退款']);
  });

  it('two refunds at once that together pass what was paid: exactly one goes through', async () => {
    const u = await recharged('100');
    const answers = await Promise.all([ask(u.outTradeNo, '60'), ask(u.outTradeNo, '60')]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 400]);
    expect(json(answers.find((a) => a.statusCode === 400)!).code).toBe(40034001);
    expect((await money(u.token)).cash).toBe(String(yuan('40')));
    await poll();
  });

  it('WeChat: the signed refund notification settles it; replayed, it is applied once', async () => {
    const u = await recharged('50', 'Wechat');
    const r = json(await ask(u.outTradeNo, '50'));
    expect(r).toMatchObject({ status: 'Processing', method: 'Wechat' });
    expect((await myRefunds(u.token))[0].statusText).toBe('退款中');
    await complete(u.outTradeNo, r.refundNo);
    const items = await until(
      () => myRefunds(u.token),
      (x) => x[0]?.statusText === '已退款',
      'the refund notification',
    );
    expect(items[0]).toMatchObject({ amount: String(yuan('50')), bonusTaken: String(yuan('9')) });
    const note = g.sent.find((d) => d.url.endsWith('/refund-notify/wechat') && d.body)!;
    for (let i = 0; i < 5; i++) {
      const res = await s.app.inject({ method: 'POST', url: new URL(note.url).pathname, headers: note.headers, payload: note.body });
      expect(res.statusCode).toBe(204);
    }
    const logged = await s.ctx.db.select().from(paymentNotifications).where(eq(paymentNotifications.outTradeNo, u.outTradeNo));
    expect(logged.filter((n) => n.reason.startsWith('refund') && n.outcome === 'applied')).toHaveLength(1);
    expect(logged.filter((n) => n.reason.startsWith('refund') && n.outcome === 'replayed')).toHaveLength(5);
    expect(await money(u.token)).toMatchObject({ cash: '0', gift: '0' });
    expect(await platformRefundBalance()).toBe('0');
    // A forged one is refused and changes nothing.
    const forged = await s.app.inject({
      method: 'POST',
      url: new URL(note.url).pathname,
      headers: { ...note.headers, 'wechatpay-signature': 'AAAA' },
      payload: note.body,
    });
    expect(forged.statusCode).toBe(500);
  });

  it('a refund the gateway fails puts the money and the bonus back; it can be asked again', async () => {
    const u = await recharged('50', 'Wechat');
    const r = json(await ask(u.outTradeNo, '20'));
    await (g.drivers.Wechat as SandboxPaymentDriver).failRefund(u.outTradeNo, r.refundNo);
    const items = await until(
      () => myRefunds(u.token),
      (x) => x[0]?.statusText === '退款失败',
      'the failure notification',
    );
    expect(items[0].failReason).toContain('退款异常');
    expect(await money(u.token)).toMatchObject({ cash: String(yuan('50')), gift: String(yuan('9')) });
    const cash = json(await get(s.app, '/billing/api/v1/user/statement?kind=cash', u.token)).items;
    expect(cash[0]).toMatchObject({ kind: 'refund_back', amount: String(yuan('20')) });
    // Nor toward what left for good: what may be invoiced is whole again.
    expect((await s.ctx.ledger.externalCash(u.user.id)).refunded).toBe(0n);
    // A failed refund does not count toward what was paid: the whole 50 can still go back.
    const again = json(await ask(u.outTradeNo, '50'));
    expect(again.status).toBe('Processing');
    await complete(u.outTradeNo, again.refundNo);
    await until(
      () => myRefunds(u.token),
      (x) => x.some((y: { id: string; statusText: string }) => y.id === again.id && y.statusText === '已退款'),
      'the second refund',
    );
  });

  it('a gateway that refuses outright fails the refund at once, money back in cash', async () => {
    const u = await recharged('30');
    // The gateway knows less than we do (its record lost): it refuses, as Alipay refuses an unknown trade.
    const sandbox = g.drivers.Alipay as SandboxPaymentDriver;
    const original = sandbox.refund.bind(sandbox);
    sandbox.refund = (input) => original({ ...input, paymentTradeNo: 'UNKNOWN' });
    try {
      const r = json(await ask(u.outTradeNo, '10'));
      expect(r).toMatchObject({ status: 'Failed', statusText: '退款失败' });
    } finally {
      sandbox.refund = original;
    }
    expect((await money(u.token)).cash).toBe(String(yuan('30')));
  });

  it('only money still in cash goes back; a spent bonus is taken from cash', async () => {
    const u = await recharged('100');
    // The user spent the whole bonus and 80 of cash (an order), as checkout spends: the grant taken, then the ledger.
    await s.ctx.db.transaction(async (tx) => {
      for (const grant of await s.ctx.gifts.lockSpendable(tx, u.user.id)) await s.ctx.gifts.take(tx, grant.id, grant.remain);
      await s.ctx.ledger.post(
        {
          key: `test-spend:${u.user.id}`,
          kind: 'order',
          legs: [
            { account: { userId: u.user.id, kind: 'gift' }, amount: -yuan('18') },
            { account: { userId: u.user.id, kind: 'cash' }, amount: -yuan('80') },
            { account: { platform: 'revenue' }, amount: yuan('98') },
          ],
        },
        tx,
      );
    });
    const short = await ask(u.outTradeNo, '20');
    expect(short.statusCode).toBe(400);
    expect(json(short).code).toBe(40034003);
    // 10 back costs 10 + its 1.8 of bonus, from cash since no gift credit is left.
    expect(json(await ask(u.outTradeNo, '10'))).toMatchObject({ bonusTaken: String(yuan('1.8')) });
    expect(await money(u.token)).toMatchObject({ cash: String(yuan('8.2')), gift: '0' });
    await poll();
  });

  it('a repeated request id refunds once; bad input, unknown and unpaid trades and non-operators are refused', async () => {
    const u = await recharged('40');
    const body = { outTradeNo: u.outTradeNo, amount: '10', reason: '重复提交', requestId: randomUUID() };
    expect(json(await refund(body))).toMatchObject({ replayed: false });
    expect(json(await refund(body))).toMatchObject({ replayed: true, amount: String(yuan('10')) });
    expect((await money(u.token)).cash).toBe(String(yuan('30')));
    expect(json(await refund({ ...body, amount: '11' }))).toMatchObject({ code: 40911001 });

    for (const bad of [
      { ...body, requestId: randomUUID(), amount: '0' },
      { ...body, requestId: randomUUID(), amount: '1.001' },
      { ...body, requestId: randomUUID(), amount: '-1' },
      { ...body, requestId: randomUUID(), reason: '' },
      { ...body, requestId: 'not-a-uuid' },
      { ...body, requestId: randomUUID(), outTradeNo: 'bad no!' },
    ]) {
      const res = await refund(bad);
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(json(res).code).toBe(40000001);
    }
    expect(json(await ask('R20990101000000ffffffffffff', '1'))).toMatchObject({ code: 40434001 });
    const unpaid = json(await post(s.app, '/billing/api/v1/recharge', { amount: '20', method: 'Alipay' }, u.token));
    expect(json(await ask(unpaid.outTradeNo, '1'))).toMatchObject({ code: 40034002 });

    const plain = await refund({ ...body, requestId: randomUUID() }, { authorization: `Bearer ${u.token}` });
    expect(plain.statusCode).toBe(403);
    expect((await refund({ ...body, requestId: randomUUID() }, {})).statusCode).toBe(401);
    expect(
      (await s.app.inject({ method: 'GET', url: `${REFUNDS}?outTradeNo=${u.outTradeNo}`, headers: { authorization: `Bearer ${u.token}` } })).statusCode,
    ).toBe(403);
    const listed = json(await s.app.inject({ method: 'GET', url: `${REFUNDS}?outTradeNo=${u.outTradeNo}`, headers: OPERATOR }));
    expect(listed.total).toBe(1);
    expect((await money(u.token)).cash).toBe(String(yuan('30')));
    await poll();
  });
});
