import { createSign, createVerify } from 'node:crypto';
import { AlipaySdk } from 'alipay-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlipayPaymentDriver } from './alipay.js';
import { PaymentGatewayError } from './errors.js';
import { generateRsaKeyPair } from './keys.js';
import { startStub, type Stub, type StubAnswer, type StubRequest } from './test-support.js';

const APP_ID = '2021004100000001';
const NOW = new Date('2026-01-01T00:00:00Z');
const app = generateRsaKeyPair(); // ours
const alipay = generateRsaKeyPair(); // the gateway's
const stranger = generateRsaKeyPair();

/** Alipay's rule, written out independently of the code under test. */
function signContent(params: Record<string, string>, omit: string[]): string {
  return Object.keys(params)
    .filter((k) => !omit.includes(k) && params[k] !== '')
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
}

function rsa2(content: string, privateKeyPem: string): string {
  return createSign('RSA-SHA256').update(content, 'utf8').sign(privateKeyPem, 'base64');
}

function notificationParams(over: Record<string, string> = {}): Record<string, string> {
  return {
    app_id: APP_ID,
    buyer_id: '2088102122524333',
    charset: 'utf-8',
    gmt_create: '2026-01-01 11:59:30',
    gmt_payment: '2026-01-01 12:00:00',
    notify_id: 'ac05099524730693a8b330c5ecf72da9786',
    notify_time: '2026-01-01 12:00:01',
    notify_type: 'trade_status_sync',
    out_trade_no: 'R20260101000000abc',
    seller_id: '2088101106499364',
    subject: '算力云 余额充值 & 100%+ = 满意',
    total_amount: '12.34',
    trade_no: '2026010122001400001234567890',
    trade_status: 'TRADE_SUCCESS',
    version: '1.0',
    ...over,
  };
}

/** A notification as Alipay posts it: signed over all but sign and sign_type, form-encoded. */
function signedBody(params: Record<string, string>, key = alipay.privateKey): string {
  const sign = rsa2(signContent(params, ['sign', 'sign_type']), key);
  return new URLSearchParams({ ...params, sign_type: 'RSA2', sign }).toString();
}

function driver(gateway?: string) {
  return new AlipayPaymentDriver({ appId: APP_ID, privateKey: app.privateKey, alipayPublicKey: alipay.publicKey, gateway, now: () => NOW });
}

const verify = (rawBody: string) => driver().verifyNotification({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody });

describe('Alipay notifications', () => {
  it('accepts a correctly signed one and reads it in our terms', async () => {
    const r = await verify(signedBody(notificationParams()));
    expect(r).toEqual({
      ok: true,
      notification: {
        notificationId: 'ac05099524730693a8b330c5ecf72da9786',
        outTradeNo: 'R20260101000000abc',
        status: 'Succeeded',
        gatewayTradeNo: '2026010122001400001234567890',
        amount: 123400n,
        paidAt: new Date('2026-01-01T04:00:00Z'),
      },
    });
  });

  it('signs the way alipay-sdk checks notifications (cross-check with the official SDK)', () => {
    const body = signedBody(notificationParams());
    const sdk = new AlipaySdk({ appId: APP_ID, privateKey: app.privateKey, keyType: 'PKCS8', alipayPublicKey: alipay.publicKey });
    expect(sdk.checkNotifySignV2(Object.fromEntries(new URLSearchParams(body)))).toBe(true);
  });

  it('refuses an unsigned notification', async () => {
    const r = await verify(new URLSearchParams(notificationParams()).toString());
    expect(r).toEqual({ ok: false, reason: 'missing sign' });
  });

  it('refuses one signed with another key', async () => {
    const r = await verify(signedBody(notificationParams(), stranger.privateKey));
    expect(r).toEqual({ ok: false, reason: 'bad signature' });
  });

  it('refuses one whose amount was changed after signing', async () => {
    const body = new URLSearchParams(signedBody(notificationParams()));
    body.set('total_amount', '1234.00');
    expect(await verify(body.toString())).toEqual({ ok: false, reason: 'bad signature' });
  });

  it('refuses a correctly signed one for another app', async () => {
    const r = await verify(signedBody(notificationParams({ app_id: '2021009999999999' })));
    expect(r).toEqual({ ok: false, reason: 'app_id 2021009999999999 is not ours' });
  });

  it('refuses the SHA1 "RSA" sign type and repeated parameters', async () => {
    const body = new URLSearchParams(signedBody(notificationParams()));
    body.set('sign_type', 'RSA');
    expect(await verify(body.toString())).toMatchObject({ ok: false, reason: expect.stringMatching(/sign_type/) });
    expect(await verify(`${signedBody(notificationParams())}&total_amount=0.01`)).toMatchObject({ ok: false, reason: expect.stringMatching(/duplicate/) });
  });

  it('never throws on garbage', async () => {
    for (const raw of ['', '%%%', 'sign=abc', '{"json":true}']) expect((await verify(raw)).ok).toBe(false);
  });

  it('maps closed and waiting trades without reporting money', async () => {
    const closed = await verify(signedBody(notificationParams({ trade_status: 'TRADE_CLOSED' })));
    expect(closed).toMatchObject({ ok: true, notification: { status: 'Closed', amount: undefined, paidAt: undefined } });
    const waiting = await verify(signedBody(notificationParams({ trade_status: 'WAIT_BUYER_PAY' })));
    expect(waiting).toMatchObject({ ok: true, notification: { status: 'Pending' } });
    const finished = await verify(signedBody(notificationParams({ trade_status: 'TRADE_FINISHED', total_amount: '0.01' })));
    expect(finished).toMatchObject({ ok: true, notification: { status: 'Succeeded', amount: 100n } });
  });

  it('acks with the plain text Alipay waits for', () => {
    expect(driver().ack(true)).toEqual({ status: 200, contentType: 'text/plain; charset=utf-8', body: 'success' });
    expect(driver().ack(false).body).toBe('fail');
  });
});

