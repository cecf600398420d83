import { createCipheriv, createSign, createVerify, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateRsaKeyPair } from './keys.js';
import { startStub, type Stub, type StubAnswer, type StubRequest } from './test-support.js';
import { WechatPaymentDriver } from './wechat.js';

const MCHID = '1900009191';
const APPID = 'wxd678efh567hg6787';
const MERCHANT_SERIAL = '5157F09EFDC096DE15EBE81A47057A7232F1B8E1';
const PLATFORM_SERIAL = 'PUB_KEY_ID_0119000091912025010100000000000001';
const API_V3_KEY = 'a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb';
const NOW = new Date('2026-01-01T00:00:00Z');
const merchant = generateRsaKeyPair();
const platform = generateRsaKeyPair();
const stranger = generateRsaKeyPair();

// WeChat's side, written out from its documentation independently of the code under test.
function sign(message: string, privateKeyPem: string): string {
  return createSign('RSA-SHA256').update(message, 'utf8').sign(privateKeyPem, 'base64');
}

function encrypt(plaintext: string, key = API_V3_KEY, aad = 'transaction') {
  const nonce = randomBytes(6).toString('hex'); // 12 characters, used as its UTF-8 bytes
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(key, 'utf8'), Buffer.from(nonce, 'utf8'));
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64');
  return { original_type: 'transaction', algorithm: 'AEAD_AES_256_GCM', ciphertext, associated_data: aad, nonce };
}

function signed(body: string, o: { key?: string; serial?: string; at?: Date } = {}): Record<string, string> {
  const timestamp = String(Math.floor((o.at ?? NOW).getTime() / 1000));
  const nonce = randomBytes(16).toString('hex');
  return {
    'wechatpay-timestamp': timestamp,
    'wechatpay-nonce': nonce,
    'wechatpay-serial': o.serial ?? PLATFORM_SERIAL,
    'wechatpay-signature': sign(`${timestamp}\n${nonce}\n${body}\n`, o.key ?? platform.privateKey),
    'wechatpay-signature-type': 'WECHATPAY2-SHA256-RSA2048',
  };
}

