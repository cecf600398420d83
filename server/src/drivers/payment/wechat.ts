/**
 * WeChat Pay API v3, Native payment (the payer scans our QR code), by hand with node:crypto and
 * fetch: the protocol is small and fully specified, and an SDK would hide the signatures the
 * tests must pin. Every request is signed with the merchant key; every answer's signature is
 * checked with the platform key before its content is believed (wechat-protocol.ts).
 */
import type { KeyObject } from 'node:crypto';
import { PaymentGatewayError } from './errors.js';
import { loadPrivateKey, loadPublicKey } from './keys.js';
import {
  authorizationHeader,
  checkWechatSignature,
  newNonce,
  readSignedHeaders,
  rfc3339Beijing,
  transactionState,
  verifyWechatNotification,
  verifyWechatRefundNotification,
  wechatRefundState,
  type WechatRefund,
  type WechatTransaction,
} from './wechat-protocol.js';
import {
  refundReason,
  unitsToFen,
  type NotificationAck,
  type NotificationResult,
  type PaymentDriver,
  type PrecreateInput,
  type RefundInput,
  type RefundNotificationResult,
  type RefundState,
  type TradeState,
} from './types.js';

export interface WechatPaymentOptions {
  /** 商户号. */
  mchid: string;
  /** The AppID bound to the merchant (公众号/小程序/开放平台). */
  appid: string;
  /** Serial number of our merchant API certificate (商户 API 证书序列号). */
  merchantSerialNo: string;
  /** Our merchant API private key (apiclient_key.pem). */
  merchantPrivateKey: string | KeyObject;
  /** The APIv3 key (32 characters) that encrypts notification resources. */
  apiV3Key: string;
  /**
   * WeChat's verification keys by serial: a platform certificate (or its public key) under its
   * serial, or the "微信支付公钥" under its PUB_KEY_ID_…. Several while keys rotate.
   */
  platformPublicKeys: Record<string, string | KeyObject>;
  /** Default https://api.mch.weixin.qq.com. */
  baseUrl?: string;
  now?: () => Date;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

interface Answer {
  status: number;
  body: string;
}

/** WeChat's description field is string(127). */
function description(subject: string): string {
  return Array.from(subject).slice(0, 127).join('');
}

export class WechatPaymentDriver implements PaymentDriver {
  readonly method = 'Wechat' as const;
  readonly embedded = false;
  private readonly privateKey: KeyObject;
  private readonly platformKeys: Map<string, KeyObject>;
  private readonly baseUrl: string;
  private readonly now: () => Date;

  constructor(private readonly opts: WechatPaymentOptions) {
    this.privateKey = loadPrivateKey(opts.merchantPrivateKey);
    this.platformKeys = new Map(Object.entries(opts.platformPublicKeys).map(([serial, key]) => [serial, loadPublicKey(key)]));
    if (Buffer.byteLength(opts.apiV3Key, 'utf8') !== 32) throw new RangeError('WeChat APIv3 key must be 32 characters');
    this.baseUrl = (opts.baseUrl ?? 'https://api.mch.weixin.qq.com').replace(/\/+$/, '');
    this.now = opts.now ?? (() => new Date());
  }

  async precreate(input: PrecreateInput): Promise<{ qrContent: string }> {
    const answer = await this.request('POST', '/v3/pay/transactions/native', {
      appid: this.opts.appid,
      mchid: this.opts.mchid,
      description: description(input.subject),
      out_trade_no: input.outTradeNo,
      time_expire: rfc3339Beijing(input.expiresAt),
      notify_url: input.notifyUrl,
      amount: { total: unitsToFen(input.amount), currency: 'CNY' },
    });
    const codeUrl = (parseJson(answer.body) as { code_url?: unknown }).code_url;
    if (typeof codeUrl !== 'string' || !codeUrl) throw new PaymentGatewayError('BadResponse', 'WeChat native order: no code_url');
    return { qrContent: codeUrl };
  }

  async verifyNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<NotificationResult> {
    return verifyWechatNotification(req, {
      platformKeys: this.platformKeys,
      apiV3Key: this.opts.apiV3Key,
      mchid: this.opts.mchid,
      appid: this.opts.appid,
      now: this.now(),
    });
  }

  /** v3: 200/204 without a body is success; 4xx/5xx with {code:'FAIL'} makes WeChat retry. */
  ack(success: boolean): NotificationAck {
    if (success) return { status: 204, contentType: 'application/json', body: '' };
    return { status: 500, contentType: 'application/json', body: JSON.stringify({ code: 'FAIL', message: '失败' }) };
  }

  async query(outTradeNo: string): Promise<TradeState> {
    const path = `/v3/pay/transactions/out-trade-no/${encodeURIComponent(outTradeNo)}?mchid=${encodeURIComponent(this.opts.mchid)}`;
    const answer = await this.request('GET', path);
    const state = transactionState(parseJson(answer.body) as WechatTransaction);
    if ('error' in state) throw new PaymentGatewayError('BadResponse', `WeChat query: ${state.error}`);
    return state;
  }

  async close(outTradeNo: string): Promise<void> {
    const path = `/v3/pay/transactions/out-trade-no/${encodeURIComponent(outTradeNo)}/close`;
    await this.request('POST', path, { mchid: this.opts.mchid });
  }

