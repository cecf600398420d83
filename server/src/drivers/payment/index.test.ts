import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AlipayPaymentDriver,
  DisabledPaymentDriver,
  makePaymentDrivers,
  MemorySandboxStore,
  PaymentConfigError,
  readKeyText,
  SandboxPaymentDriver,
  sandboxDrivers,
  WechatPaymentDriver,
  type PaymentConfig,
} from './index.js';
import { generateRsaKeyPair } from './keys.js';

const keys = generateRsaKeyPair();
const sandbox = { store: new MemorySandboxStore(), gatewayKeys: keys };
const base: PaymentConfig = { PAYMENT_DRIVER: 'real', PUBLIC_BASE_URL: 'https://console.example' };
const alipayVars = { ALIPAY_APP_ID: '2021004100000001', ALIPAY_PRIVATE_KEY: keys.privateKey.replace(/\n/g, '\\n'), ALIPAY_PUBLIC_KEY: keys.publicKey };

function wechatVars(privateKeyPath: string) {
  return {
    WECHAT_MCHID: '1900009191',
    WECHAT_APPID: 'wxd678efh567hg6787',
    WECHAT_SERIAL_NO: '5157F09EFDC096DE15EBE81A47057A7232F1B8E1',
    WECHAT_PRIVATE_KEY: privateKeyPath,
    WECHAT_APIV3_KEY: 'a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb',
    WECHAT_PLATFORM_CERT_SERIAL: 'PUB_KEY_ID_0119000091912025010100000000000001',
    WECHAT_PLATFORM_PUBLIC_KEY: keys.publicKey,
  };
}

describe('makePaymentDrivers', () => {
  it('sandbox mode: one sandbox per method, each speaking its method', () => {
    const d = makePaymentDrivers({ ...base, ...alipayVars, PAYMENT_DRIVER: 'sandbox' }, { sandbox });
    expect(d.Alipay).toBeInstanceOf(SandboxPaymentDriver);
    expect(d.Wechat).toBeInstanceOf(SandboxPaymentDriver);
    expect([d.Alipay.method, d.Wechat.method, d.Alipay.embedded]).toEqual(['Alipay', 'Wechat', true]);
    expect(sandboxDrivers(d)).toEqual([d.Alipay, d.Wechat]);
    expect(() => makePaymentDrivers({ ...base, PAYMENT_DRIVER: 'sandbox' })).toThrow(PaymentConfigError);
  });

  it('real mode: configured methods get their driver, keys as escaped PEM or a file path', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'pay-')), 'apiclient_key.pem');
    writeFileSync(file, keys.privateKey);
    const d = makePaymentDrivers({ ...base, ...alipayVars, ...wechatVars(file) });
    expect(d.Alipay).toBeInstanceOf(AlipayPaymentDriver);
    expect(d.Wechat).toBeInstanceOf(WechatPaymentDriver);
    expect(sandboxDrivers(d)).toEqual([]);
  });

  it('real mode: an unconfigured method is disabled, never the sandbox', async () => {
    const d = makePaymentDrivers({ ...base, ...alipayVars });
    expect(d.Wechat).toBeInstanceOf(DisabledPaymentDriver);
    await expect(d.Wechat.precreate({ outTradeNo: 'R1', amount: 100n, subject: 's', expiresAt: new Date(), notifyUrl: 'https://x' })).rejects.toMatchObject({
      kind: 'Rejected',
      message: '微信支付未开通',
    });
    expect(await d.Wechat.verifyNotification({ headers: {}, rawBody: '{}' })).toMatchObject({ ok: false });
  });

  it('real mode: a half-configured method stops the start with the missing names', () => {
    expect(() => makePaymentDrivers({ ...base, ALIPAY_APP_ID: '2021' })).toThrow('支付配置不完整，缺少：ALIPAY_PRIVATE_KEY, ALIPAY_PUBLIC_KEY');
  });

  it('reads bare base64 keys as they are', () => {
    expect(readKeyText(' MIIBIjANBgkq ')).toBe('MIIBIjANBgkq');
  });
});
