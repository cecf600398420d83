import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../http/errors.js';
import { AlipayPaymentDriver } from './alipay.js';
import { generateRsaKeyPair, type RsaKeyPairPem } from './keys.js';
import { SandboxPaymentDriver, type SandboxPaymentOptions } from './sandbox.js';
import { sandboxRoutes } from './sandbox-routes.js';
import { MemorySandboxStore, type SandboxStore, type SandboxTrade } from './sandbox-store.js';
import type { GatewayMethod, NotificationResult } from './types.js';
import { WechatPaymentDriver } from './wechat.js';

const START = new Date('2026-01-01T00:00:00Z');
const PUBLIC = 'http://console.test:8080';
const IDS = { appId: '9021000000000042', mchid: '1900000042', platformSerial: 'SANDBOXSERIAL42', apiV3Key: 'k'.repeat(32) };
let keys: RsaKeyPairPem;
beforeAll(() => {
  keys = SandboxPaymentDriver.generateKeys();
});

interface Received {
  method: GatewayMethod;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
  result: NotificationResult;
}

/**
 * A server like ours: the sandbox routes, and a notify endpoint that keeps the body as raw text
 * (the signature covers the exact bytes) and refuses the first `refuse` notifications.
 */
async function world(o: { refuse?: number; store?: SandboxStore; extra?: Partial<SandboxPaymentOptions> } = {}) {
  let now = START;
  const store = o.store ?? new MemorySandboxStore();
  const make = (method: GatewayMethod) =>
    new SandboxPaymentDriver({ method, publicBaseUrl: `${PUBLIC}/`, store, gatewayKeys: keys, retryDelaysMs: [10, 10], now: () => now, ...IDS, ...o.extra });
  const drivers = { Alipay: make('Alipay'), Wechat: make('Wechat') };
  const received: Received[] = [];
  let refuse = o.refuse ?? 0;
  const app: FastifyInstance = Fastify();
  registerErrorHandling(app, (_req, reply) => reply.status(404).send('no web'));
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    scope.post<{ Params: { method: GatewayMethod } }>('/notify/:method', async (req, reply) => {
      const d = drivers[req.params.method];
      const result = await d.verifyNotification({ headers: req.headers, rawBody: req.body as string });
      received.push({ method: req.params.method, headers: req.headers, rawBody: req.body as string, result });
      const ack = d.ack(result.ok && refuse-- <= 0);
      return reply.status(ack.status).type(ack.contentType).send(ack.body);
    });
  });
  sandboxRoutes(app, [drivers.Alipay, drivers.Wechat]);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  opened.push(app);
  const precreate = (method: GatewayMethod, outTradeNo: string, amount = 123400n) =>
    drivers[method].precreate({
      outTradeNo,
      amount,
      subject: '余额充值 <b>100</b>',
      expiresAt: new Date(START.getTime() + 15 * 60_000),
      notifyUrl: `${base}/notify/${method}`,
    });
  return {
    app,
    store,
    drivers,
    received,
    precreate,
    advance: (ms: number) => (now = new Date(now.getTime() + ms)),
    page: (no: string) => app.inject({ method: 'GET', url: `/dev/pay/sandbox/${no}` }),
    press: (no: string, button: 'pay' | 'close') => app.inject({ method: 'POST', url: `/dev/pay/sandbox/${no}/${button}` }),
  };
}

const opened: FastifyInstance[] = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!.close();
});