function transaction(over: Record<string, unknown> = {}) {
  return {
    appid: APPID,
    mchid: MCHID,
    out_trade_no: 'R20260101000000abc',
    transaction_id: '4200000000202601010000000001',
    trade_type: 'NATIVE',
    trade_state: 'SUCCESS',
    trade_state_desc: '支付成功',
    bank_type: 'CMC',
    success_time: '2026-01-01T08:00:05+08:00',
    payer: { openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' },
    amount: { total: 1234, payer_total: 1234, currency: 'CNY', payer_currency: 'CNY' },
    ...over,
  };
}

function envelope(resource: object): string {
  return JSON.stringify({
    id: 'EV-2026010100000001',
    create_time: '2026-01-01T08:00:06+08:00',
    resource_type: 'encrypt-resource',
    event_type: 'TRANSACTION.SUCCESS',
    summary: '支付成功',
    resource,
  });
}

function driver(o: { baseUrl?: string; merchantKey?: string; now?: Date } = {}) {
  return new WechatPaymentDriver({
    mchid: MCHID,
    appid: APPID,
    merchantSerialNo: MERCHANT_SERIAL,
    merchantPrivateKey: o.merchantKey ?? merchant.privateKey,
    apiV3Key: API_V3_KEY,
    platformPublicKeys: { [PLATFORM_SERIAL]: platform.publicKey },
    baseUrl: o.baseUrl,
    now: () => o.now ?? NOW,
  });
}

async function verify(rawBody: string, headers: Record<string, string>, now = NOW) {
  return driver({ now }).verifyNotification({ headers, rawBody });
}

describe('WeChat Pay v3 notifications', () => {
  it('accepts a correctly signed one, decrypts it and reads it in our terms', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    expect(await verify(body, signed(body))).toEqual({
      ok: true,
      notification: {
        notificationId: 'EV-2026010100000001',
        outTradeNo: 'R20260101000000abc',
        status: 'Succeeded',
        gatewayTradeNo: '4200000000202601010000000001',
        amount: 123400n,
        paidAt: new Date('2026-01-01T00:00:05Z'),
      },
    });
  });

  it('reads headers whatever their case', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    const upper = Object.fromEntries(Object.entries(signed(body)).map(([k, v]) => [k.replace(/(^|-)w/g, (m) => m.toUpperCase()), v]));
    expect((await verify(body, upper)).ok).toBe(true);
  });

  it('refuses a wrong signature', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    expect(await verify(body, signed(body, { key: stranger.privateKey }))).toEqual({ ok: false, reason: 'bad signature' });
  });

  it('refuses a body changed after signing', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    const headers = signed(body);
    expect(await verify(body.replace('TRANSACTION.SUCCESS', 'TRANSACTION.SUCCESS '), headers)).toEqual({ ok: false, reason: 'bad signature' });
  });

  it('refuses an unknown platform serial', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    const r = await verify(body, signed(body, { serial: 'PUB_KEY_ID_SOMEONE_ELSE' }));
    expect(r).toEqual({ ok: false, reason: 'unknown platform serial PUB_KEY_ID_SOMEONE_ELSE' });
  });

  it('refuses a stale timestamp (older than five minutes), but not a four-minute-old one', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    const sixMinutesAgo = signed(body, { at: new Date(NOW.getTime() - 6 * 60_000) });
    expect(await verify(body, sixMinutesAgo)).toMatchObject({ ok: false, reason: expect.stringMatching(/^stale Wechatpay-Timestamp/) });
    expect((await verify(body, signed(body, { at: new Date(NOW.getTime() - 4 * 60_000) }))).ok).toBe(true);
  });

  it('refuses a tampered ciphertext even when the envelope is freshly signed', async () => {
    const resource = encrypt(JSON.stringify(transaction()));
    const bytes = Buffer.from(resource.ciphertext, 'base64');
    bytes[3] = bytes[3]! ^ 0x01;
    const body = envelope({ ...resource, ciphertext: bytes.toString('base64') });
    expect(await verify(body, signed(body))).toMatchObject({ ok: false, reason: expect.stringMatching(/^cannot decrypt resource/) });
  });

  it('refuses a resource encrypted with another APIv3 key or other associated data', async () => {
    for (const resource of [
      encrypt(JSON.stringify(transaction()), 'ZZZde1ZJB1kG2e7VfTs3jQzaWizur8Gb'),
      { ...encrypt(JSON.stringify(transaction())), associated_data: 'refund' },
    ]) {
      const body = envelope(resource);
      expect(await verify(body, signed(body))).toMatchObject({ ok: false, reason: expect.stringMatching(/^cannot decrypt resource/) });
    }
  });

  it('refuses missing headers, another merchant, and never throws on garbage', async () => {
    const body = envelope(encrypt(JSON.stringify(transaction())));
    const { 'wechatpay-signature': _, ...unsigned } = signed(body);
    expect(await verify(body, unsigned)).toEqual({ ok: false, reason: 'missing Wechatpay-Signature header' });
    const other = envelope(encrypt(JSON.stringify(transaction({ mchid: '1900000002' }))));
    expect(await verify(other, signed(other))).toEqual({ ok: false, reason: 'mchid 1900000002 is not ours' });
    for (const raw of ['', 'not json', '{}', '{"resource":{"algorithm":"AEAD_AES_256_GCM","ciphertext":"","nonce":""}}']) {
      expect((await verify(raw, signed(raw))).ok).toBe(false);
    }
  });

  it('maps the trade states', async () => {
    const cases: [string, string][] = [
      ['NOTPAY', 'Pending'],
      ['USERPAYING', 'Pending'],
      ['CLOSED', 'Closed'],
      ['REVOKED', 'Closed'],
      ['PAYERROR', 'Closed'],
      ['SUCCESS', 'Succeeded'],
    ];
    for (const [state, status] of cases) {
      const body = envelope(encrypt(JSON.stringify(transaction({ trade_state: state }))));
      expect(await verify(body, signed(body))).toMatchObject({ ok: true, notification: { status } });
    }
  });

  it('acks 204 without a body, and fails with {code: FAIL}', () => {
    expect(driver().ack(true)).toMatchObject({ status: 204, body: '' });
    const fail = driver().ack(false);
    expect(fail.status).toBeGreaterThanOrEqual(400);
    expect(JSON.parse(fail.body)).toEqual({ code: 'FAIL', message: '失败' });
  });
});

