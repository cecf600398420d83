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
import type { SandboxRefund, SandboxStore, SandboxTrade } from './sandbox-store.js';
import { encryptResource, rfc3339Beijing, signedHeaders, verifyWechatNotification, verifyWechatRefundNotification } from './wechat-protocol.js';
import {
  unitsToFen,
  unitsToYuan2,
  type GatewayMethod,
  type NotificationAck,
  type NotificationResult,
  type PaymentDriver,
  type PrecreateInput,
  type RefundInput,
  type RefundNotificationResult,
  type RefundState,
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
  /** How long an accepted refund stays 退款中 before the money is back (as at the real gateways). Default 3 s. */
  refundDelayMs?: number;
  now?: () => Date;
  fetch?: typeof fetch;
  log?: SandboxLog;
}

/** Like Alipay's and WeChat's schedules, compressed: a dev server should not wait hours. */
export const DEFAULT_RETRY_DELAYS_MS = [2_000, 10_000, 60_000, 300_000, 900_000];
export const DEFAULT_REFUND_DELAY_MS = 3_000;
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
  private readonly refundDelayMs: number;
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
    this.refundDelayMs = opts.refundDelayMs ?? DEFAULT_REFUND_DELAY_MS;
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

  /**
   * Accepts a refund as the gateways do: only of a paid trade, never more than is left of it, the
   * same refundNo answered with the same refund. It is 退款中 (Processing) at first and succeeds
   * after refundDelayMs; the WeChat-style gateway then posts a signed REFUND.SUCCESS notification.
   */
  async refund(input: RefundInput): Promise<RefundState> {
    const now = this.now();
    let accepted: SandboxRefund | undefined;
    const t = await this.update(input.paymentTradeNo, (cur) => {
      accepted = undefined;
      const prior = cur.refunds?.find((r) => r.refundNo === input.refundNo);
      if (prior) {
        if (prior.amount !== input.amount.toString()) throw this.refusal('退款请求号已用于另一金额', 'ACQ.REFUND_AMT_RESTRICTION', 'INVALID_REQUEST');
        return undefined;
      }
      this.checkRefundable(cur, input);
      accepted = {
        refundNo: input.refundNo,
        gatewayRefundNo: this.method === 'Alipay' ? `${cur.gatewayTradeNo}R${digits(6)}` : `5030${digits(24)}`,
        amount: input.amount.toString(),
        reason: input.reason,
        notifyUrl: input.notifyUrl,
        requestedAt: now.toISOString(),
        settlesAt: new Date(now.getTime() + this.refundDelayMs).toISOString(),
        status: 'Processing',
      };
      return { ...cur, refunds: [...(cur.refunds ?? []), accepted] };
    }).catch((e: unknown) => {
      if (e instanceof SandboxRefusal && e.reason === 'NotFound')
        throw this.refusal(`交易不存在：${input.paymentTradeNo}`, 'ACQ.TRADE_NOT_EXIST', 'RESOURCE_NOT_EXISTS', 'NotFound');
      throw e;
    });
    // Not tracked by idle(): the wait is the gateway's processing time, not a delivery; unref'd, it keeps no process alive.
    if (accepted) void this.settleLater(t.outTradeNo, accepted.refundNo);
    return this.refundView(t, input.refundNo);
  }

  private checkRefundable(t: SandboxTrade, input: RefundInput) {
    if (t.status !== 'Succeeded') throw this.refusal('交易未支付，不能退款', 'ACQ.TRADE_STATUS_ERROR', 'INVALID_REQUEST');
    if (input.amount <= 0n) throw this.refusal('退款金额须大于 0', 'ACQ.INVALID_PARAMETER', 'PARAM_ERROR');
    unitsToYuan2(input.amount); // whole fen only, as the real gateways
    if (this.method === 'Wechat' && input.total !== BigInt(t.amount)) throw this.refusal('订单金额与原交易不一致', '', 'PARAM_ERROR');
    const refunded = (t.refunds ?? []).filter((r) => r.status !== 'Failed').reduce((n, r) => n + BigInt(r.amount), 0n);
    if (refunded + input.amount > BigInt(t.amount)) throw this.refusal('退款金额超过交易可退金额', 'ACQ.REFUND_AMT_NOT_EQUAL_TOTAL', 'INVALID_REQUEST');
  }

  private refusal(message: string, alipayCode: string, wechatCode: string, kind: 'Rejected' | 'NotFound' = 'Rejected'): PaymentGatewayError {
    return new PaymentGatewayError(kind, message, this.method === 'Alipay' ? alipayCode : wechatCode);
  }

  async queryRefund(q: { refundNo: string; paymentTradeNo: string }): Promise<RefundState> {
    const t = await this.load(q.paymentTradeNo);
    if (!t) return { refundNo: q.refundNo, status: 'NotFound' };
    return this.refundView(t, q.refundNo);
  }

  async verifyRefundNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<RefundNotificationResult> {
    if (this.method === 'Alipay') return { ok: false, reason: 'Alipay sends no refund notifications to this endpoint' };
    const platformKeys = new Map([[this.serial, this.publicKey]]);
    return verifyWechatRefundNotification(req, { platformKeys, apiV3Key: this.apiV3Key, mchid: this.mchid, now: this.now() });
  }

  /**
   * The refund fails instead (模拟: a payer's card that cannot take money back): for trying out and
   * testing what a failed refund does. Only while it is still 退款中.
   */
  async failRefund(outTradeNo: string, refundNo: string, reason = '模拟退款失败：用户银行卡不可用'): Promise<RefundState> {
    return this.settleRefund(outTradeNo, refundNo, 'Failed', reason);
  }

  /** The refund succeeds now instead of after its delay (模拟: the dev page's button, and tests). */
  async completeRefund(outTradeNo: string, refundNo: string): Promise<RefundState> {
    return this.settleRefund(outTradeNo, refundNo, 'Succeeded');
  }

  /** A refund as the merchant's query sees it: 退款中 turns 已退款 once its time has come, timer or not. */
  private refundView(t: SandboxTrade, refundNo: string): RefundState {
    const r = t.refunds?.find((x) => x.refundNo === refundNo);
    if (!r) return { refundNo, status: 'NotFound' };
    const due = r.status === 'Processing' && this.now().getTime() >= Date.parse(r.settlesAt);
    const status = due ? 'Succeeded' : r.status;
    const state: RefundState = { refundNo, status, gatewayRefundNo: r.gatewayRefundNo, amount: BigInt(r.amount) };
    if (status === 'Succeeded') state.succeededAt = new Date(r.settledAt ?? r.settlesAt);
    if (status === 'Failed') state.failReason = r.failReason;
    return state;
  }

  private async settleLater(outTradeNo: string, refundNo: string): Promise<void> {
    try {
      await sleep(this.refundDelayMs, undefined, { signal: this.stopper.signal, ref: false });
    } catch {
      return; // stopped: the query still answers from settlesAt
    }
    await this.settleRefund(outTradeNo, refundNo, 'Succeeded').catch((e: Error) => this.opts.log?.warn({ err: e, refundNo }, '[支付沙箱] 退款处理失败'));
  }

  /** Moves a Processing refund to its end and (WeChat style) notifies; a refund already ended stays as it is. */
  private async settleRefund(outTradeNo: string, refundNo: string, to: 'Succeeded' | 'Failed', failReason?: string): Promise<RefundState> {
    const at = this.now().toISOString();
    let moved = false;
    const t = await this.update(outTradeNo, (cur) => {
      moved = false;
      const r = cur.refunds?.find((x) => x.refundNo === refundNo);
      if (!r || r.status !== 'Processing') return undefined;
      moved = true;
      const next: SandboxRefund = { ...r, status: to, settledAt: at, failReason };
      return { ...cur, refunds: cur.refunds!.map((x) => (x.refundNo === refundNo ? next : x)) };
    });
    const r = t.refunds?.find((x) => x.refundNo === refundNo);
    if (moved && r && this.method === 'Wechat') this.track(this.postUntilAcked(r.notifyUrl, () => this.wechatRefundNotification(t, r), refundNo));
    return this.refundView(t, refundNo);
  }

  /** What WeChat Pay v3 posts when a refund ends: REFUND.SUCCESS or REFUND.ABNORMAL, encrypted and signed. */
  private wechatRefundNotification(t: SandboxTrade, r: SandboxRefund) {
    const ok = r.status === 'Succeeded';
    const resource = {
      mchid: this.mchid,
      out_trade_no: t.outTradeNo,
      transaction_id: t.gatewayTradeNo,
      out_refund_no: r.refundNo,
      refund_id: r.gatewayRefundNo,
      refund_status: ok ? 'SUCCESS' : 'ABNORMAL',
      success_time: ok ? rfc3339Beijing(new Date(r.settledAt!)) : undefined,
      user_received_account: '支付用户零钱',
      amount: {
        total: unitsToFen(BigInt(t.amount)),
        refund: unitsToFen(BigInt(r.amount)),
        payer_total: unitsToFen(BigInt(t.amount)),
        payer_refund: unitsToFen(BigInt(r.amount)),
      },
    };
    const body = JSON.stringify({
      id: randomUUID(),
      create_time: rfc3339Beijing(this.now()),
      resource_type: 'encrypt-resource',
      event_type: ok ? 'REFUND.SUCCESS' : 'REFUND.ABNORMAL',
      summary: ok ? '退款成功' : '退款异常',
      resource: encryptResource(this.apiV3Key, JSON.stringify(resource), 'refund', 'refund'),
    });
    return { body, headers: { 'content-type': 'application/json', ...signedHeaders(body, this.serial, this.privateKey, this.now()) } };
  }

  /** Posts (made afresh at each attempt: signatures age) until a 2xx, or out of attempts; never throws. */
  private async postUntilAcked(url: string, make: () => { body: string; headers: Record<string, string> }, what: string): Promise<void> {
    for (const [i, wait] of [0, ...this.delays].entries()) {
      try {
        if (wait) await sleep(wait, undefined, { signal: this.stopper.signal });
      } catch {
        return;
      }
      const { body, headers } = make();
      try {
        const res = await (this.opts.fetch ?? fetch)(url, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.any([AbortSignal.timeout(10_000), this.stopper.signal]),
        });
        await res.text();
        if (res.status === 200 || res.status === 204) return;
        this.opts.log?.warn({ what, attempt: i + 1, status: res.status }, '[支付沙箱] 退款通知未被确认');
      } catch (e) {
        this.opts.log?.warn({ what, attempt: i + 1, error: (e as Error).message }, '[支付沙箱] 退款通知未送达');
      }
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
