/**
 * The embedded payment gateway: an offline stand-in for Alipay face-to-face or WeChat Pay Native
 * that follows the real protocol end to end, so that the order flow is exercised as in production.
 *
 * - precreate registers the trade in the gateway's own store and returns the URL of a scan page
 *   served by this server (`/dev/pay/sandbox/<outTradeNo>`, see sandbox-routes.ts);
 * - when the payer presses 确认支付 there, the trade becomes paid and the gateway POSTs a signed
 *   notification to the trade's notifyUrl over real HTTP, retrying with backoff until it is
 *   acknowledged — Alipay style (form body, RSA2 `sign`) or WeChat v3 style (signed headers,
 *   AES-256-GCM resource) depending on `method`;
 * - verifyNotification runs the same function as the production driver of that method, with the
 *   sandbox gateway's public key in place of Alipay's or WeChat's.
 *
 * Deliveries in flight live in this process only: after a restart the order service's query()
 * fallback finds the payment, as it would after Alipay or WeChat gave up notifying.
 */
import { createHash, randomInt, randomUUID, type KeyObject } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { beijingTime, encodeForm, signAlipayNotification, verifyAlipayNotification } from './alipay-protocol.js';
import { PaymentGatewayError } from './errors.js';
import { generateRsaKeyPair, loadPrivateKey, loadPublicKey, type RsaKeyPairPem } from './keys.js';
import type { SandboxStore, SandboxTrade } from './sandbox-store.js';
import { encryptResource, rfc3339Beijing, signedHeaders, verifyWechatNotification } from './wechat-protocol.js';
import {
  unitsToFen,
  unitsToYuan2,
  type GatewayMethod,
  type NotificationAck,
  type NotificationResult,
  type PaymentDriver,
  type PrecreateInput,
  type TradeState,
} from './types.js';

export interface SandboxLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface SandboxPaymentOptions {
  /** Whose protocol the sandbox speaks. Default 'Alipay'. */
  method?: GatewayMethod;
  /** Absolute base URL of this server as a payer's browser reaches it, e.g. http://localhost:8080. */
  publicBaseUrl: string;
  store: SandboxStore;
  /** The sandbox gateway's RSA-2048 key pair (see generateKeys); every server process must share it. */
  gatewayKeys: RsaKeyPairPem;
  /** Alipay app_id / WeChat appid written in notifications and required back. */
  appId?: string;
  /** WeChat merchant id written in notifications and required back. */
  mchid?: string;
  /** WeChat platform key serial sent as Wechatpay-Serial. */
  platformSerial?: string;
  /** WeChat APIv3 key (32 characters); by default derived from the gateway key. */
  apiV3Key?: string;
  /** Waits between notification attempts; attempts = 1 + length. */
  retryDelaysMs?: number[];
  now?: () => Date;
  fetch?: typeof fetch;
  log?: SandboxLog;
}

/** Like Alipay's and WeChat's schedules, compressed: a dev server should not wait hours. */
export const DEFAULT_RETRY_DELAYS_MS = [2_000, 10_000, 60_000, 300_000, 900_000];
const SANDBOX_ALIPAY_APP_ID = '9021000000000001';
const SANDBOX_WECHAT_APPID = 'wxsandbox000000001';
const SANDBOX_MCHID = '1900000001';
const SANDBOX_PLATFORM_SERIAL = 'SANDBOX0000000000000000000000000000000001';
const TRADE_NO = /^[A-Za-z0-9_]{1,32}$/;

/** Why the scan page cannot pay or close a trade. */
export type SandboxRefusalReason = 'NotFound' | 'Expired' | 'Closed' | 'AlreadyPaid';

export class SandboxRefusal extends Error {
  constructor(readonly reason: SandboxRefusalReason) {
    super(reason);
    this.name = 'SandboxRefusal';
  }
}

/** A trade as the scan page shows it: the stored record, with its deadline applied. */
export interface SandboxView {
  trade: SandboxTrade;
  status: SandboxTrade['status'];
  closedReason?: SandboxTrade['closedReason'];
  remainingMs: number;
}

function digits(n: number): string {
  let s = '';
  while (s.length < n) s += String(randomInt(0, 10));
  return s;
}

export class SandboxPaymentDriver implements PaymentDriver {
  readonly method: GatewayMethod;
  readonly embedded = true;
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly appId: string;
  private readonly mchid: string;
  private readonly serial: string;
  private readonly apiV3Key: string;
  private readonly baseUrl: string;
  private readonly delays: number[];
  private readonly now: () => Date;
  private readonly inflight = new Set<Promise<void>>();
  private readonly stopper = new AbortController();

  /** A fresh gateway key pair, to be generated once and kept (e.g. in the server secrets table). */
  static generateKeys(): RsaKeyPairPem {
    return generateRsaKeyPair();
  }

