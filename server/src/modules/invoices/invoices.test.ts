import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { fenCeilText, isUnifiedSocialCreditCode, isValidTaxNo, yuanToUnits, type Order } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { BASE, sandboxWiring, until } from '../../../test/payment-sandbox.js';
import { users } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const yuan = yuanToUnits;
const LIST = '/billing/api/v1/invoices';
const INVOICEABLE = '/billing/api/v1/invoices/invoiceable';
const OPS = '/api/v1/operator/invoices';
/** A real 统一社会信用代码 layout whose last character is its GB 32100 check character. */
const USCC = '91350100M000100Y43';
const personal = (amount: string) => ({ kind: 'normal', titleType: 'personal', title: '张三', email: 'zhangsan@example.com', amount });
const enterprise = (amount: string, taxNo = USCC) => ({
  kind: 'special',
  titleType: 'enterprise',
  title: '福州某某科技有限公司',
  taxNo,
  email: 'finance@example.com',
  amount,
});

describe('invoices', () => {
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  let operator: Awaited<ReturnType<typeof registerUser>>;
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    s = await startTestServer({ env: { PUBLIC_BASE_URL: BASE }, drivers: { payment: w.drivers } });
    clock = s.clock;
    w.wiring.app = s.app;
    operator = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, operator.user.id));
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  /** Money in through a gateway, posted as the payment service posts it. */
  async function paidIn(userId: string, amount: string) {
    await s.ctx.ledger.post({
      key: `payment:test-${randomUUID()}`,
      kind: 'gateway_in',
      legs: [
        { account: { platform: 'clearing', name: 'alipay' }, amount: -yuan(amount) },
        { account: { userId, kind: 'cash' }, amount: yuan(amount) },
      ],
    });
  }
  /** Cash spent on an order, posted as a balance payment posts it. */
  async function spend(userId: string, amount: string) {
    await s.ctx.ledger.post({
      key: `order-pay:test-${randomUUID()}`,
      kind: 'order',
      legs: [
        { account: { userId, kind: 'cash' }, amount: -yuan(amount) },
        { account: { platform: 'revenue' }, amount: yuan(amount) },
      ],
    });
  }
  /** Money paid in through a gateway and spent: what may be invoiced. */
  async function paidAndSpent(userId: string, amount: string) {
    await paidIn(userId, amount);
    await spend(userId, amount);
  }
  const invoiceable = async (token: string) => json(await get(s.app, INVOICEABLE, token));

  it('counts cash consumed, at most what came in through a gateway: a 100-yuan recharge once spent, never its 18 gift nor a compensation', async () => {
    const u = await registerUser(s);
    const r = json(await post(s.app, '/billing/api/v1/recharge', { amount: '100', method: 'Wechat' }, u.token));
    await s.app.inject({ method: 'POST', url: `${new URL(r.qrContent).pathname}/pay` });
    await until(
      () => get(s.app, `/billing/api/v1/recharge/${r.id}`, u.token).then(json),
      (x) => x.status === 'Paid',
      'the recharge',
    );
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan('50') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuan('50') },
      ],
    });
    // Recharged, not yet spent: nothing consumed, nothing to invoice.
    expect(await invoiceable(u.token)).toEqual({ invoiceable: '0', paidIn: String(yuan('100')), refunded: '0', consumed: '0', invoiced: '0', pending: '0' });
    await spend(u.user.id, '40');
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: String(yuan('40')), consumed: String(yuan('40')) });
    // 130 spent (the 18 gift untouched): the compensation's cash is spent too, but only the 100 paid in is invoiceable.
    await spend(u.user.id, '90');
    expect(await invoiceable(u.token)).toEqual({
      invoiceable: String(yuan('100')),
      paidIn: String(yuan('100')),
      refunded: '0',
      consumed: String(yuan('130')),
      invoiced: '0',
      pending: '0',
    });
  });

  it('counts what model calls were charged as consumed (held, charged, the rest back), not what was held', async () => {
    const u = await registerUser(s);
    await paidIn(u.user.id, '10');
    const made = json<{ secret: string }>(await post(s.app, '/api/v1/model/keys', { name: 'invoice' }, u.token));
    const auth = await s.ctx.apiKeys.authenticate(`Bearer ${made.secret}`, '127.0.0.1', 'qwen-mini-sim');
    if (!auth.ok) throw new Error(auth.reason);
    const model = (await s.ctx.models.get('qwen-mini-sim'))!;
    const call = await s.ctx.modelGateway.hold(auth.key, model, 1000, 100_000);
    // While the call runs the hold is not consumption.
    expect(await invoiceable(u.token)).toMatchObject({ consumed: '0' });
    const cost = await s.ctx.modelGateway.settle(call, {
      usage: { prompt_tokens: 1000, completion_tokens: 50_000, total_tokens: 51_000 },
      channel: 'embedded',
      status: 'ok',
    });
    await s.ctx.modelGateway.drain();
    expect(cost).toBeGreaterThan(0n);
    expect(await invoiceable(u.token)).toMatchObject({ consumed: String(cost), invoiceable: String(cost) });
  });

  it('follows the ledger: a QR-paid 日转月 refunded by 退订 is not invoiceable, and the QR-paid orders say 支付宝 / 微信', async () => {
    const u = await registerUser(s);
    const settle = async (ms: number) => {
      s.clock.advance(ms);
      await s.ctx.reconciler.tick();
    };
    /** Pays an unpaid GPU order by scanning its sandbox QR, as a phone would; returns what the QR asked for. */
    const payByQr = async (uid: string, method: 'Alipay' | 'Wechat') => {
      const opened = json(await post(s.app, `/order/api/v2.1/gpu/order/${uid}/pay`, { method }, u.token));
      expect(opened.payment, JSON.stringify(opened)).toMatchObject({ method, status: 'Pending' });
      await s.app.inject({ method: 'POST', url: `${new URL(opened.payment.qrContent).pathname}/pay` });
      await until(
        () => get(s.app, `/order/api/v2.1/gpu/order/${uid}/pay`, u.token).then(json),
        (x) => x.status === 'Success',
        `order ${uid}`,
      );
      return BigInt(opened.payment.amount);
    };

    // A Day RTX 4090 paid by Alipay, then converted to a month paid by WeChat, then refunded (退订).
    const day = json(
      await post(s.app, '/infra/api/v2.1/gpu/order', { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1 }, u.token),
    );
    const dayQr = await payByQr(day.orderUid, 'Alipay');
    const id = json(await get(s.app, `/order/api/v2.1/gpu/order/${day.orderUid}`, u.token)).resourceId;
    await settle(10_000);
    await settle(10_000);
    s.clock.advance(6 * 3_600_000);
    const toMonth = json(await post(s.app, `/upgpu/api/v2.1/instances/${id}/day-to-month`, undefined, u.token));
    expect(toMonth).toMatchObject({ type: 'DayToMonth', status: 'Unpaid' });
    const monthQr = await payByQr(toMonth.orderUid, 'Wechat');
    expect((await post(s.app, `/upgpu/api/v2.1/instances/${id}/stop`, undefined, u.token)).statusCode).toBe(200);
    await settle(10_000);
    const refund = await post(s.app, `/upgpu/api/v2.1/instances/${id}/refund`, undefined, u.token);
    expect(refund.statusCode, refund.body).toBe(200);
    const refunded = BigInt(json(refund).refund);
    expect(refunded).toBeGreaterThan(0n);

    // What stayed consumed is the two orders less the refund; the refunded money went back to the balance, not to be invoiced.
    const consumed = BigInt(day.amount) + BigInt(toMonth.amount) - refunded;
    const a = await invoiceable(u.token);
    expect(a).toMatchObject({ paidIn: String(dayQr + monthQr), refunded: '0', consumed: String(consumed), invoiceable: String(consumed) });
    expect(json(await post(s.app, LIST, personal(fenCeilText(consumed + 1n)), u.token))).toMatchObject({ code: 40022001 });

    // The ledger says how each order was paid: by the gateway's money, not from the balance.
    const list = json(await get(s.app, '/order/api/v2.1/orders?filterBy=type,NewBuy,type,DayToMonth', u.token));
    expect(list.items.map((o: Order) => [o.type, o.payMethod, o.paid.map((p) => p.source)])).toEqual([
      ['DayToMonth', 'Wechat', ['cash']],
      ['NewBuy', 'Alipay', ['cash']],
    ]);
  });

  it('requests, cancels, gets issued and rejected; the invoiceable amount follows every step', async () => {
    const u = await registerUser(s);
    await paidAndSpent(u.user.id, '100');
    const first = await post(s.app, LIST, personal('60'), u.token);
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toMatchObject({ status: 'Pending', amount: String(yuan('60')), kind: 'normal', titleType: 'personal', taxNo: '', invoiceNo: null });
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: String(yuan('40')), pending: String(yuan('60')) });

    const over = await post(s.app, LIST, personal('40.01'), u.token);
    expect(over.statusCode).toBe(400);
    expect(json(over)).toMatchObject({ code: 40022001, detail: '本次最多可开 40.00 元' });

    const cancelled = await post(s.app, `${LIST}/${json(first).id}/cancel`, undefined, u.token);
    expect(json(cancelled)).toMatchObject({ status: 'Cancelled' });
    expect(json(cancelled).closedAt).not.toBeNull();
    expect(json(await post(s.app, `${LIST}/${json(first).id}/cancel`, undefined, u.token)).code).toBe(40922001);
    expect((await invoiceable(u.token)).invoiceable).toBe(String(yuan('100')));

    s.clock.advance(1000);
    const big = json(await post(s.app, LIST, enterprise('70'), u.token));
    s.clock.advance(1000);
    const small = json(await post(s.app, LIST, personal('30'), u.token));
    expect((await invoiceable(u.token)).invoiceable).toBe('0');
    const issued = await post(s.app, `${OPS}/${big.id}/issue`, { invoiceNo: '25332000000012345678' }, operator.token);
    expect(issued.statusCode, issued.body).toBe(200);
    const rejected = await post(s.app, `${OPS}/${small.id}/reject`, { reason: '抬头与付款人不一致' }, operator.token);
    expect(json(rejected)).toMatchObject({ status: 'Rejected', rejectReason: '抬头与付款人不一致' });
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: String(yuan('30')), invoiced: String(yuan('70')), pending: '0' });

    // The user's list, newest first, with the number and the reason.
    const list = json(await get(s.app, `${LIST}?page=1&pageSize=10`, u.token));
    expect(list.total).toBe(3);
    expect(list.items.map((i: { status: string }) => i.status)).toEqual(['Rejected', 'Issued', 'Cancelled']);
    expect(list.items[1]).toMatchObject({ invoiceNo: '25332000000012345678', title: '福州某某科技有限公司', taxNo: USCC });
    expect(json(await get(s.app, `${LIST}?status=Issued`, u.token)).total).toBe(1);

    // Decided requests stay decided; the user cannot cancel them.
    expect(json(await post(s.app, `${OPS}/${small.id}/issue`, { invoiceNo: '12345678' }, operator.token)).code).toBe(40922001);
    expect(json(await post(s.app, `${LIST}/${big.id}/cancel`, undefined, u.token)).code).toBe(40922001);
  });

  it('takes money refunded out of the invoiceable amount, never below zero', async () => {
    const u = await registerUser(s);
    await paidIn(u.user.id, '100');
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan('20') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuan('20') },
      ],
    });
    await spend(u.user.id, '110');
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: String(yuan('100')) });
    await post(s.app, LIST, personal('95'), u.token);
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'refund_out',
      legs: [
        { account: { userId: u.user.id, kind: 'cash' }, amount: -yuan('5') },
        { account: { platform: 'refund' }, amount: yuan('5') },
      ],
    });
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: '0', refunded: String(yuan('5')) });
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'refund_out',
      legs: [
        { account: { userId: u.user.id, kind: 'cash' }, amount: -yuan('3') },
        { account: { platform: 'refund' }, amount: yuan('3') },
      ],
    });
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: '0', refunded: String(yuan('8')), pending: String(yuan('95')) });
  });

  it('lets only as many simultaneous requests through as the invoiceable amount covers', async () => {
    const u = await registerUser(s);
    await paidAndSpent(u.user.id, '100');
    const results = await Promise.all(Array.from({ length: 6 }, () => post(s.app, LIST, personal('30'), u.token)));
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(3);
    for (const r of results.filter((x) => x.statusCode !== 200)) expect(json(r).code).toBe(40022001);
    expect(await invoiceable(u.token)).toMatchObject({ invoiceable: String(yuan('10')), pending: String(yuan('90')) });
  });

  it('refuses bad input with a code and a message naming the field, writing nothing', async () => {
    const u = await registerUser(s);
    await paidAndSpent(u.user.id, '100');
    const bad: [unknown, RegExp][] = [
      [{ ...enterprise('10'), taxNo: '' }, /taxNo.*企业抬头须填写纳税人识别号/],
      [{ ...enterprise('10'), taxNo: '91350100M000100Y44' }, /taxNo.*校验位/],
      [{ ...enterprise('10'), taxNo: '12345' }, /taxNo/],
      [{ ...personal('10'), kind: 'special' }, /titleType.*专用发票仅能开给企业抬头/],
      [personal('0'), /amount.*开票金额须大于 0/],
      [personal('1.234'), /amount/],
      [{ ...personal('10'), email: 'nope' }, /email/],
      [{ ...personal('10'), title: '' }, /title/],
      [{ ...personal('10'), kind: 'vat' }, /kind/],
      [{}, /./],
    ];
    for (const [body, detail] of bad) {
      const res = await post(s.app, LIST, body, u.token);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res).code).toBe(40000001);
      expect(json(res).detail).toMatch(detail);
    }
    // Lower case is accepted and kept upper case; 15- and 20-character numbers need no check character.
    expect(json(await post(s.app, LIST, enterprise('1', USCC.toLowerCase()), u.token))).toMatchObject({ taxNo: USCC });
    expect((await post(s.app, LIST, enterprise('1', '110108123456789'), u.token)).statusCode).toBe(200);
    expect((await post(s.app, LIST, { ...enterprise('1', '11010819900101123X01'), kind: 'normal' }, u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, LIST, u.token)).total).toBe(3);
    expect(json(await get(s.app, `${LIST}?status=Whatever`, u.token)).code).toBe(40000001);
    expect(json(await post(s.app, `${LIST}/not-a-uuid/cancel`, undefined, u.token)).code).toBe(40000001);
    expect(json(await post(s.app, `${LIST}/${randomUUID()}/cancel`, undefined, u.token)).code).toBe(40400004);
  });

  it('keeps invoices to their account: others cannot see or cancel them, children and visitors are refused', async () => {
    const a = await registerUser(s);
    const b = await registerUser(s);
    await paidAndSpent(a.user.id, '10');
    const inv = json(await post(s.app, LIST, personal('10'), a.token));
    expect(json(await get(s.app, LIST, b.token)).total).toBe(0);
    expect(json(await post(s.app, `${LIST}/${inv.id}/cancel`, undefined, b.token)).code).toBe(40400004);
    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: a.user.id }).where(eq(users.id, child.user.id));
    expect(json(await get(s.app, LIST, child.token)).code).toBe(40300005);
    expect(json(await post(s.app, LIST, personal('1'), child.token)).code).toBe(40300005);
    expect((await get(s.app, INVOICEABLE)).statusCode).toBe(401);
  });

  it('opens the operator endpoints to operators only, and requires a number or a reason', async () => {
    const u = await registerUser(s);
    await paidAndSpent(u.user.id, '10');
    const inv = json(await post(s.app, LIST, personal('10'), u.token));
    expect(json(await get(s.app, OPS, u.token)).code).toBe(40300002);
    expect(json(await post(s.app, `${OPS}/${inv.id}/issue`, { invoiceNo: '12345678' }, u.token)).code).toBe(40300002);
    expect((await get(s.app, OPS)).statusCode).toBe(401);
    expect(json(await post(s.app, `${OPS}/${inv.id}/issue`, { invoiceNo: '12' }, operator.token)).detail).toMatch(/invoiceNo/);
    expect(json(await post(s.app, `${OPS}/${inv.id}/reject`, { reason: '' }, operator.token)).detail).toMatch(/reason/);
    const queue = json(await get(s.app, `${OPS}?status=Pending&pageSize=100`, operator.token));
    expect(queue.items.find((i: { id: string }) => i.id === inv.id)).toMatchObject({ userId: u.user.id, mobile: u.mobile, status: 'Pending' });
  });

  it('checks the GB 32100 check character', () => {
    expect(isUnifiedSocialCreditCode(USCC)).toBe(true);
    expect(isUnifiedSocialCreditCode('91350100M000100Y44')).toBe(false);
    expect(isUnifiedSocialCreditCode('91350100M000100I43')).toBe(false); // I is not in the alphabet
    expect(isValidTaxNo('110108123456789')).toBe(true);
    expect(isValidTaxNo('1101081234567890')).toBe(false);
  });
});
