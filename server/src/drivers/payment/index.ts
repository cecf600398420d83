/**
 * Chooses the payment driver of each method from configuration (DESIGN.md "Outside worlds"):
 * the embedded sandbox by default, Alipay and WeChat Pay v3 when PAYMENT_DRIVER=real.
 *
 * In real mode a method whose variables are all absent is disabled (never silently the sandbox:
 * its scan page would let anyone mark an order paid), and a method configured by halves stops
 * the server with the names of the missing variables.
 */
import { PaymentMethod } from '@console/contract';
import { existsSync, readFileSync } from 'node:fs';
import { AlipayPaymentDriver } from './alipay.js';
import { PaymentGatewayError } from './errors.js';
import type { RsaKeyPairPem } from './keys.js';
import { SandboxPaymentDriver, type SandboxLog } from './sandbox.js';
import type { SandboxStore } from './sandbox-store.js';
import type { GatewayMethod, NotificationAck, NotificationResult, PaymentDriver, RefundNotificationResult, RefundState, TradeState } from './types.js';
import { WechatPaymentDriver } from './wechat.js';

export { AlipayPaymentDriver } from './alipay.js';
export { PaymentGatewayError, type PaymentGatewayErrorKind } from './errors.js';
export { SandboxPaymentDriver } from './sandbox.js';
export { MemorySandboxStore, type SandboxStore, type SandboxTrade } from './sandbox-store.js';
export { sandboxRoutes } from './sandbox-routes.js';
export { WechatPaymentDriver } from './wechat.js';
export * from './types.js';

/** The variables this factory reads, as config.ts will parse them (keys: PEM text or a file path). */
export interface PaymentConfig {
  PAYMENT_DRIVER: 'sandbox' | 'real';
  /** Absolute base URL of this server as payers and gateways reach it (no trailing slash needed). */
  PUBLIC_BASE_URL: string;
  ALIPAY_APP_ID?: string;
  ALIPAY_PRIVATE_KEY?: string;
  ALIPAY_PUBLIC_KEY?: string;
  ALIPAY_GATEWAY?: string;
  WECHAT_MCHID?: string;
  WECHAT_APPID?: string;
  WECHAT_SERIAL_NO?: string;
  WECHAT_PRIVATE_KEY?: string;
  WECHAT_APIV3_KEY?: string;
  WECHAT_PLATFORM_CERT_SERIAL?: string;
  WECHAT_PLATFORM_PUBLIC_KEY?: string;
  WECHAT_BASE_URL?: string;
}

export interface PaymentDeps {
  /** Required in sandbox mode: the shared trade store and the gateway key pair (kept in the database). */
  sandbox?: { store: SandboxStore; gatewayKeys: RsaKeyPairPem; retryDelaysMs?: number[]; refundDelayMs?: number; log?: SandboxLog };
  now?: () => Date;
  fetch?: typeof fetch;
}

export type PaymentDrivers = Record<GatewayMethod, PaymentDriver>;

export class PaymentConfigError extends Error {}

const ALIPAY_VARS = ['ALIPAY_APP_ID', 'ALIPAY_PRIVATE_KEY', 'ALIPAY_PUBLIC_KEY'] as const;
const WECHAT_VARS = [
  'WECHAT_MCHID',
  'WECHAT_APPID',
  'WECHAT_SERIAL_NO',
  'WECHAT_PRIVATE_KEY',
  'WECHAT_APIV3_KEY',
  'WECHAT_PLATFORM_CERT_SERIAL',
  'WECHAT_PLATFORM_PUBLIC_KEY',
] as const;

export function makePaymentDrivers(config: PaymentConfig, deps: PaymentDeps = {}): PaymentDrivers {
  if (config.PAYMENT_DRIVER === 'sandbox') return makeSandboxes(config, deps);
  return {
    Alipay: configured(config, ALIPAY_VARS) ? makeAlipay(config, deps) : new DisabledPaymentDriver('Alipay'),
    Wechat: configured(config, WECHAT_VARS) ? makeWechat(config, deps) : new DisabledPaymentDriver('Wechat'),
  };
}