describe('sandbox gateway, Alipay protocol', () => {
  it('precreate answers the scan page URL; the page shows the trade', async () => {
    const w = await world();
    expect(await w.precreate('Alipay', 'R1')).toEqual({ qrContent: `${PUBLIC}/dev/pay/sandbox/R1` });
    const page = await w.page('R1');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('¥12.34');
    expect(page.body).toContain('余额充值 &#60;b&#62;100&#60;/b&#62;'); // escaped, not markup
    expect(page.body).toContain('确认支付');
    expect(page.body).toContain('取消');
    expect(page.body).toContain('"remainingMs":900000');
    expect(page.body).toContain('支付宝');
  });

  it('pay marks the trade paid and POSTs an Alipay-signed notification that verifies', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R2');
    const res = await w.press('R2', 'pay');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ outTradeNo: 'R2', status: 'Succeeded', message: '支付成功，请返回控制台查看' });
    await w.drivers.Alipay.idle();
    expect(w.received).toHaveLength(1);
    const [n] = w.received;
    expect(n!.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    const form = new URLSearchParams(n!.rawBody);
    expect(Object.fromEntries(form)).toMatchObject({
      notify_type: 'trade_status_sync',
      out_trade_no: 'R2',
      trade_status: 'TRADE_SUCCESS',
      total_amount: '12.34',
      app_id: IDS.appId,
      gmt_payment: '2026-01-01 08:00:00',
      sign_type: 'RSA2',
    });
    const state = await w.drivers.Alipay.query('R2');
    expect(state).toMatchObject({ status: 'Succeeded', amount: 123400n, paidAt: START });
    expect(n!.result).toEqual({ ok: true, notification: { ...state, notificationId: form.get('notify_id') } });
    expect((await w.store.get('R2'))!.notify).toMatchObject({ attempts: 1, deliveredAt: START.toISOString() });
    expect((await w.page('R2')).body).toContain('支付成功，请返回控制台查看');
  });

  it('speaks real Alipay: the production driver, given the sandbox key, accepts its notification', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R3');
    await w.press('R3', 'pay');
    await w.drivers.Alipay.idle();
    const real = new AlipayPaymentDriver({ appId: IDS.appId, privateKey: generateRsaKeyPair().privateKey, alipayPublicKey: keys.publicKey });
    const { headers, rawBody } = w.received[0]!;
    expect(await real.verifyNotification({ headers, rawBody })).toMatchObject({ ok: true, notification: { outTradeNo: 'R3', amount: 123400n } });
    const tampered = rawBody.replace('total_amount=12.34', 'total_amount=1234.00');
    expect(await w.drivers.Alipay.verifyNotification({ headers, rawBody: tampered })).toEqual({ ok: false, reason: 'bad signature' });
  });

  it('retries with backoff until the merchant answers success', async () => {
    const w = await world({ refuse: 2 });
    await w.precreate('Alipay', 'R4');
    await w.press('R4', 'pay');
    await w.drivers.Alipay.idle();
    expect(w.received).toHaveLength(3);
    expect(new Set(w.received.map((r) => new URLSearchParams(r.rawBody).get('notify_id'))).size).toBe(1);
    expect((await w.store.get('R4'))!.notify).toMatchObject({ attempts: 3, deliveredAt: START.toISOString() });
  });

  it('gives up after the last retry; the trade stays paid for query()', async () => {
    const w = await world({ refuse: 99 });
    await w.precreate('Alipay', 'R5');
    await w.press('R5', 'pay');
    await w.drivers.Alipay.idle();
    expect(w.received).toHaveLength(3);
    const t = (await w.store.get('R5'))!;
    expect(t.notify.deliveredAt).toBeUndefined();
    expect(t.notify).toMatchObject({ attempts: 3, lastError: 'HTTP 200 fail' });
    expect((await w.drivers.Alipay.query('R5')).status).toBe('Succeeded');
  });

  it('a paid trade cannot be paid or closed again (409, clear message)', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R6');
    await w.press('R6', 'pay');
    for (const button of ['pay', 'close'] as const) {
      const again = await w.press('R6', button);
      expect(again.statusCode).toBe(409);
      expect(again.json()).toEqual({ code: 40930003, message: '该交易已支付，请勿重复支付' });
    }
    await expect(w.drivers.Alipay.close('R6')).rejects.toMatchObject({ kind: 'AlreadyPaid' });
    await expect(
      w.drivers.Alipay.precreate({
        outTradeNo: 'R6',
        amount: 123400n,
        subject: 's',
        expiresAt: new Date(START.getTime() + 60_000),
        notifyUrl: 'http://127.0.0.1:1/n',
      }),
    ).rejects.toMatchObject({ kind: 'AlreadyPaid' });
    await w.drivers.Alipay.idle();
    expect(w.received).toHaveLength(1);
  });

  it('a closed trade cannot be paid; the page says so', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R7');
    await w.drivers.Alipay.close('R7');
    await w.drivers.Alipay.close('R7'); // idempotent
    expect((await w.drivers.Alipay.query('R7')).status).toBe('Closed');
    const pay = await w.press('R7', 'pay');
    expect(pay.statusCode).toBe(409);
    expect(pay.json()).toEqual({ code: 40930002, message: '该交易已关闭，无法继续支付' });
    const page = (await w.page('R7')).body;
    expect(page).toContain('交易已关闭');
    expect(page).not.toContain('id="pay"');
    expect(w.received).toHaveLength(0);
  });

  it('the 取消 button closes an unpaid trade', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R8');
    const res = await w.press('R8', 'close');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ outTradeNo: 'R8', status: 'Closed', message: '交易已关闭' });
    expect((await w.press('R8', 'pay')).statusCode).toBe(409);
  });

  it('an expired trade is closed and cannot be paid', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R9');
    w.advance(15 * 60_000);
    expect((await w.drivers.Alipay.query('R9')).status).toBe('Closed');
    expect((await w.page('R9')).body).toContain('交易已超时关闭');
    const pay = await w.press('R9', 'pay');
    expect(pay.statusCode).toBe(409);
    expect(pay.json()).toEqual({ code: 40930001, message: '该交易已超时关闭，请返回控制台重新下单' });
    expect((await w.store.get('R9'))!).toMatchObject({ status: 'Closed', closedReason: 'Expired' });
  });

  it('an unknown trade: 404 in the envelope, an HTML page, and Alipay semantics for the driver', async () => {
    const w = await world();
    for (const button of ['pay', 'close'] as const) {
      const res = await w.press('NOPE', button);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 40400001, detail: '交易不存在：NOPE' });
    }
    const page = await w.page('NOPE');
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('交易不存在');
    // Alipay knows an unscanned precreate trade as "does not exist": pending, nothing to close.
    expect(await w.drivers.Alipay.query('NOPE')).toEqual({ outTradeNo: 'NOPE', status: 'Pending' });
    await expect(w.drivers.Alipay.close('NOPE')).resolves.toBeUndefined();
  });

  it('precreate is idempotent, refuses a changed amount and bad input', async () => {
    const w = await world();
    const first = await w.precreate('Alipay', 'R10');
    expect(await w.precreate('Alipay', 'R10')).toEqual(first);
    await expect(w.precreate('Alipay', 'R10', 999900n)).rejects.toMatchObject({ kind: 'Rejected', gatewayCode: 'ACQ.TRADE_HAS_CHANGE' });
    await expect(w.precreate('Alipay', 'R11', 123456n)).rejects.toThrow(/整分/);
    await expect(w.precreate('Alipay', 'bad no!')).rejects.toMatchObject({ kind: 'Rejected' });
    expect(await w.store.get('R11')).toBeUndefined();
  });

  it('survives a restart: a new driver on the same store and keys knows the trade', async () => {
    const w = await world();
    await w.precreate('Alipay', 'R12');
    await w.press('R12', 'pay');
    await w.drivers.Alipay.idle();
    const reborn = new SandboxPaymentDriver({ method: 'Alipay', publicBaseUrl: PUBLIC, store: w.store, gatewayKeys: keys, ...IDS });
    expect(await reborn.query('R12')).toEqual(await w.drivers.Alipay.query('R12'));
    expect(await reborn.verifyNotification(w.received[0]!)).toMatchObject({ ok: true });
  });

  it('pay and close racing on the same trade: exactly one wins', async () => {
    // A store whose reads are slow, so that both actions read the same version before writing.
    const inner = new MemorySandboxStore();
    const slow: SandboxStore = {
      get: async (no) => {
        const t = await inner.get(no);
        await new Promise((r) => setTimeout(r, 5));
        return t;
      },
      put: (t: SandboxTrade, v) => inner.put(t, v),
    };
    const w = await world({ store: slow });
    for (const no of ['RACE1', 'RACE2', 'RACE3']) {
      await w.precreate('Alipay', no);
      const [pay, close] = await Promise.allSettled([w.drivers.Alipay.pay(no), w.drivers.Alipay.closeTrade(no)]);
      const final = (await inner.get(no))!;
      expect([pay.status, close.status].filter((s) => s === 'fulfilled')).toHaveLength(1);
      expect(final.status).toBe(pay.status === 'fulfilled' ? 'Succeeded' : 'Closed');
    }
    await w.drivers.Alipay.idle();
  });
});