  constructor(private readonly opts: SandboxPaymentOptions) {
    this.method = opts.method ?? 'Alipay';
    this.privateKey = loadPrivateKey(opts.gatewayKeys.privateKey);
    this.publicKey = loadPublicKey(opts.gatewayKeys.publicKey);
    this.appId = opts.appId ?? (this.method === 'Alipay' ? SANDBOX_ALIPAY_APP_ID : SANDBOX_WECHAT_APPID);
    this.mchid = opts.mchid ?? SANDBOX_MCHID;
    this.serial = opts.platformSerial ?? SANDBOX_PLATFORM_SERIAL;
    // Derived, not random, so every process holding the same gateway key agrees on it.
    this.apiV3Key = opts.apiV3Key ?? createHash('sha256').update(opts.gatewayKeys.privateKey).digest('hex').slice(0, 32);
    this.baseUrl = opts.publicBaseUrl.replace(/\/+$/, '');
    this.delays = opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.now = opts.now ?? (() => new Date());
  }

  scanUrl(outTradeNo: string): string {
    return `${this.baseUrl}/dev/pay/sandbox/${encodeURIComponent(outTradeNo)}`;
  }

  async precreate(input: PrecreateInput): Promise<{ qrContent: string }> {
    const existing = await this.load(input.outTradeNo);
    if (existing) return this.precreateAgain(existing, input);
    const trade = this.newTrade(input);
    if (!(await this.opts.store.put(trade, null))) return this.precreate(input);
    return { qrContent: this.scanUrl(trade.outTradeNo) };
  }

