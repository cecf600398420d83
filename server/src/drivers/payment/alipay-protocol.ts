/**
 * Alipay's signature scheme and asynchronous notification, written once and used by both the
 * production driver and the sandbox gateway, so that the sandbox exercises the very code that
 * checks real notifications.
 *
 * RSA2 = SHA256withRSA, base64. The string to sign is every non-empty parameter except the
 * omitted ones, sorted by key, as `k=v` joined by `&`, with values as they are (not URL-encoded).
 * Requests sign everything but `sign`; notifications everything but `sign` and `sign_type`.
 */
import { formatBeijing } from '@console/contract';
import { createSign, createVerify, type KeyObject } from 'node:crypto';
import { yuanToUnits } from '@console/contract';
import type { NotificationResult, TradeState } from './types.js';

export type Params = Record<string, string>;

export const NOTIFY_UNSIGNED = ['sign', 'sign_type'] as const;
export const REQUEST_UNSIGNED = ['sign'] as const;

export function alipaySignContent(params: Params, omit: readonly string[]): string {
  return Object.keys(params)
    .filter((k) => !omit.includes(k) && params[k] !== '')
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
}

export function rsa2Sign(content: string, privateKey: KeyObject): string {
  return createSign('RSA-SHA256').update(content, 'utf8').sign(privateKey, 'base64');
}

/** False (never a throw) for a malformed signature too: the caller only needs yes or no. */
export function rsa2Verify(content: string, signature: string, publicKey: KeyObject): boolean {
  try {
    return createVerify('RSA-SHA256').update(content, 'utf8').verify(publicKey, signature, 'base64');
  } catch {
    return false;
  }
}

/** The notification as the gateway sends it: the parameters plus sign_type and sign. */
export function signAlipayNotification(params: Params, gatewayPrivateKey: KeyObject): Params {
  const sign = rsa2Sign(alipaySignContent(params, NOTIFY_UNSIGNED), gatewayPrivateKey);
  return { ...params, sign_type: 'RSA2', sign };
}

export function encodeForm(params: Params): string {
  return new URLSearchParams(params).toString();
}

/** A form body as a plain map; a repeated key is refused, since which copy was signed is unknowable. */
export function parseForm(rawBody: string): { params: Params } | { error: string } {
  // No prototype: a parameter named __proto__ must be kept as data like any other.
  const params: Params = Object.create(null);
  for (const [k, v] of new URLSearchParams(rawBody)) {
    if (Object.hasOwn(params, k)) return { error: `duplicate parameter ${k}` };
    params[k] = v;
  }
  return { params };
}

const STATUS: Record<string, TradeState['status']> = {
  WAIT_BUYER_PAY: 'Pending',
  TRADE_SUCCESS: 'Succeeded',
  TRADE_FINISHED: 'Succeeded',
  TRADE_CLOSED: 'Closed',
};

export function alipayTradeStatus(tradeStatus: string | undefined): TradeState['status'] | undefined {
  return tradeStatus ? STATUS[tradeStatus] : undefined;
}

/** Alipay's timestamps: "yyyy-MM-dd HH:mm:ss" in Beijing time, whatever the server's time zone. */
export function beijingTime(d: Date): string {
  return formatBeijing(d, 'second');
}

export function parseBeijingTime(s: string | undefined): Date | undefined {
  if (!s || !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(s)) return undefined;
  const d = new Date(`${s.replace(' ', 'T')}+08:00`);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** Alipay's "12.34" → units, or undefined when it is not a plain decimal amount. */
export function yuanStringToUnits(yuan: string | undefined): bigint | undefined {
  if (!yuan || !/^\d+(\.\d{1,2})?$/.test(yuan)) return undefined;
  return yuanToUnits(yuan);
}

export interface AlipayVerifyOptions {
  /** The gateway's public key ("支付宝公钥"), not our application's. */
  publicKey: KeyObject;
  /** Our application id: a correctly signed notification for another app is not ours. */
  appId: string;
}

function refuse(reason: string): NotificationResult {
  return { ok: false, reason };
}

/** Checks a raw `trade_status_sync` notification; only a correctly signed body is read further. */
export function verifyAlipayNotification(rawBody: string, opts: AlipayVerifyOptions): NotificationResult {
  const form = parseForm(rawBody);
  if ('error' in form) return refuse(form.error);
  const p = form.params;
  if (!p.sign) return refuse('missing sign');
  if (p.sign_type && p.sign_type !== 'RSA2') return refuse(`unsupported sign_type ${p.sign_type}`);
  if (!rsa2Verify(alipaySignContent(p, NOTIFY_UNSIGNED), p.sign, opts.publicKey)) return refuse('bad signature');
  if (p.app_id !== opts.appId) return refuse(`app_id ${p.app_id ?? '(none)'} is not ours`);
  return readNotification(p);
}

function readNotification(p: Params): NotificationResult {
  if (!p.out_trade_no) return refuse('missing out_trade_no');
  const status = alipayTradeStatus(p.trade_status);
  if (!status) return refuse(`unknown trade_status ${p.trade_status ?? '(none)'}`);
  const paid = status === 'Succeeded';
  const amount = yuanStringToUnits(p.total_amount);
  if (paid && amount === undefined) return refuse(`bad total_amount ${p.total_amount ?? '(none)'}`);
  return {
    ok: true,
    notification: {
      notificationId: p.notify_id ?? '',
      outTradeNo: p.out_trade_no,
      status,
      gatewayTradeNo: p.trade_no || undefined,
      // Only money that arrived is reported: a closed trade's total was never paid.
      amount: paid ? amount : undefined,
      paidAt: paid ? parseBeijingTime(p.gmt_payment) : undefined,
    },
  };
}
