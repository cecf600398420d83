/**
 * A payment gateway that shows the payer a QR code and later tells us, in a signed notification,
 * that the money arrived (Alipay face-to-face "precreate", WeChat Pay v3 "Native"). The embedded
 * sandbox speaks the same protocol against a scan page served by this server.
 *
 * Amounts cross this interface in 0.0001-yuan units; each driver converts at its edge (Alipay:
 * yuan with two decimals; WeChat: fen). Gateways only move whole fen, so callers pass amounts that
 * are multiples of 100 units.
 */
export type GatewayMethod = 'Alipay' | 'Wechat';

export interface PrecreateInput {
  /** Our unique trade number (≤ 32 chars, [A-Za-z0-9_]). */
  outTradeNo: string;
  amount: bigint;
  /** What the payer sees in the wallet app. */
  subject: string;
  expiresAt: Date;
  /** Absolute URL of our notify endpoint for this driver. */
  notifyUrl: string;
}

export interface TradeState {
  outTradeNo: string;
  status: 'Pending' | 'Succeeded' | 'Closed';
  /** The gateway's own trade number, once it has one. */
  gatewayTradeNo?: string;
  /** What the gateway says was paid, in 0.0001-yuan units. */
  amount?: bigint;
  paidAt?: Date;
}

/** A notification whose signature checked out. */
export interface VerifiedNotification extends TradeState {
  /** The gateway's id of this notification, for the log. */
  notificationId: string;
}

export type NotificationResult = { ok: true; notification: VerifiedNotification } | { ok: false; reason: string };

/** What we answer the gateway's POST with: it retries until it sees success. */
export interface NotificationAck {
  status: number;
  contentType: string;
  body: string;
}

export interface PaymentDriver {
  readonly method: GatewayMethod;
  /** True for the embedded sandbox (its scan page exists only then). */
  readonly embedded: boolean;
  /** Creates the trade and returns what the QR code encodes. Idempotent per outTradeNo. */
  precreate(input: PrecreateInput): Promise<{ qrContent: string }>;
  /** Verifies the signature (and decrypts, for WeChat) of a raw notification; never throws on bad input. */
  verifyNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<NotificationResult>;
  ack(success: boolean): NotificationAck;
  /** Asks the gateway for the trade's state: the fallback when a notification is late. */
  query(outTradeNo: string): Promise<TradeState>;
  /** Closes an unpaid trade so it can no longer be paid (order expired or cancelled). */
  close(outTradeNo: string): Promise<void>;
  /**
   * Asks the gateway to send part or all of a paid trade back to the payer. Idempotent per
   * refundNo (Alipay out_request_no, WeChat out_refund_no): asked again, the gateway answers
   * with the same refund instead of paying twice. Throws PaymentGatewayError: Rejected when the
   * gateway refused it for good (nothing was refunded), Unavailable when it may or may not have
   * arrived (ask again with the same refundNo).
   */
  refund(input: RefundInput): Promise<RefundState>;
  /** What the gateway says about a refund; NotFound when it never received it. */
  queryRefund(q: { refundNo: string; paymentTradeNo: string }): Promise<RefundState>;
  /**
   * Verifies a refund notification (WeChat Pay v3's REFUND.* events; Alipay's synchronous refunds
   * send none we need). Never throws on bad input.
   */
  verifyRefundNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<RefundNotificationResult>;
}

export interface RefundInput {
  /** Our trade number of the payment being refunded (its outTradeNo). */
  paymentTradeNo: string;
  /** Our unique refund number (≤ 64 chars, [A-Za-z0-9_]). */
  refundNo: string;
  /** What goes back now, in 0.0001-yuan units (whole fen). */
  amount: bigint;
  /** What the payment was, in 0.0001-yuan units (WeChat needs it: amount.total). */
  total: bigint;
  /** Shown to the payer by the wallet (≤ 80 characters are kept). */
  reason: string;
  /** Absolute URL of our refund notification endpoint (WeChat; Alipay ignores it). */
  notifyUrl: string;
}

export interface RefundState {
  refundNo: string;
  /** Processing: accepted, money not yet back; Failed: the gateway gave up (money stays with us). */
  status: 'Processing' | 'Succeeded' | 'Failed' | 'NotFound';
  /** The gateway's own refund id, once it has one. */
  gatewayRefundNo?: string;
  /** What the gateway says was refunded, in 0.0001-yuan units. */
  amount?: bigint;
  succeededAt?: Date;
  /** Why it failed, as the gateway put it. */
  failReason?: string;
}

export type RefundNotificationResult =
  { ok: true; notification: RefundState & { notificationId: string; paymentTradeNo: string } } | { ok: false; reason: string };

/** 0.0001-yuan units → "12.34" (Alipay's total_amount). Refuses sub-fen amounts. */
export function unitsToYuan2(units: bigint): string {
  if (units % 100n !== 0n) throw new RangeError(`支付金额须为整分：${units}`);
  const fen = units / 100n;
  return `${fen / 100n}.${String(fen % 100n).padStart(2, '0')}`;
}

/** A reason as the gateways take it: Alipay's refund_reason and WeChat's reason are string(80). */
export function refundReason(reason: string): string {
  return Array.from(reason).slice(0, 80).join('');
}

/** 0.0001-yuan units → fen (WeChat's amount.total). Refuses sub-fen amounts. */
export function unitsToFen(units: bigint): number {
  if (units % 100n !== 0n) throw new RangeError(`支付金额须为整分：${units}`);
  return Number(units / 100n);
}
