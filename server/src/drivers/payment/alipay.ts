/**
 * Alipay face-to-face payment (当面付, "precreate": the payer scans our QR code) through the
 * official `alipay-sdk` (v4, OpenAPI 2.0 gateway). The SDK signs requests and checks the
 * signature of every answer (`validateSign`); notifications are checked by alipay-protocol.ts,
 * the same code the sandbox gateway is verified with.
 *
 * Note: the SDK stamps requests with the process's local time; Alipay reads it as Beijing time,
 * so run the server with TZ=Asia/Shanghai (or any UTC+8 zone).
 */
import type { KeyObject } from 'node:crypto';
import { AlipaySdk, type AlipaySdkCommonResult } from 'alipay-sdk';
import { alipayTradeStatus, beijingTime, parseBeijingTime, verifyAlipayNotification, yuanStringToUnits } from './alipay-protocol.js';
import { PaymentGatewayError } from './errors.js';
import { loadPrivateKey, loadPublicKey, pkcs8Pem, spkiPem } from './keys.js';
import {
  refundReason,
  unitsToYuan2,
  type NotificationAck,
  type NotificationResult,
  type PaymentDriver,
  type PrecreateInput,
  type RefundInput,
  type RefundNotificationResult,
  type RefundState,
  type TradeState,
} from './types.js';

export interface AlipayPaymentOptions {
  appId: string;
  /** Our application private key: PEM (PKCS#1 or PKCS#8) or the bare base64 Alipay's key tool prints. */
  privateKey: string | KeyObject;
  /** Alipay's public key ("支付宝公钥", public-key mode): PEM or bare base64. */
  alipayPublicKey: string | KeyObject;
  /** Default https://openapi.alipay.com/gateway.do (sandbox: https://openapi-sandbox.dl.alipaydev.com/gateway.do). */
  gateway?: string;
  timeoutMs?: number;
  now?: () => Date;
}

const SUCCESS = '10000';
/** The longest qr_code_timeout_express Alipay accepts: 15 days. */
const MAX_QR_MINUTES = 15 * 24 * 60;

export class AlipayPaymentDriver implements PaymentDriver {
  readonly method = 'Alipay' as const;
  readonly embedded = false;
  private readonly sdk: AlipaySdk;
  private readonly publicKey: KeyObject;
  private readonly now: () => Date;

  constructor(private readonly opts: AlipayPaymentOptions) {
    this.publicKey = loadPublicKey(opts.alipayPublicKey);
    this.now = opts.now ?? (() => new Date());
    this.sdk = new AlipaySdk({
      appId: opts.appId,
      // Normalised here, so that any key form Alipay hands out works with the SDK's PEM handling.
      privateKey: pkcs8Pem(loadPrivateKey(opts.privateKey)),
      keyType: 'PKCS8',
      alipayPublicKey: spkiPem(this.publicKey),
      gateway: opts.gateway ?? 'https://openapi.alipay.com/gateway.do',
      timeout: opts.timeoutMs ?? 10_000,
      signType: 'RSA2',
      camelcase: false,
    });
  }

  async precreate(input: PrecreateInput): Promise<{ qrContent: string }> {
    const minutes = Math.floor((input.expiresAt.getTime() - this.now().getTime()) / 60_000);
    if (minutes < 1) throw new PaymentGatewayError('Rejected', '距交易过期不足 1 分钟，不再下单');
    const res = await this.call(
      'alipay.trade.precreate',
      {
        out_trade_no: input.outTradeNo,
        total_amount: unitsToYuan2(input.amount),
        subject: input.subject,
        product_code: 'FACE_TO_FACE_PAYMENT',
        // The QR code dies with the order: counted from its creation, and absolute as a backstop.
        qr_code_timeout_express: `${Math.min(minutes, MAX_QR_MINUTES)}m`,
        time_expire: beijingTime(input.expiresAt),
      },
      { notify_url: input.notifyUrl },
    );
    if (res.code !== SUCCESS) throw failure(res);
    if (typeof res.qr_code !== 'string' || !res.qr_code) throw new PaymentGatewayError('BadResponse', 'Alipay precreate: no qr_code');
    return { qrContent: res.qr_code };
  }

  async verifyNotification(req: { headers: Record<string, string | string[] | undefined>; rawBody: string }): Promise<NotificationResult> {
    return verifyAlipayNotification(req.rawBody, { publicKey: this.publicKey, appId: this.opts.appId });
  }

  ack(success: boolean): NotificationAck {
    return { status: 200, contentType: 'text/plain; charset=utf-8', body: success ? 'success' : 'fail' };
  }

  async query(outTradeNo: string): Promise<TradeState> {
    const res = await this.call('alipay.trade.query', { out_trade_no: outTradeNo });
    // A precreated trade exists at Alipay only once the payer has scanned the code.
    if (res.sub_code === 'ACQ.TRADE_NOT_EXIST') return { outTradeNo, status: 'Pending' };
    if (res.code !== SUCCESS) throw failure(res);
    return tradeState(outTradeNo, res);
  }