  /**
   * POST /v3/refund/domestic/refunds (申请退款). out_refund_no is the idempotency key: the same
   * number asked again answers with the same refund. WeChat accepts it (PROCESSING, usually) and
   * tells the outcome by a REFUND.* notification to notify_url, or by the query.
   */
  async refund(input: RefundInput): Promise<RefundState> {
    const answer = await this.request('POST', '/v3/refund/domestic/refunds', {
      out_trade_no: input.paymentTradeNo,
      out_refund_no: input.refundNo,
      reason: refundReason(input.reason),
      notify_url: input.notifyUrl,
      amount: { refund: unitsToFen(input.amount), total: unitsToFen(input.total), currency: 'CNY' },
    });
    return this.readRefund(answer.body, 'refund');
  }

  /** GET /v3/refund/domestic/refunds/{out_refund_no} (查询单笔退款); 404 means WeChat never took it. */
  async queryRefund(q: { refundNo: string; paymentTradeNo: string }): Promise<RefundState> {
    try {
      const answer = await this.request('GET', `/v3/refund/domestic/refunds/${encodeURIComponent(q.refundNo)}`);
      return this.readRefund(answer.body, 'refund query');
    } catch (e) {
      if (e instanceof PaymentGatewayError && e.kind === 'NotFound') return { refundNo: q.refundNo, status: 'NotFound' };
      throw e;
    }
  }

  async verifyRefundNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<RefundNotificationResult> {
    return verifyWechatRefundNotification(req, { platformKeys: this.platformKeys, apiV3Key: this.opts.apiV3Key, mchid: this.opts.mchid, now: this.now() });
  }

  private readRefund(body: string, what: string): RefundState {
    const state = wechatRefundState(parseJson(body) as WechatRefund);
    if ('error' in state) throw new PaymentGatewayError('BadResponse', `WeChat ${what}: ${state.error}`);
    return state;
  }

  /** A signed call whose answer is a verified 2xx; anything else becomes PaymentGatewayError. */
  private async request(method: 'GET' | 'POST', pathAndQuery: string, payload?: object): Promise<Answer> {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const answer = await this.send(method, pathAndQuery, body);
    if (answer.status >= 200 && answer.status < 300) return answer;
    throw gatewayError(answer);
  }

  private async send(method: string, pathAndQuery: string, body: string): Promise<Answer> {
    const timestamp = String(Math.floor(this.now().getTime() / 1000));
    const authorization = authorizationHeader({
      mchid: this.opts.mchid,
      serialNo: this.opts.merchantSerialNo,
      privateKey: this.privateKey,
      method,
      pathAndQuery,
      body,
      timestamp,
      nonce: newNonce(),
    });
    const headers: Record<string, string> = { authorization, accept: 'application/json', 'user-agent': 'console-server wechatpay-v3' };
    if (body) headers['content-type'] = 'application/json';
    let res: Response;
    let text: string;
    try {
      res = await (this.opts.fetch ?? fetch)(`${this.baseUrl}${pathAndQuery}`, {
        method,
        headers,
        body: body || undefined,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
      text = await res.text();
    } catch (e) {
      throw new PaymentGatewayError('Unavailable', `WeChat ${method} ${pathAndQuery}: ${(e as Error).message}`);
    }
    if (res.status >= 200 && res.status < 300) this.checkAnswer(res.headers, text, pathAndQuery);
    return { status: res.status, body: text };
  }

  /**
   * Believes a success only if WeChat signed it. A bodiless 204 (close) carries nothing to forge,
   * so it is accepted unsigned; when it is signed, the signature must still be right.
   */
  private checkAnswer(headers: Headers, body: string, pathAndQuery: string) {
    const signed = readSignedHeaders(headers);
    if ('error' in signed) {
      if (body === '') return;
      throw new PaymentGatewayError('BadResponse', `WeChat ${pathAndQuery}: ${signed.error}`);
    }
    const bad = checkWechatSignature(signed, body, this.platformKeys, this.now());
    if (bad) throw new PaymentGatewayError('BadResponse', `WeChat ${pathAndQuery}: ${bad}`);
  }
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new PaymentGatewayError('BadResponse', `WeChat: answer is not JSON: ${body.slice(0, 100)}`);
  }
}

function gatewayError(answer: Answer): PaymentGatewayError {
  let code = '';
  let message = '';
  try {
    ({ code = '', message = '' } = JSON.parse(answer.body) as { code?: string; message?: string });
  } catch {
    // an HTML error page from a proxy: the status says enough
  }
  const text = `WeChat: HTTP ${answer.status} ${code} ${message}`.trim();
  if (answer.status >= 500 || answer.status === 429) return new PaymentGatewayError('Unavailable', text, code || undefined);
  if (code === 'ORDERPAID' || code === 'ORDER_PAID') return new PaymentGatewayError('AlreadyPaid', text, code);
  if (answer.status === 404 || code === 'ORDER_NOT_EXIST' || code === 'ORDERNOTEXIST' || code === 'RESOURCE_NOT_EXISTS')
    return new PaymentGatewayError('NotFound', text, code || undefined);
  return new PaymentGatewayError('Rejected', text, code || undefined);
}
