/**
 * What a payment driver throws when the gateway refuses or cannot be reached. The kind lets the
 * order service react without parsing gateway-specific codes (the raw code stays for the log).
 */
export type PaymentGatewayErrorKind =
  /** The trade is already paid: it cannot be closed, and a new precreate would pay twice. */
  | 'AlreadyPaid'
  /** The gateway does not know the trade. */
  | 'NotFound'
  /** The gateway refused the request (bad parameters, account not enabled, trade changed…). */
  | 'Rejected'
  /** Network failure, timeout or a 5xx: worth retrying later. */
  | 'Unavailable'
  /** The answer could not be trusted (bad or missing signature, unparseable body). */
  | 'BadResponse';

export class PaymentGatewayError extends Error {
  constructor(
    readonly kind: PaymentGatewayErrorKind,
    message: string,
    /** The gateway's own code (Alipay sub_code, WeChat code), when it gave one. */
    readonly gatewayCode?: string,
  ) {
    super(message);
    this.name = 'PaymentGatewayError';
  }
}