  async close(outTradeNo: string): Promise<void> {
    const res = await this.call('alipay.trade.close', { out_trade_no: outTradeNo });
    if (res.code === SUCCESS || res.sub_code === 'ACQ.TRADE_NOT_EXIST') return;
    if (res.sub_code === 'ACQ.TRADE_STATUS_ERROR') {
      // Paid, or already closed: only the first is a problem for the caller.
      const state = await this.query(outTradeNo);
      if (state.status === 'Succeeded') throw new PaymentGatewayError('AlreadyPaid', '交易已支付，不能关闭', res.sub_code);
      return;
    }
    throw failure(res);
  }

  /**
   * alipay.trade.refund: synchronous. out_request_no makes partial refunds of one trade distinct
   * and a repeat of the same one harmless: fund_change 'N' says this call moved no money (an
   * earlier one with this number did, or Alipay is still on it), so the query decides.
   */
  async refund(input: RefundInput): Promise<RefundState> {
    const res = await this.call('alipay.trade.refund', {
      out_trade_no: input.paymentTradeNo,
      refund_amount: unitsToYuan2(input.amount),
      refund_reason: refundReason(input.reason),
      out_request_no: input.refundNo,
    });
    if (res.code !== SUCCESS) throw failure(res);
    if (res.fund_change === 'Y') {
      return {
        refundNo: input.refundNo,
        status: 'Succeeded',
        gatewayRefundNo: (res.trade_no as string | undefined) || undefined,
        amount: input.amount,
        succeededAt: parseBeijingTime(res.gmt_refund_pay as string | undefined) ?? this.now(),
      };
    }
    const state = await this.queryRefund({ refundNo: input.refundNo, paymentTradeNo: input.paymentTradeNo });
    return state.status === 'NotFound' ? { refundNo: input.refundNo, status: 'Processing' } : state;
  }

  /**
   * alipay.trade.fastpay.refund.query: for a refund made by alipay.trade.refund, an answer with the
   * refund's details (refund_status REFUND_SUCCESS, or absent with refund_amount) means it
   * succeeded; an answer without them means Alipay has no successful refund under that number,
   * and asking again with the same out_request_no is Alipay's own advice.
   */
  async queryRefund(q: { refundNo: string; paymentTradeNo: string }): Promise<RefundState> {
    const res = await this.call('alipay.trade.fastpay.refund.query', {
      out_trade_no: q.paymentTradeNo,
      out_request_no: q.refundNo,
      query_options: ['gmt_refund_pay'],
    });
    if (res.sub_code === 'ACQ.TRADE_NOT_EXIST') return { refundNo: q.refundNo, status: 'NotFound' };
    if (res.code !== SUCCESS) throw failure(res);
    const status = res.refund_status as string | undefined;
    const amount = yuanStringToUnits(res.refund_amount as string | undefined);
    if (status === 'REFUND_SUCCESS' || (!status && amount !== undefined && res.out_request_no === q.refundNo)) {
      return { refundNo: q.refundNo, status: 'Succeeded', amount, succeededAt: parseBeijingTime(res.gmt_refund_pay as string | undefined) };
    }
    return { refundNo: q.refundNo, status: 'NotFound' };
  }

  /** Alipay's synchronous refunds need no notification: the answer and the query say it all. */
  async verifyRefundNotification(): Promise<RefundNotificationResult> {
    return { ok: false, reason: 'Alipay sends no refund notifications to this endpoint' };
  }

  /** One signed call; transport failures and untrustworthy answers become PaymentGatewayError. */
  private async call(method: string, bizContent: Record<string, unknown>, extra: Record<string, string> = {}): Promise<AlipaySdkCommonResult> {
    try {
      return await this.sdk.exec(method, { ...extra, bizContent }, { validateSign: true });
    } catch (e) {
      const message = (e as Error).message;
      const kind = /验签|格式错误/.test(message) ? 'BadResponse' : 'Unavailable';
      throw new PaymentGatewayError(kind, `Alipay ${method}: ${message}`);
    }
  }
}

function failure(res: AlipaySdkCommonResult): PaymentGatewayError {
  const sub = res.sub_code;
  const text = `Alipay: ${res.code} ${res.msg} ${sub ?? ''} ${res.sub_msg ?? ''}`.trim();
  if (sub === 'ACQ.TRADE_HAS_SUCCESS') return new PaymentGatewayError('AlreadyPaid', text, sub);
  if (sub === 'ACQ.TRADE_NOT_EXIST') return new PaymentGatewayError('NotFound', text, sub);
  if (res.code === '20000' || sub === 'ACQ.SYSTEM_ERROR') return new PaymentGatewayError('Unavailable', text, sub ?? res.code);
  return new PaymentGatewayError('Rejected', text, sub ?? res.code);
}

function tradeState(outTradeNo: string, res: AlipaySdkCommonResult): TradeState {
  const status = alipayTradeStatus(res.trade_status as string | undefined);
  if (!status) throw new PaymentGatewayError('BadResponse', `Alipay query: unknown trade_status ${String(res.trade_status)}`);
  const state: TradeState = { outTradeNo, status, gatewayTradeNo: (res.trade_no as string | undefined) || undefined };
  if (status !== 'Succeeded') return state;
  const amount = yuanStringToUnits(res.total_amount as string | undefined);
  if (amount === undefined) throw new PaymentGatewayError('BadResponse', `Alipay query: bad total_amount ${String(res.total_amount)}`);
  return { ...state, amount, paidAt: parseBeijingTime(res.send_pay_date as string | undefined) };
}
