/**
 * WeChat Pay API v3's signatures and encrypted notifications, written once and used by both the
 * production driver and the sandbox gateway (which plays WeChat's side of every rule here).
 *
 * - Our requests: `Authorization: WECHATPAY2-SHA256-RSA2048 mchid=…,nonce_str=…,timestamp=…,
 *   serial_no=…,signature=…`, SHA256withRSA with the merchant key over
 *   "METHOD\nPATH?QUERY\nTIMESTAMP\nNONCE\nBODY\n".
 * - WeChat's answers and notifications: `Wechatpay-Timestamp/-Nonce/-Signature/-Serial` headers,
 *   SHA256withRSA with the platform key named by the serial over "TIMESTAMP\nNONCE\nBODY\n".
 * - A notification's `resource` is AES-256-GCM encrypted with the APIv3 key (the 16-byte tag is
 *   the tail of the base64 ciphertext).
 */
import { createCipheriv, createDecipheriv, createSign, createVerify, randomBytes, type KeyObject } from 'node:crypto';
import type { NotificationResult, RefundNotificationResult, RefundState, TradeState } from './types.js';

export const AUTH_SCHEMA = 'WECHATPAY2-SHA256-RSA2048';
/** Answers and notifications older (or further ahead) than this are replays, not news. */
export const MAX_SKEW_SECONDS = 300;

export function newNonce(): string {
  return randomBytes(16).toString('hex').toUpperCase();
}

export function sha256RsaSign(message: string, privateKey: KeyObject): string {
  return createSign('RSA-SHA256').update(message, 'utf8').sign(privateKey, 'base64');
}

export function sha256RsaVerify(message: string, signature: string, publicKey: KeyObject): boolean {
  try {
    return createVerify('RSA-SHA256').update(message, 'utf8').verify(publicKey, signature, 'base64');
  } catch {
    return false;
  }
}

export function requestMessage(method: string, pathAndQuery: string, timestamp: string, nonce: string, body: string): string {
  return `${method}\n${pathAndQuery}\n${timestamp}\n${nonce}\n${body}\n`;
}

export function responseMessage(timestamp: string, nonce: string, body: string): string {
  return `${timestamp}\n${nonce}\n${body}\n`;
}

export interface AuthorizationInput {
  mchid: string;
  serialNo: string;
  privateKey: KeyObject;
  method: string;
  pathAndQuery: string;
  body: string;
  timestamp: string;
  nonce: string;
}

export function authorizationHeader(a: AuthorizationInput): string {
  const signature = sha256RsaSign(requestMessage(a.method, a.pathAndQuery, a.timestamp, a.nonce, a.body), a.privateKey);
  return `${AUTH_SCHEMA} mchid="${a.mchid}",nonce_str="${a.nonce}",timestamp="${a.timestamp}",serial_no="${a.serialNo}",signature="${signature}"`;
}

/** The fields of an Authorization header (what WeChat, or a test stub playing it, reads). */
export function parseAuthorization(header: string | undefined): Record<string, string> | undefined {
  if (!header?.startsWith(`${AUTH_SCHEMA} `)) return undefined;
  const fields: Record<string, string> = {};
  for (const m of header.slice(AUTH_SCHEMA.length + 1).matchAll(/(\w+)="([^"]*)"/g)) fields[m[1]!] = m[2]!;
  return fields;
}

export interface SignedHeaders {
  timestamp: string;
  nonce: string;
  signature: string;
  serial: string;
}

type HeaderBag = Record<string, string | string[] | undefined> | Headers;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

export function readSignedHeaders(headers: HeaderBag): SignedHeaders | { error: string } {
  const h = {
    timestamp: header(headers, 'wechatpay-timestamp'),
    nonce: header(headers, 'wechatpay-nonce'),
    signature: header(headers, 'wechatpay-signature'),
    serial: header(headers, 'wechatpay-serial'),
  };
  const missing = Object.entries(h).find(([, v]) => !v);
  if (missing) return { error: `missing Wechatpay-${missing[0][0]!.toUpperCase()}${missing[0].slice(1)} header` };
  return h as SignedHeaders;
}

/** Signs an answer or a notification as WeChat does (the sandbox and test stubs use this). */
export function signedHeaders(body: string, serial: string, privateKey: KeyObject, now: Date): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const nonce = newNonce();
  return {
    'Wechatpay-Timestamp': timestamp,
    'Wechatpay-Nonce': nonce,
    'Wechatpay-Serial': serial,
    'Wechatpay-Signature': sha256RsaSign(responseMessage(timestamp, nonce, body), privateKey),
    'Wechatpay-Signature-Type': AUTH_SCHEMA,
  };
}