/** A stand-in for openapi.alipay.com/gateway.do: checks our RSA2 request signature, answers signed. */
describe('Alipay gateway calls (local stub gateway)', () => {
  let stub: Stub;
  let answer: (method: string, biz: Record<string, unknown>) => StubAnswer;

  function requestParams(r: StubRequest): Record<string, string> {
    const url = new URL(r.url, 'http://stub');
    return { ...Object.fromEntries(url.searchParams), ...Object.fromEntries(new URLSearchParams(r.body)) };
  }

  function signed(method: string, inner: object, key = alipay.privateKey): StubAnswer {
    const json = JSON.stringify(inner);
    return {
      headers: { 'content-type': 'application/json;charset=utf-8' },
      body: `{"${method.replaceAll('.', '_')}_response":${json},"sign":"${rsa2(json, key)}"}`,
    };
  }

  beforeAll(async () => {
    stub = await startStub((r) => {
      const p = requestParams(r);
      const ok = createVerify('RSA-SHA256')
        .update(signContent(p, ['sign']))
        .verify(app.publicKey, p.sign ?? '', 'base64');
      if (!ok || p.app_id !== APP_ID) return signed(p.method!, { code: '40002', msg: 'Invalid Arguments', sub_code: 'isv.invalid-signature' });
      return answer(p.method!, JSON.parse(p.biz_content ?? '{}') as Record<string, unknown>);
    });
  });
  afterAll(() => stub.close());

  const lastParams = () => requestParams(stub.requests.at(-1)!);

  it('precreates with a signed request of the documented shape and returns the QR content', async () => {
    answer = (m, biz) =>
      signed(m, { code: '10000', msg: 'Success', out_trade_no: biz.out_trade_no, qr_code: 'https://qr.alipay.com/bax08431lndnhwlvqfzk6005' });
    const r = await driver(`${stub.url}/gateway.do`).precreate({
      outTradeNo: 'R1',
      amount: 123400n,
      subject: '余额充值',
      expiresAt: new Date(NOW.getTime() + 30 * 60_000),
      notifyUrl: 'https://console.example/billing/api/v1/payment/notify/alipay',
    });
    expect(r.qrContent).toBe('https://qr.alipay.com/bax08431lndnhwlvqfzk6005');
    const p = lastParams();
    expect(p).toMatchObject({ method: 'alipay.trade.precreate', app_id: APP_ID, sign_type: 'RSA2', charset: 'utf-8', version: '1.0' });
    expect(p.notify_url).toBe('https://console.example/billing/api/v1/payment/notify/alipay');
    expect(JSON.parse(p.biz_content!)).toEqual({
      out_trade_no: 'R1',
      total_amount: '12.34',
      subject: '余额充值',
      product_code: 'FACE_TO_FACE_PAYMENT',
      qr_code_timeout_express: '30m',
      time_expire: '2026-01-01 08:30:00',
    });
  });

  it('does not believe an answer signed with another key', async () => {
    answer = (m) => signed(m, { code: '10000', msg: 'Success', qr_code: 'https://evil.example/' }, stranger.privateKey);
    const p = driver(`${stub.url}/gateway.do`).precreate({
      outTradeNo: 'R2',
      amount: 100n,
      subject: 's',
      expiresAt: new Date(NOW.getTime() + 600_000),
      notifyUrl: 'https://x/n',
    });
    await expect(p).rejects.toMatchObject({ kind: 'BadResponse' });
  });

  it('is refused by the gateway when our key is not the registered one', async () => {
    answer = (m) => signed(m, { code: '10000', msg: 'Success', qr_code: 'https://qr.alipay.com/x' });
    const wrong = new AlipayPaymentDriver({
      appId: APP_ID,
      privateKey: stranger.privateKey,
      alipayPublicKey: alipay.publicKey,
      gateway: `${stub.url}/gateway.do`,
      now: () => NOW,
    });
    const p = wrong.precreate({ outTradeNo: 'R3', amount: 100n, subject: 's', expiresAt: new Date(NOW.getTime() + 600_000), notifyUrl: 'https://x/n' });
    await expect(p).rejects.toMatchObject({ kind: 'Rejected', gatewayCode: 'isv.invalid-signature' });
  });

  it('maps a paid trade and a sub-fen amount before anything is sent', async () => {
    answer = (m) => signed(m, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_HAS_SUCCESS', sub_msg: '交易已被支付' });
    const d = driver(`${stub.url}/gateway.do`);
    const input = { outTradeNo: 'R4', amount: 100n, subject: 's', expiresAt: new Date(NOW.getTime() + 600_000), notifyUrl: 'https://x/n' };
    await expect(d.precreate(input)).rejects.toMatchObject({ kind: 'AlreadyPaid' });
    const before = stub.requests.length;
    await expect(d.precreate({ ...input, amount: 101n })).rejects.toThrow(RangeError);
    expect(stub.requests.length).toBe(before);
  });

  it('queries: paid, waiting, and not yet scanned', async () => {
    const d = driver(`${stub.url}/gateway.do`);
    answer = (m, biz) =>
      signed(m, {
        code: '10000',
        msg: 'Success',
        out_trade_no: biz.out_trade_no,
        trade_no: '2026010122001400009999',
        trade_status: 'TRADE_SUCCESS',
        total_amount: '88.88',
        send_pay_date: '2026-01-01 08:05:00',
      });
    expect(await d.query('R5')).toEqual({
      outTradeNo: 'R5',
      status: 'Succeeded',
      gatewayTradeNo: '2026010122001400009999',
      amount: 888800n,
      paidAt: new Date('2026-01-01T00:05:00Z'),
    });
    expect(JSON.parse(lastParams().biz_content!)).toEqual({ out_trade_no: 'R5' });
    answer = (m) => signed(m, { code: '10000', msg: 'Success', trade_status: 'WAIT_BUYER_PAY', total_amount: '88.88' });
    const waiting = await d.query('R5');
    expect(waiting.status).toBe('Pending');
    expect(waiting.amount).toBeUndefined();
    answer = (m) => signed(m, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_NOT_EXIST', sub_msg: '交易不存在' });
    expect(await d.query('R5')).toEqual({ outTradeNo: 'R5', status: 'Pending' });
  });

  it('closes; closing a paid trade says so', async () => {
    const d = driver(`${stub.url}/gateway.do`);
    answer = (m) => signed(m, { code: '10000', msg: 'Success', out_trade_no: 'R6' });
    await d.close('R6');
    expect(lastParams().method).toBe('alipay.trade.close');
    answer = (m) =>
      m === 'alipay.trade.close'
        ? signed(m, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_STATUS_ERROR', sub_msg: '交易状态不合法' })
        : signed(m, { code: '10000', msg: 'Success', trade_status: 'TRADE_SUCCESS', total_amount: '1.00', trade_no: 't' });
    await expect(d.close('R6')).rejects.toMatchObject({ kind: 'AlreadyPaid' });
  });

  it('reports an unreachable or failing gateway as Unavailable', async () => {
    answer = () => ({ status: 502, body: 'Bad Gateway' });
    await expect(driver(`${stub.url}/gateway.do`).query('R7')).rejects.toBeInstanceOf(PaymentGatewayError);
    await expect(driver(`${stub.url}/gateway.do`).query('R7')).rejects.toMatchObject({ kind: 'Unavailable' });
    await expect(driver('http://127.0.0.1:1/gateway.do').query('R7')).rejects.toMatchObject({ kind: 'Unavailable' });
  });
});
