/**
 * Refunds in the real drivers, against local servers playing Alipay's gateway and WeChat Pay v3
 * (signatures checked both ways), and in the embedded sandbox.
 */
import { createSign, createVerify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlipayPaymentDriver } from './alipay.js';
import { generateRsaKeyPair, loadPrivateKey, loadPublicKey } from './keys.js';
import { MemorySandboxStore } from './sandbox-store.js';
import { SandboxPaymentDriver } from './sandbox.js';
import { startStub, type Stub, type StubAnswer, type StubRequest } from './test-support.js';
import { encryptResource, parseAuthorization, requestMessage, signedHeaders } from './wechat-protocol.js';
import { WechatPaymentDriver } from './wechat.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const ours = generateRsaKeyPair();
const gateway = generateRsaKeyPair();
const NOTIFY = 'https://console.example/billing/api/v1/payment/refund-notify/wechat';

describe('Alipay refunds (local stub gateway)', () => {
  const APP_ID = '2021004100000001';
  let stub: Stub;
  let answer: (method: string, biz: Record<string, unknown>) => StubAnswer;
  const params = (r: StubRequest) => ({ ...Object.fromEntries(new URL(r.url, 'http://s').searchParams), ...Object.fromEntries(new URLSearchParams(r.body)) });
  const signContent = (p: Record<string, string>) =>
    Object.keys(p)
      .filter((k) => k !== 'sign' && p[k] !== '')
      .sort()
      .map((k) => `${k}=${p[k]}`)
      .join('&');
  const signed = (method: string, inner: object): StubAnswer => {
    const json = JSON.stringify(inner);
    const sign = createSign('RSA-SHA256').update(json, 'utf8').sign(gateway.privateKey, 'base64');
    return { headers: { 'content-type': 'application/json;charset=utf-8' }, body: `{"${method.replaceAll('.', '_')}_response":${json},"sign":"${sign}"}` };
  };

  beforeAll(async () => {
    stub = await startStub((r) => {
      const p = params(r);
      const ok = createVerify('RSA-SHA256')
        .update(signContent(p))
        .verify(ours.publicKey, p.sign ?? '', 'base64');
      if (!ok) return signed(p.method!, { code: '40002', msg: 'Invalid Arguments', sub_code: 'isv.invalid-signature' });
      return answer(p.method!, JSON.parse(p.biz_content ?? '{}') as Record<string, unknown>);
    });
  });
  afterAll(() => stub.close());

  const driver = () =>
    new AlipayPaymentDriver({
      appId: APP_ID,
      privateKey: ours.privateKey,
      alipayPublicKey: gateway.publicKey,
      gateway: `${stub.url}/gateway.do`,
      now: () => NOW,
    });
  const input = { paymentTradeNo: 'R1', refundNo: 'RF1', amount: 300000n, total: 1000000n, reason: '用户申请退款', notifyUrl: NOTIFY };
  const biz = () => JSON.parse(params(stub.requests.at(-1)!).biz_content!) as Record<string, unknown>;

  it('sends alipay.trade.refund with out_request_no for a partial refund; fund_change Y is success', async () => {
    answer = (m) =>
      signed(m, { code: '10000', msg: 'Success', trade_no: '2026010122001', fund_change: 'Y', refund_fee: '30.00', gmt_refund_pay: '2026-01-01 08:00:05' });
    const r = await driver().refund(input);
    expect(params(stub.requests.at(-1)!).method).toBe('alipay.trade.refund');
    expect(biz()).toEqual({ out_trade_no: 'R1', refund_amount: '30.00', refund_reason: '用户申请退款', out_request_no: 'RF1' });
    expect(r).toEqual({
      refundNo: 'RF1',
      status: 'Succeeded',
      gatewayRefundNo: '2026010122001',
      amount: 300000n,
      succeededAt: new Date('2026-01-01T00:00:05Z'),
    });
  });

  it('a repeat (fund_change N) asks alipay.trade.fastpay.refund.query which says whether it succeeded', async () => {
    answer = (m) =>
      m === 'alipay.trade.refund'
        ? signed(m, { code: '10000', msg: 'Success', fund_change: 'N' })
        : signed(m, { code: '10000', msg: 'Success', out_request_no: 'RF1', refund_amount: '30.00', refund_status: 'REFUND_SUCCESS' });
    expect(await driver().refund(input)).toMatchObject({ status: 'Succeeded', amount: 300000n });
    expect(biz()).toEqual({ out_trade_no: 'R1', out_request_no: 'RF1', query_options: ['gmt_refund_pay'] });
    answer = (m) =>
      m === 'alipay.trade.refund' ? signed(m, { code: '10000', msg: 'Success', fund_change: 'N' }) : signed(m, { code: '10000', msg: 'Success' });
    expect(await driver().refund(input)).toEqual({ refundNo: 'RF1', status: 'Processing' });
  });

  it('query: no refund details means Alipay has no successful refund under that number', async () => {
    answer = (m) => signed(m, { code: '10000', msg: 'Success', out_trade_no: 'R1' });
    expect(await driver().queryRefund({ refundNo: 'RF9', paymentTradeNo: 'R1' })).toEqual({ refundNo: 'RF9', status: 'NotFound' });
  });

  it('maps refusals (Rejected: nothing refunded) and outages (Unavailable: ask again)', async () => {
    answer = (m) => signed(m, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.SELLER_BALANCE_NOT_ENOUGH', sub_msg: '卖家余额不足' });
    await expect(driver().refund(input)).rejects.toMatchObject({ kind: 'Rejected', gatewayCode: 'ACQ.SELLER_BALANCE_NOT_ENOUGH' });
    answer = (m) => signed(m, { code: '20000', msg: 'Service Currently Unavailable', sub_code: 'ACQ.SYSTEM_ERROR' });
    await expect(driver().refund(input)).rejects.toMatchObject({ kind: 'Unavailable' });
  });
});

describe('WeChat Pay v3 refunds (local stub server)', () => {
  const MCHID = '1900000109';
  const SERIAL = 'PLATFORM_SERIAL_1';
  const API_V3_KEY = 'a'.repeat(32);
  let stub: Stub;
  let answer: (r: StubRequest) => { status?: number; body: object };
  const platformKey = loadPrivateKey(gateway.privateKey);

  beforeAll(async () => {
    stub = await startStub((r) => {
      const auth = parseAuthorization(r.headers.authorization as string | undefined);
      const ok =
        !!auth &&
        createVerify('RSA-SHA256')
          .update(requestMessage(r.method, r.url, auth.timestamp!, auth.nonce_str!, r.body))
          .verify(loadPublicKey(ours.publicKey), auth.signature!, 'base64');
      if (!ok) return { status: 401, body: JSON.stringify({ code: 'SIGN_ERROR', message: '签名错误' }) };
      const a = answer(r);
      const body = JSON.stringify(a.body);
      return { status: a.status ?? 200, headers: { 'content-type': 'application/json', ...signedHeaders(body, SERIAL, platformKey, new Date()) }, body };
    });
  });
  afterAll(() => stub.close());

  const driver = () =>
    new WechatPaymentDriver({
      mchid: MCHID,
      appid: 'wx0000000000000001',
      merchantSerialNo: 'MERCHANT_SERIAL',
      merchantPrivateKey: ours.privateKey,
      apiV3Key: API_V3_KEY,
      platformPublicKeys: { [SERIAL]: gateway.publicKey },
      baseUrl: stub.url,
    });
  const input = { paymentTradeNo: 'R2', refundNo: 'RF2', amount: 250000n, total: 1000000n, reason: '部分退款', notifyUrl: NOTIFY };
  const refundBody = (status: string, extra: object = {}) => ({
    refund_id: '50300000000000000000000000001',
    out_refund_no: 'RF2',
    out_trade_no: 'R2',
    status,
    amount: { total: 10000, refund: 2500, payer_total: 10000, payer_refund: 2500, currency: 'CNY' },
    ...extra,
  });

  it('POSTs /v3/refund/domestic/refunds with out_refund_no, amount in fen and notify_url; PROCESSING is 退款中', async () => {
    answer = () => ({ body: refundBody('PROCESSING') });
    const r = await driver().refund(input);
    const req = stub.requests.at(-1)!;
    expect([req.method, req.url]).toEqual(['POST', '/v3/refund/domestic/refunds']);
    expect(JSON.parse(req.body)).toEqual({
      out_trade_no: 'R2',
      out_refund_no: 'RF2',
      reason: '部分退款',
      notify_url: NOTIFY,
      amount: { refund: 2500, total: 10000, currency: 'CNY' },
    });
    expect(r).toEqual({ refundNo: 'RF2', status: 'Processing', gatewayRefundNo: '50300000000000000000000000001', amount: 250000n });
  });

  it('queries GET /v3/refund/domestic/refunds/{out_refund_no}: SUCCESS, ABNORMAL, and 404 as never received', async () => {
    answer = () => ({ body: refundBody('SUCCESS', { success_time: '2026-01-01T08:00:10+08:00' }) });
    expect(await driver().queryRefund({ refundNo: 'RF2', paymentTradeNo: 'R2' })).toMatchObject({
      status: 'Succeeded',
      succeededAt: new Date('2026-01-01T00:00:10Z'),
    });
    expect(stub.requests.at(-1)!.url).toBe('/v3/refund/domestic/refunds/RF2');
    answer = () => ({ body: refundBody('ABNORMAL') });
    expect(await driver().queryRefund({ refundNo: 'RF2', paymentTradeNo: 'R2' })).toMatchObject({
      status: 'Failed',
      failReason: expect.stringContaining('退款异常'),
    });
    answer = () => ({ status: 404, body: { code: 'RESOURCE_NOT_EXISTS', message: '退款单不存在' } });
    expect(await driver().queryRefund({ refundNo: 'RF2', paymentTradeNo: 'R2' })).toEqual({ refundNo: 'RF2', status: 'NotFound' });
  });

  it('maps a merchant balance too low (NOT_ENOUGH) to Rejected and a 500 to Unavailable', async () => {
    answer = () => ({ status: 403, body: { code: 'NOT_ENOUGH', message: '基本账户余额不足' } });
    await expect(driver().refund(input)).rejects.toMatchObject({ kind: 'Rejected', gatewayCode: 'NOT_ENOUGH' });
    answer = () => ({ status: 500, body: { code: 'SYSTEM_ERROR', message: '系统错误' } });
    await expect(driver().refund(input)).rejects.toMatchObject({ kind: 'Unavailable' });
  });

  function notification(resource: object, opts: { event?: string; key?: string; serialKey?: typeof platformKey } = {}) {
    const body = JSON.stringify({
      id: 'EV-1',
      event_type: opts.event ?? 'REFUND.SUCCESS',
      resource_type: 'encrypt-resource',
      resource: encryptResource(opts.key ?? API_V3_KEY, JSON.stringify(resource), 'refund', 'refund'),
    });
    return { headers: signedHeaders(body, SERIAL, opts.serialKey ?? platformKey, new Date()), rawBody: body };
  }
  const refundResource = {
    mchid: MCHID,
    out_trade_no: 'R2',
    out_refund_no: 'RF2',
    refund_id: '503',
    refund_status: 'SUCCESS',
    amount: { total: 10000, refund: 2500 },
  };

  it('verifies a refund notification: signature, AEAD_AES_256_GCM resource, our mchid', async () => {
    expect(await driver().verifyRefundNotification(notification(refundResource))).toMatchObject({
      ok: true,
      notification: { notificationId: 'EV-1', refundNo: 'RF2', paymentTradeNo: 'R2', status: 'Succeeded', amount: 250000n },
    });
    const stranger = loadPrivateKey(generateRsaKeyPair().privateKey);
    expect(await driver().verifyRefundNotification(notification(refundResource, { serialKey: stranger }))).toEqual({ ok: false, reason: 'bad signature' });
    expect((await driver().verifyRefundNotification(notification(refundResource, { key: 'b'.repeat(32) }))).ok).toBe(false);
    expect(await driver().verifyRefundNotification(notification({ ...refundResource, mchid: '1' }))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/mchid/),
    });
    expect(await driver().verifyRefundNotification(notification(refundResource, { event: 'TRANSACTION.SUCCESS' }))).toMatchObject({ ok: false });
    expect((await driver().verifyRefundNotification({ headers: {}, rawBody: 'garbage' })).ok).toBe(false);
  });
});