/** Null when the body is WeChat's and fresh; otherwise why not. */
export function checkWechatSignature(h: SignedHeaders, body: string, platformKeys: ReadonlyMap<string, KeyObject>, now: Date): string | null {
  if (!/^\d{1,12}$/.test(h.timestamp)) return `bad Wechatpay-Timestamp ${h.timestamp}`;
  const skew = Math.abs(now.getTime() / 1000 - Number(h.timestamp));
  if (skew > MAX_SKEW_SECONDS) return `stale Wechatpay-Timestamp (${Math.round(skew)} s off)`;
  const key = platformKeys.get(h.serial);
  if (!key) return `unknown platform serial ${h.serial}`;
  if (!sha256RsaVerify(responseMessage(h.timestamp, h.nonce, body), h.signature, key)) return 'bad signature';
  return null;
}

export interface EncryptedResource {
  algorithm: string;
  ciphertext: string;
  nonce: string;
  associated_data?: string;
  original_type?: string;
}

function aesKey(apiV3Key: string): Buffer {
  const key = Buffer.from(apiV3Key, 'utf8');
  if (key.length !== 32) throw new RangeError('APIv3 密钥须为 32 个字符');
  return key;
}

export function encryptResource(apiV3Key: string, plaintext: string, associatedData: string, originalType = 'transaction'): EncryptedResource {
  const nonce = randomBytes(6).toString('hex');
  const cipher = createCipheriv('aes-256-gcm', aesKey(apiV3Key), Buffer.from(nonce, 'utf8'));
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { algorithm: 'AEAD_AES_256_GCM', ciphertext: body.toString('base64'), nonce, associated_data: associatedData, original_type: originalType };
}

/** Throws when the ciphertext, its tag, the associated data or the key do not match. */
export function decryptResource(apiV3Key: string, r: EncryptedResource): string {
  if (r.algorithm !== 'AEAD_AES_256_GCM') throw new Error(`unsupported algorithm ${r.algorithm}`);
  const data = Buffer.from(r.ciphertext, 'base64');
  if (data.length < 17) throw new Error('ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', aesKey(apiV3Key), Buffer.from(r.nonce, 'utf8'));
  decipher.setAAD(Buffer.from(r.associated_data ?? '', 'utf8'));
  decipher.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
}

const STATE: Record<string, TradeState['status']> = {
  SUCCESS: 'Succeeded',
  // Paid and later refunded (wholly or partly): the payment itself did happen.
  REFUND: 'Succeeded',
  NOTPAY: 'Pending',
  USERPAYING: 'Pending',
  CLOSED: 'Closed',
  REVOKED: 'Closed',
  PAYERROR: 'Closed',
};

/** A transaction object (query answer or decrypted notification), as WeChat writes it. */
export interface WechatTransaction {
  appid?: string;
  mchid?: string;
  out_trade_no?: string;
  transaction_id?: string;
  trade_state?: string;
  success_time?: string;
  amount?: { total?: number; payer_total?: number; currency?: string };
}

/** Our terms for a transaction, or why it cannot be read. */
export function transactionState(tx: WechatTransaction): TradeState | { error: string } {
  if (!tx.out_trade_no) return { error: 'missing out_trade_no' };
  const status = tx.trade_state ? STATE[tx.trade_state] : undefined;
  if (!status) return { error: `unknown trade_state ${tx.trade_state ?? '(none)'}` };
  const state: TradeState = { outTradeNo: tx.out_trade_no, status, gatewayTradeNo: tx.transaction_id || undefined };
  if (status !== 'Succeeded') return state;
  const fen = tx.amount?.total;
  if (typeof fen !== 'number' || !Number.isSafeInteger(fen) || fen < 0) return { error: `bad amount.total ${String(fen)}` };
  state.amount = BigInt(fen) * 100n;
  const paidAt = tx.success_time ? new Date(tx.success_time) : undefined;
  state.paidAt = paidAt && !Number.isNaN(paidAt.getTime()) ? paidAt : undefined;
  return state;
}

/** RFC 3339 in Beijing time, as WeChat writes times ("2026-01-01T08:00:00+08:00"). */
export function rfc3339Beijing(d: Date): string {
  return `${new Date(d.getTime() + 8 * 3600 * 1000).toISOString().slice(0, 19)}+08:00`;
}

export interface WechatVerifyOptions {
  platformKeys: ReadonlyMap<string, KeyObject>;
  apiV3Key: string;
  mchid: string;
  appid: string;
  now: Date;
}

function refuse(reason: string): NotificationResult {
  return { ok: false, reason };
}

interface NotificationEnvelope {
  id?: string;
  event_type?: string;
  resource?: EncryptedResource;
}