describe('sandbox gateway, WeChat Pay v3 protocol', () => {
  it('pay POSTs a signed, encrypted v3 notification that verifies and decrypts', async () => {
    const w = await world();
    expect(await w.precreate('Wechat', 'W1')).toEqual({ qrContent: `${PUBLIC}/dev/pay/sandbox/W1` });
    expect((await w.page('W1')).body).toContain('微信支付');
    expect((await w.press('W1', 'pay')).statusCode).toBe(200);
    await w.drivers.Wechat.idle();
    const [n] = w.received;
    expect(n!.method).toBe('Wechat');
    expect(n!.headers).toMatchObject({ 'content-type': 'application/json', 'wechatpay-serial': IDS.platformSerial });
    const body = JSON.parse(n!.rawBody) as { event_type: string; resource: { algorithm: string; ciphertext: string } };
    expect(body.event_type).toBe('TRANSACTION.SUCCESS');
    expect(body.resource.algorithm).toBe('AEAD_AES_256_GCM');
    expect(n!.rawBody).not.toContain('out_trade_no'); // the trade is inside the ciphertext only
    const state = await w.drivers.Wechat.query('W1');
    expect(state).toMatchObject({ status: 'Succeeded', amount: 123400n, paidAt: START });
    expect(n!.result).toMatchObject({ ok: true, notification: { ...state } });
    expect((await w.store.get('W1'))!.notify.deliveredAt).toBe(START.toISOString());
  });

  it('speaks real WeChat: the production driver, given the sandbox platform key, accepts it; stale or tampered ones are refused', async () => {
    const w = await world();
    await w.precreate('Wechat', 'W2');
    await w.press('W2', 'pay');
    await w.drivers.Wechat.idle();
    const { headers, rawBody } = w.received[0]!;
    let now = START;
    const real = new WechatPaymentDriver({
      mchid: IDS.mchid,
      appid: IDS.appId,
      merchantSerialNo: 'M',
      merchantPrivateKey: generateRsaKeyPair().privateKey,
      apiV3Key: IDS.apiV3Key,
      platformPublicKeys: { [IDS.platformSerial]: keys.publicKey },
      now: () => now,
    });
    expect(await real.verifyNotification({ headers, rawBody })).toMatchObject({ ok: true, notification: { outTradeNo: 'W2', amount: 123400n } });
    const env = JSON.parse(rawBody) as { resource: { ciphertext: string } };
    const ct = env.resource.ciphertext;
    env.resource.ciphertext = `${ct[0] === 'A' ? 'B' : 'A'}${ct.slice(1)}`;
    expect(await real.verifyNotification({ headers, rawBody: JSON.stringify(env) })).toEqual({ ok: false, reason: 'bad signature' });
    now = new Date(START.getTime() + 6 * 60_000);
    expect(await real.verifyNotification({ headers, rawBody })).toMatchObject({ ok: false, reason: expect.stringMatching(/stale/) });
  });

  it('acks the v3 way and retries on a 5xx', async () => {
    const w = await world({ refuse: 1 });
    await w.precreate('Wechat', 'W3');
    await w.press('W3', 'pay');
    await w.drivers.Wechat.idle();
    expect(w.received).toHaveLength(2);
    expect((await w.store.get('W3'))!.notify).toEqual({ attempts: 2, deliveredAt: START.toISOString() });
  });

  it('keeps WeChat semantics for unknown trades, and keeps the two sandboxes apart', async () => {
    const w = await world();
    await expect(w.drivers.Wechat.query('NOPE')).rejects.toMatchObject({ kind: 'NotFound' });
    await expect(w.drivers.Wechat.close('NOPE')).rejects.toMatchObject({ kind: 'NotFound' });
    await w.precreate('Alipay', 'A1');
    await expect(w.drivers.Wechat.query('A1')).rejects.toMatchObject({ kind: 'NotFound' });
    expect((await w.page('A1')).body).toContain('支付宝');
  });

  it('a notification from the Alipay sandbox does not verify as WeChat, and the reverse', async () => {
    const w = await world();
    await w.precreate('Alipay', 'X1');
    await w.precreate('Wechat', 'X2');
    await w.press('X1', 'pay');
    await w.press('X2', 'pay');
    await w.drivers.Alipay.idle();
    await w.drivers.Wechat.idle();
    const ali = w.received.find((r) => r.method === 'Alipay')!;
    const wx = w.received.find((r) => r.method === 'Wechat')!;
    expect((await w.drivers.Wechat.verifyNotification(ali)).ok).toBe(false);
    expect((await w.drivers.Alipay.verifyNotification(wx)).ok).toBe(false);
  });
});