/** The sandbox drivers among these, for sandboxRoutes. */
export function sandboxDrivers(drivers: PaymentDrivers): SandboxPaymentDriver[] {
  return Object.values(drivers).filter((d): d is SandboxPaymentDriver => d instanceof SandboxPaymentDriver);
}

function makeSandboxes(config: PaymentConfig, deps: PaymentDeps): PaymentDrivers {
  if (!deps.sandbox) throw new PaymentConfigError('PAYMENT_DRIVER=sandbox needs a sandbox store and gateway keys');
  const common = { ...deps.sandbox, publicBaseUrl: config.PUBLIC_BASE_URL, now: deps.now, fetch: deps.fetch };
  return {
    Alipay: new SandboxPaymentDriver({ ...common, method: 'Alipay' }),
    Wechat: new SandboxPaymentDriver({ ...common, method: 'Wechat' }),
  };
}

/** All of a method's variables set: true; none: false; some: a configuration error naming the rest. */
function configured(config: PaymentConfig, names: readonly (keyof PaymentConfig)[]): boolean {
  const missing = names.filter((n) => !config[n]);
  if (missing.length === names.length) return false;
  if (missing.length) throw new PaymentConfigError(`支付配置不完整，缺少：${missing.join(', ')}`);
  return true;
}

function makeAlipay(c: PaymentConfig, deps: PaymentDeps): PaymentDriver {
  return new AlipayPaymentDriver({
    appId: c.ALIPAY_APP_ID!,
    privateKey: readKeyText(c.ALIPAY_PRIVATE_KEY!),
    alipayPublicKey: readKeyText(c.ALIPAY_PUBLIC_KEY!),
    gateway: c.ALIPAY_GATEWAY,
    now: deps.now,
  });
}

function makeWechat(c: PaymentConfig, deps: PaymentDeps): PaymentDriver {
  return new WechatPaymentDriver({
    mchid: c.WECHAT_MCHID!,
    appid: c.WECHAT_APPID!,
    merchantSerialNo: c.WECHAT_SERIAL_NO!,
    merchantPrivateKey: readKeyText(c.WECHAT_PRIVATE_KEY!),
    apiV3Key: c.WECHAT_APIV3_KEY!,
    platformPublicKeys: { [c.WECHAT_PLATFORM_CERT_SERIAL!]: readKeyText(c.WECHAT_PLATFORM_PUBLIC_KEY!) },
    baseUrl: c.WECHAT_BASE_URL,
    now: deps.now,
    fetch: deps.fetch,
  });
}

/**
 * A key given in an environment variable: PEM text (with real or `\n`-escaped line breaks), a
 * path to a PEM file, or the bare base64 Alipay's key tool prints.
 */
export function readKeyText(value: string): string {
  const text = value.trim();
  if (text.includes('-----BEGIN')) return text.replace(/\\n/g, '\n');
  if (existsSync(text)) return readFileSync(text, 'utf8');
  return text;
}

/** A method the operator has not configured: it refuses every payment instead of faking one. */
export class DisabledPaymentDriver implements PaymentDriver {
  readonly embedded = false;
  constructor(readonly method: GatewayMethod) {}

  private refuse(): never {
    throw new PaymentGatewayError('Rejected', `${PaymentMethod.label(this.method)}未开通`);
  }
  async precreate(): Promise<{ qrContent: string }> {
    return this.refuse();
  }
  async verifyNotification(): Promise<NotificationResult> {
    return { ok: false, reason: `${this.method} is not configured` };
  }
  ack(success: boolean): NotificationAck {
    return { status: success ? 200 : 400, contentType: 'text/plain; charset=utf-8', body: success ? 'success' : 'fail' };
  }
  async query(): Promise<TradeState> {
    return this.refuse();
  }
  async close(): Promise<void> {
    return this.refuse();
  }
  async refund(): Promise<RefundState> {
    return this.refuse();
  }
  async queryRefund(): Promise<RefundState> {
    return this.refuse();
  }
  async verifyRefundNotification(): Promise<RefundNotificationResult> {
    return { ok: false, reason: `${this.method} is not configured` };
  }
}