/** Checks signature and freshness, then decrypts and reads the transaction; never throws. */
export function verifyWechatNotification(
  req: { headers: Record<string, string | string[] | undefined>; rawBody: string },
  opts: WechatVerifyOptions,
): NotificationResult {
  const h = readSignedHeaders(req.headers);
  if ('error' in h) return refuse(h.error);
  const bad = checkWechatSignature(h, req.rawBody, opts.platformKeys, opts.now);
  if (bad) return refuse(bad);
  let envelope: NotificationEnvelope;
  let tx: WechatTransaction;
  try {
    envelope = JSON.parse(req.rawBody) as NotificationEnvelope;
    if (!envelope.resource) return refuse('missing resource');
    tx = JSON.parse(decryptResource(opts.apiV3Key, envelope.resource)) as WechatTransaction;
  } catch (e) {
    return refuse(`cannot decrypt resource: ${(e as Error).message}`);
  }
  if (tx.mchid !== opts.mchid) return refuse(`mchid ${tx.mchid ?? '(none)'} is not ours`);
  if (tx.appid !== opts.appid) return refuse(`appid ${tx.appid ?? '(none)'} is not ours`);
  const state = transactionState(tx);
  if ('error' in state) return refuse(state.error);
  return { ok: true, notification: { ...state, notificationId: envelope.id ?? '' } };
}

/** A refund as WeChat writes it: the answer to a refund or its query (`status`), or a notification (`refund_status`). */
export interface WechatRefund {
  mchid?: string;
  out_trade_no?: string;
  out_refund_no?: string;
  refund_id?: string;
  status?: string;
  refund_status?: string;
  success_time?: string;
  amount?: { total?: number; refund?: number; payer_total?: number; payer_refund?: number };
}

const REFUND_STATE: Record<string, RefundState['status']> = {
  SUCCESS: 'Succeeded',
  PROCESSING: 'Processing',
  // Closed by WeChat, or stuck (the payer's card or balance account cannot take it, 退款异常): the
  // money did not go back, and we treat both as failed — the operator may refund again.
  CLOSED: 'Failed',
  ABNORMAL: 'Failed',
};

const REFUND_FAIL_REASON: Record<string, string> = { CLOSED: '退款关闭', ABNORMAL: '退款异常（用户银行卡或零钱账户不可用）' };

/** Our terms for a WeChat refund, or why it cannot be read. */
export function wechatRefundState(r: WechatRefund): RefundState | { error: string } {
  if (!r.out_refund_no) return { error: 'missing out_refund_no' };
  const raw = r.status ?? r.refund_status;
  const status = raw ? REFUND_STATE[raw] : undefined;
  if (!status) return { error: `unknown refund status ${raw ?? '(none)'}` };
  const fen = r.amount?.refund;
  if (fen !== undefined && (!Number.isSafeInteger(fen) || fen < 0)) return { error: `bad amount.refund ${String(fen)}` };
  const state: RefundState = { refundNo: r.out_refund_no, status, gatewayRefundNo: r.refund_id || undefined };
  if (fen !== undefined) state.amount = BigInt(fen) * 100n;
  if (status === 'Failed') state.failReason = REFUND_FAIL_REASON[raw!];
  if (status === 'Succeeded' && r.success_time) {
    const at = new Date(r.success_time);
    if (!Number.isNaN(at.getTime())) state.succeededAt = at;
  }
  return state;
}

/**
 * A refund notification (REFUND.SUCCESS / REFUND.ABNORMAL / REFUND.CLOSED): signed and fresh like
 * a payment notification, its resource (original_type refund) decrypted with the APIv3 key. It
 * carries our mchid (no appid); never throws.
 */
export function verifyWechatRefundNotification(
  req: { headers: Record<string, string | string[] | undefined>; rawBody: string },
  opts: Omit<WechatVerifyOptions, 'appid'>,
): RefundNotificationResult {
  const h = readSignedHeaders(req.headers);
  if ('error' in h) return { ok: false, reason: h.error };
  const bad = checkWechatSignature(h, req.rawBody, opts.platformKeys, opts.now);
  if (bad) return { ok: false, reason: bad };
  let envelope: NotificationEnvelope;
  let refund: WechatRefund;
  try {
    envelope = JSON.parse(req.rawBody) as NotificationEnvelope;
    if (!envelope.resource) return { ok: false, reason: 'missing resource' };
    refund = JSON.parse(decryptResource(opts.apiV3Key, envelope.resource)) as WechatRefund;
  } catch (e) {
    return { ok: false, reason: `cannot decrypt resource: ${(e as Error).message}` };
  }
  if (!envelope.event_type?.startsWith('REFUND.')) return { ok: false, reason: `not a refund event: ${envelope.event_type ?? '(none)'}` };
  if (refund.mchid !== opts.mchid) return { ok: false, reason: `mchid ${refund.mchid ?? '(none)'} is not ours` };
  if (!refund.out_trade_no) return { ok: false, reason: 'missing out_trade_no' };
  const state = wechatRefundState(refund);
  if ('error' in state) return { ok: false, reason: state.error };
  return { ok: true, notification: { ...state, notificationId: envelope.id ?? '', paymentTradeNo: refund.out_trade_no } };
}