/** A stand-in for api.mch.weixin.qq.com: checks our Authorization signature, answers signed. */
describe('WeChat Pay v3 calls (local stub API)', () => {
  let stub: Stub;
  let answer: (r: StubRequest) => StubAnswer;

  function authorizationOk(r: StubRequest): boolean {
    const auth = String(r.headers.authorization ?? '');
    if (!auth.startsWith('WECHATPAY2-SHA256-RSA2048 ')) return false;
    const f = Object.fromEntries([...auth.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (f.mchid !== MCHID || f.serial_no !== MERCHANT_SERIAL) return false;
    if (Math.abs(Number(f.timestamp) - NOW.getTime() / 1000) > 300) return false;
    const message = `${r.method}\n${r.url}\n${f.timestamp}\n${f.nonce_str}\n${r.body}\n`;
    return createVerify('RSA-SHA256')
      .update(message)
      .verify(merchant.publicKey, f.signature ?? '', 'base64');
  }

  const json = (status: number, body: object, o: Parameters<typeof signed>[1] = {}): StubAnswer => {
    const text = JSON.stringify(body);
    return { status, headers: { 'content-type': 'application/json', ...signed(text, o) }, body: text };
  };

  beforeAll(async () => {
    stub = await startStub((r) => (authorizationOk(r) ? answer(r) : json(401, { code: 'SIGN_ERROR', message: '签名错误' })));
  });
  afterAll(() => stub.close());

  const input = {
    outTradeNo: 'R1',
    amount: 123400n,
    subject: '余额充值',
    expiresAt: new Date(NOW.getTime() + 30 * 60_000),
    notifyUrl: 'https://console.example/notify/wechat',
  };

  it('places a Native order with a signed request and returns code_url', async () => {
    answer = () => json(200, { code_url: 'weixin://wxpay/bizpayurl?pr=p4lpSuKzz' });
    expect(await driver({ baseUrl: stub.url }).precreate(input)).toEqual({ qrContent: 'weixin://wxpay/bizpayurl?pr=p4lpSuKzz' });
    const r = stub.requests.at(-1)!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/v3/pay/transactions/native');
    expect(r.headers['content-type']).toBe('application/json');
    expect(JSON.parse(r.body)).toEqual({
      appid: APPID,
      mchid: MCHID,
      description: '余额充值',
      out_trade_no: 'R1',
      time_expire: '2026-01-01T08:30:00+08:00',
      notify_url: 'https://console.example/notify/wechat',
      amount: { total: 1234, currency: 'CNY' },
    });
  });

  it('is refused by the API when signed with another merchant key', async () => {
    answer = () => json(200, { code_url: 'weixin://x' });
    await expect(driver({ baseUrl: stub.url, merchantKey: stranger.privateKey }).precreate(input)).rejects.toMatchObject({
      kind: 'Rejected',
      gatewayCode: 'SIGN_ERROR',
    });
  });

  it('does not believe an answer that is unsigned, signed by another key, or stale', async () => {
    const d = driver({ baseUrl: stub.url });
    answer = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"code_url":"weixin://evil"}' });
    await expect(d.precreate(input)).rejects.toMatchObject({ kind: 'BadResponse', message: expect.stringMatching(/missing Wechatpay-/) });
    answer = () => json(200, { code_url: 'weixin://evil' }, { key: stranger.privateKey });
    await expect(d.precreate(input)).rejects.toMatchObject({ kind: 'BadResponse', message: expect.stringMatching(/bad signature/) });
    answer = () => json(200, { code_url: 'weixin://evil' }, { at: new Date(NOW.getTime() - 10 * 60_000) });
    await expect(d.precreate(input)).rejects.toMatchObject({ kind: 'BadResponse', message: expect.stringMatching(/stale/) });
  });

  it('queries by out_trade_no and maps paid, waiting and closed', async () => {
    const d = driver({ baseUrl: stub.url });
    answer = () => json(200, transaction({ out_trade_no: 'R2', amount: { total: 8888, payer_total: 8888, currency: 'CNY' } }));
    expect(await d.query('R2')).toEqual({
      outTradeNo: 'R2',
      status: 'Succeeded',
      gatewayTradeNo: '4200000000202601010000000001',
      amount: 888800n,
      paidAt: new Date('2026-01-01T00:00:05Z'),
    });
    const r = stub.requests.at(-1)!;
    expect([r.method, r.url, r.body]).toEqual(['GET', `/v3/pay/transactions/out-trade-no/R2?mchid=${MCHID}`, '']);
    answer = () => json(200, transaction({ out_trade_no: 'R2', trade_state: 'NOTPAY', transaction_id: undefined, success_time: undefined }));
    expect(await d.query('R2')).toEqual({ outTradeNo: 'R2', status: 'Pending', gatewayTradeNo: undefined });
    answer = () => json(200, transaction({ out_trade_no: 'R2', trade_state: 'CLOSED' }));
    expect((await d.query('R2')).status).toBe('Closed');
    answer = () => json(404, { code: 'ORDER_NOT_EXIST', message: '订单不存在' });
    await expect(d.query('R2')).rejects.toMatchObject({ kind: 'NotFound', gatewayCode: 'ORDER_NOT_EXIST' });
  });

  it('closes with {mchid} and a 204; a paid order cannot be closed', async () => {
    const d = driver({ baseUrl: stub.url });
    answer = () => ({ status: 204, headers: signed('') });
    await d.close('R3');
    const r = stub.requests.at(-1)!;
    expect([r.method, r.url, JSON.parse(r.body)]).toEqual(['POST', '/v3/pay/transactions/out-trade-no/R3/close', { mchid: MCHID }]);
    answer = () => ({ status: 204, headers: signed('', { key: stranger.privateKey }) });
    await expect(d.close('R3')).rejects.toMatchObject({ kind: 'BadResponse' });
    answer = () => json(400, { code: 'ORDERPAID', message: '订单已支付' });
    await expect(d.close('R3')).rejects.toMatchObject({ kind: 'AlreadyPaid' });
  });

  it('reports server errors and an unreachable API as Unavailable', async () => {
    answer = () => json(500, { code: 'SYSTEM_ERROR', message: '系统错误' });
    await expect(driver({ baseUrl: stub.url }).query('R4')).rejects.toMatchObject({ kind: 'Unavailable' });
    await expect(driver({ baseUrl: 'http://127.0.0.1:1' }).query('R4')).rejects.toMatchObject({ kind: 'Unavailable' });
  });
});