describe('the sandbox gateway refunds like them', () => {
  async function paidTrade(method: 'Alipay' | 'Wechat', posts: { url: string; headers: Record<string, string>; body: string }[] = []) {
    const fakeFetch = (async (url: string | URL, init?: RequestInit) => {
      posts.push({ url: String(url), headers: Object.fromEntries(new Headers(init?.headers).entries()), body: String(init?.body) });
      return new Response(null, { status: 204 });
    }) as typeof fetch;
    const d = new SandboxPaymentDriver({
      method,
      publicBaseUrl: 'http://console.test',
      store: new MemorySandboxStore(),
      gatewayKeys: SandboxPaymentDriver.generateKeys(),
      retryDelaysMs: [5],
      refundDelayMs: 30,
      fetch: fakeFetch,
    });
    await d.precreate({ outTradeNo: 'R3', amount: 1000000n, subject: '充值', expiresAt: new Date(Date.now() + 600_000), notifyUrl: 'http://console.test/n' });
    await d.pay('R3');
    return d;
  }
  /** Until the sandbox's refund time (30 ms) has passed and what it sends has been sent. */
  const settled = async (d: SandboxPaymentDriver) => {
    await new Promise((r) => setTimeout(r, 80));
    await d.idle();
  };
  const refund = (refundNo: string, amount: bigint) => ({ paymentTradeNo: 'R3', refundNo, amount, total: 1000000n, reason: '测试', notifyUrl: NOTIFY });

  it('answers 退款中 first, then succeeds after its delay; the same number is the same refund', async () => {
    const d = await paidTrade('Alipay');
    expect(await d.refund(refund('RF1', 400000n))).toMatchObject({ status: 'Processing', amount: 400000n });
    expect(await d.refund(refund('RF1', 400000n))).toMatchObject({ status: 'Processing' });
    await settled(d);
    expect(await d.queryRefund({ refundNo: 'RF1', paymentTradeNo: 'R3' })).toMatchObject({ status: 'Succeeded', amount: 400000n });
    await expect(d.refund(refund('RF1', 1n * 100n))).rejects.toMatchObject({ kind: 'Rejected' });
  });

  it('never refunds more than the trade: partials up to the total, then refused', async () => {
    const d = await paidTrade('Alipay');
    await d.refund(refund('RF1', 600000n));
    await d.refund(refund('RF2', 400000n));
    await expect(d.refund(refund('RF3', 100n))).rejects.toMatchObject({ kind: 'Rejected', gatewayCode: 'ACQ.REFUND_AMT_NOT_EQUAL_TOTAL' });
    await expect(d.refund({ ...refund('RF4', 100n), paymentTradeNo: 'NOPE' })).rejects.toMatchObject({ kind: 'NotFound' });
    expect(await d.queryRefund({ refundNo: 'RF9', paymentTradeNo: 'R3' })).toEqual({ refundNo: 'RF9', status: 'NotFound' });
    await d.idle();
  });

  it('WeChat style: a signed, encrypted REFUND.SUCCESS notification goes to notify_url and verifies', async () => {
    const posts: { url: string; headers: Record<string, string>; body: string }[] = [];
    const d = await paidTrade('Wechat', posts);
    await d.refund(refund('RF1', 250000n));
    await settled(d);
    const sent = posts.filter((p) => p.url === NOTIFY);
    expect(sent).toHaveLength(1);
    expect(await d.verifyRefundNotification({ headers: sent[0]!.headers, rawBody: sent[0]!.body })).toMatchObject({
      ok: true,
      notification: { refundNo: 'RF1', paymentTradeNo: 'R3', status: 'Succeeded', amount: 250000n },
    });
  });

  it('a refund failed by hand (模拟) says so, and the failed amount can be refunded again', async () => {
    const posts: { url: string; headers: Record<string, string>; body: string }[] = [];
    const d = await paidTrade('Wechat', posts);
    await d.refund(refund('RF1', 1000000n));
    expect(await d.failRefund('R3', 'RF1')).toMatchObject({ status: 'Failed', failReason: expect.stringContaining('模拟') });
    await d.idle();
    const sent = posts.filter((p) => p.url === NOTIFY);
    expect(await d.verifyRefundNotification({ headers: sent[0]!.headers, rawBody: sent[0]!.body })).toMatchObject({
      ok: true,
      notification: { status: 'Failed' },
    });
    expect(await d.refund(refund('RF2', 1000000n))).toMatchObject({ status: 'Processing' });
    await settled(d);
  });
});