  private newTrade(input: PrecreateInput): SandboxTrade {
    const now = this.now();
    if (!TRADE_NO.test(input.outTradeNo)) throw new PaymentGatewayError('Rejected', `商户订单号不合法：${input.outTradeNo}`);
    if (input.amount <= 0n) throw new PaymentGatewayError('Rejected', `金额须大于 0：${input.amount}`);
    unitsToYuan2(input.amount); // refuses sub-fen amounts, as the real gateways do
    if (input.expiresAt <= now) throw new PaymentGatewayError('Rejected', '交易过期时间已过');
    if (!/^https?:\/\//.test(input.notifyUrl)) throw new PaymentGatewayError('Rejected', `notifyUrl 须为绝对地址：${input.notifyUrl}`);
    return {
      outTradeNo: input.outTradeNo,
      method: this.method,
      gatewayTradeNo: this.method === 'Alipay' ? `${beijingTime(now).slice(0, 10).replaceAll('-', '')}2200${digits(16)}` : `4200${digits(24)}`,
      amount: input.amount.toString(),
      subject: input.subject,
      notifyUrl: input.notifyUrl,
      createdAt: now.toISOString(),
      expiresAt: input.expiresAt.toISOString(),
      status: 'Pending',
      notify: { attempts: 0 },
      version: 1,
    };
  }

  /** The same trade asked again: same QR while it can be paid; refused as the gateways refuse. */
  private precreateAgain(t: SandboxTrade, input: PrecreateInput): { qrContent: string } {
    if (t.amount !== input.amount.toString()) throw new PaymentGatewayError('Rejected', '交易信息被篡改：金额与原交易不一致', 'ACQ.TRADE_HAS_CHANGE');
    if (t.status === 'Succeeded') throw new PaymentGatewayError('AlreadyPaid', '交易已支付', 'ACQ.TRADE_HAS_SUCCESS');
    if (this.view(t).status === 'Closed') throw new PaymentGatewayError('Rejected', '交易已关闭', 'ACQ.TRADE_HAS_CLOSE');
    return { qrContent: this.scanUrl(t.outTradeNo) };
  }

  async verifyNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<NotificationResult> {
    if (this.method === 'Alipay') return verifyAlipayNotification(req.rawBody, { publicKey: this.publicKey, appId: this.appId });
    const platformKeys = new Map([[this.serial, this.publicKey]]);
    return verifyWechatNotification(req, { platformKeys, apiV3Key: this.apiV3Key, mchid: this.mchid, appid: this.appId, now: this.now() });
  }

  ack(success: boolean): NotificationAck {
    if (this.method === 'Alipay') return { status: 200, contentType: 'text/plain; charset=utf-8', body: success ? 'success' : 'fail' };
    if (success) return { status: 204, contentType: 'application/json', body: '' };
    return { status: 500, contentType: 'application/json', body: JSON.stringify({ code: 'FAIL', message: '失败' }) };
  }

  async query(outTradeNo: string): Promise<TradeState> {
    const t = await this.load(outTradeNo);
    if (!t) {
      // Alipay knows a precreated trade only once it is scanned: "not there" means "not paid yet".
      if (this.method === 'Alipay') return { outTradeNo, status: 'Pending' };
      throw new PaymentGatewayError('NotFound', `交易不存在：${outTradeNo}`, 'ORDER_NOT_EXIST');
    }
    const { status } = this.view(t);
    if (status !== 'Succeeded') return { outTradeNo, status, gatewayTradeNo: t.gatewayTradeNo };
    return { outTradeNo, status, gatewayTradeNo: t.gatewayTradeNo, amount: BigInt(t.amount), paidAt: new Date(t.paidAt!) };
  }

  async close(outTradeNo: string): Promise<void> {
    try {
      await this.closeTrade(outTradeNo);
    } catch (e) {
      if (!(e instanceof SandboxRefusal)) throw e;
      if (e.reason === 'AlreadyPaid') throw new PaymentGatewayError('AlreadyPaid', '交易已支付，不能关闭', 'ACQ.TRADE_STATUS_ERROR');
      if (e.reason === 'NotFound' && this.method === 'Wechat') throw new PaymentGatewayError('NotFound', `交易不存在：${outTradeNo}`, 'ORDER_NOT_EXIST');
      // Alipay: an unscanned trade has nothing to close.
    }
  }

  /** The page's 取消 and the merchant's close: idempotent for a closed trade, refused once paid. */
  async closeTrade(outTradeNo: string): Promise<SandboxView> {
    const now = this.now();
    const t = await this.update(outTradeNo, (cur) => {
      if (cur.status === 'Succeeded') throw new SandboxRefusal('AlreadyPaid');
      if (cur.status === 'Closed') return undefined;
      const closedReason = this.view(cur).status === 'Closed' ? 'Expired' : 'Cancelled';
      return { ...cur, status: 'Closed', closedReason, closedAt: now.toISOString() };
    });
    return this.view(t);
  }

  /** The payer pressed 确认支付: the trade is paid and the notification goes out. */
  async pay(outTradeNo: string): Promise<SandboxView> {
    const now = this.now();
    let expired = false;
    const t = await this.update(outTradeNo, (cur) => {
      if (cur.status === 'Succeeded') throw new SandboxRefusal('AlreadyPaid');
      if (cur.status === 'Closed') throw new SandboxRefusal(cur.closedReason === 'Expired' ? 'Expired' : 'Closed');
      // Set on every run of this function, since a lost race runs it again on fresher data.
      expired = this.view(cur).status === 'Closed';
      if (expired) return { ...cur, status: 'Closed', closedReason: 'Expired', closedAt: now.toISOString() };
      return { ...cur, status: 'Succeeded', paidAt: now.toISOString() };
    });
    if (expired) throw new SandboxRefusal('Expired');
    this.track(this.deliver(t));
    return this.view(t);
  }

  /** The trade for the scan page, or undefined when this gateway does not know it. */
  async find(outTradeNo: string): Promise<SandboxView | undefined> {
    const t = await this.load(outTradeNo);
    return t && this.view(t);
  }

  /** Resolves when every notification delivery started so far has finished (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight]);
  }

  /** Abandons pending retries, so that a closing server does not wait for them. */
  stop(): void {
    this.stopper.abort();
  }

  private view(t: SandboxTrade): SandboxView {
    const remainingMs = Math.max(0, new Date(t.expiresAt).getTime() - this.now().getTime());
    if (t.status === 'Pending' && remainingMs === 0) return { trade: t, status: 'Closed', closedReason: 'Expired', remainingMs };
    return { trade: t, status: t.status, closedReason: t.closedReason, remainingMs };
  }

  /** A record of the other method's sandbox is not this gateway's trade. */
  private async load(outTradeNo: string): Promise<SandboxTrade | undefined> {
    const t = await this.opts.store.get(outTradeNo);
    return t?.method === this.method ? t : undefined;
  }

  /**
   * Read, change, write-if-unchanged, repeated on a lost race: pay and close may arrive at two
   * processes at once, and exactly one of them must win. `change` returning undefined writes nothing.
   */
  private async update(outTradeNo: string, change: (t: SandboxTrade) => SandboxTrade | undefined): Promise<SandboxTrade> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const cur = await this.load(outTradeNo);
      if (!cur) throw new SandboxRefusal('NotFound');
      const next = change(cur);
      if (!next) return cur;
      const written = { ...next, version: cur.version + 1 };
      if (await this.opts.store.put(written, cur.version)) return written;
    }
    throw new Error(`sandbox store: could not update ${outTradeNo} (too many concurrent writes)`);
  }

  private track(p: Promise<void>) {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Posts the notification until acknowledged or out of attempts; never throws. */
  private async deliver(t: SandboxTrade): Promise<void> {
    const notificationId = this.method === 'Alipay' ? `${beijingTime(this.now()).replace(/\D/g, '')}${digits(20)}` : randomUUID();
    const waits = [0, ...this.delays];
    for (const [i, wait] of waits.entries()) {
      try {
        if (wait) await sleep(wait, undefined, { signal: this.stopper.signal });
      } catch {
        return; // stopped
      }
      const error = await this.postOnce(t, notificationId);
      await this.recordAttempt(t.outTradeNo, error).catch((e: Error) => this.opts.log?.warn({ err: e }, 'sandbox: cannot record delivery'));
      if (!error) return;
      this.opts.log?.warn({ outTradeNo: t.outTradeNo, attempt: i + 1, error }, '[支付沙箱] 支付通知未被确认');
    }
  }

  /** One attempt; null when the merchant acknowledged, otherwise what went wrong. */
  private async postOnce(t: SandboxTrade, notificationId: string): Promise<string | null> {
    const { body, headers } = this.method === 'Alipay' ? this.alipayNotification(t, notificationId) : this.wechatNotification(t, notificationId);
    try {
      const res = await (this.opts.fetch ?? fetch)(t.notifyUrl, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.any([AbortSignal.timeout(10_000), this.stopper.signal]),
      });
      const text = await res.text();
      if (this.method === 'Alipay' ? res.status === 200 && text.trim() === 'success' : res.status === 200 || res.status === 204) return null;
      return `HTTP ${res.status} ${text.slice(0, 200)}`;
    } catch (e) {
      return (e as Error).message;
    }
  }

  private async recordAttempt(outTradeNo: string, error: string | null) {
    const at = this.now().toISOString();
    await this.update(outTradeNo, (cur) => ({
      ...cur,
      notify: error ? { ...cur.notify, attempts: cur.notify.attempts + 1, lastError: error } : { attempts: cur.notify.attempts + 1, deliveredAt: at },
    }));
  }

  /** What Alipay posts for a face-to-face payment (trade_status_sync), signed with RSA2. */
  private alipayNotification(t: SandboxTrade, notifyId: string) {
    const yuan = unitsToYuan2(BigInt(t.amount));
    const params = {
      app_id: this.appId,
      auth_app_id: this.appId,
      buyer_id: `2088${t.gatewayTradeNo.slice(-12)}`,
      buyer_logon_id: 'san***@sandbox.example',
      buyer_pay_amount: yuan,
      charset: 'utf-8',
      fund_bill_list: JSON.stringify([{ amount: yuan, fundChannel: 'ALIPAYACCOUNT' }]),
      gmt_create: beijingTime(new Date(t.createdAt)),
      gmt_payment: beijingTime(new Date(t.paidAt!)),
      invoice_amount: yuan,
      notify_id: notifyId,
      notify_time: beijingTime(this.now()),
      notify_type: 'trade_status_sync',
      out_trade_no: t.outTradeNo,
      point_amount: '0.00',
      receipt_amount: yuan,
      seller_id: '2088000000000001',
      subject: t.subject,
      total_amount: yuan,
      trade_no: t.gatewayTradeNo,
      trade_status: 'TRADE_SUCCESS',
      version: '1.0',
    };
    return {
      body: encodeForm(signAlipayNotification(params, this.privateKey)),
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    };
  }

  /** What WeChat Pay v3 posts (TRANSACTION.SUCCESS): encrypted resource, signed headers. */
  private wechatNotification(t: SandboxTrade, id: string) {
    const fen = unitsToFen(BigInt(t.amount));
    const tx: Record<string, unknown> = {
      appid: this.appId,
      mchid: this.mchid,
      out_trade_no: t.outTradeNo,
      transaction_id: t.gatewayTradeNo,
      trade_type: 'NATIVE',
      trade_state: 'SUCCESS',
      trade_state_desc: '支付成功',
      bank_type: 'OTHERS',
      attach: '',
      success_time: rfc3339Beijing(new Date(t.paidAt!)),
      payer: { openid: `oSandbox${t.gatewayTradeNo.slice(-20)}` },
      amount: { total: fen, payer_total: fen, currency: 'CNY', payer_currency: 'CNY' },
    };
    const body = JSON.stringify({
      id,
      create_time: rfc3339Beijing(new Date(t.paidAt!)),
      resource_type: 'encrypt-resource',
      event_type: 'TRANSACTION.SUCCESS',
      summary: '支付成功',
      resource: encryptResource(this.apiV3Key, JSON.stringify(tx), 'transaction'),
    });
    // Signed at each attempt: the receiver refuses timestamps older than five minutes.
    return { body, headers: { 'content-type': 'application/json', ...signedHeaders(body, this.serial, this.privateKey, this.now()) } };
  }
}
