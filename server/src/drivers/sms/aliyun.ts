/**
 * Production SMS through Alibaba Cloud's SendSms API (RPC style, signature version 1.0:
 * HMAC-SHA1 over the sorted, percent-encoded query). A verification code goes with the code
 * template (`{ code }`); a notice with the template configured for its kind and its parameters.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { SmsDriver, SmsMessage, SmsNotice } from './types.js';

export interface AliyunSmsOptions {
  accessKeyId: string;
  accessKeySecret: string;
  signName: string;
  templateCode: string;
  endpoint: string;
  fetch?: typeof fetch;
  now?: () => Date;
}

/** RFC 3986 encoding as Alibaba Cloud's signature requires (also encodes !'()*). */
export function percentEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function signRpcRequest(params: Record<string, string>, secret: string, method = 'GET'): string {
  const canonical = Object.keys(params)
    .sort()
    .map((k) => `${percentEncode(k)}=${percentEncode(params[k]!)}`)
    .join('&');
  const stringToSign = `${method}&${percentEncode('/')}&${percentEncode(canonical)}`;
  return createHmac('sha1', `${secret}&`).update(stringToSign).digest('base64');
}

export class AliyunSmsDriver implements SmsDriver {
  readonly name = 'aliyun';
  readonly embedded = false;
  constructor(private opts: AliyunSmsOptions) {}

  async send(m: SmsMessage) {
    await this.sendSms(m.to, this.opts.templateCode, { code: m.code });
  }

  async sendNotice(n: SmsNotice) {
    if (!n.templateCode) throw new Error(`Aliyun SendSms: no template for notice ${n.kind}`);
    await this.sendSms(n.to, n.templateCode, n.params);
  }

  private async sendSms(to: string, templateCode: string, templateParam: Record<string, string>) {
    const now = this.opts.now?.() ?? new Date();
    const params: Record<string, string> = {
      AccessKeyId: this.opts.accessKeyId,
      Action: 'SendSms',
      Format: 'JSON',
      PhoneNumbers: to,
      RegionId: 'cn-hangzhou',
      SignName: this.opts.signName,
      SignatureMethod: 'HMAC-SHA1',
      SignatureNonce: randomUUID(),
      SignatureVersion: '1.0',
      TemplateCode: templateCode,
      TemplateParam: JSON.stringify(templateParam),
      Timestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      Version: '2017-05-25',
    };
    params.Signature = signRpcRequest(params, this.opts.accessKeySecret);
    const query = Object.entries(params)
      .map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`)
      .join('&');
    const res = await (this.opts.fetch ?? fetch)(`${this.opts.endpoint}?${query}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json().catch(() => ({}))) as { Code?: string; Message?: string };
    if (!res.ok || body.Code !== 'OK') {
      throw new Error(`Aliyun SendSms failed: ${res.status} ${body.Code ?? ''} ${body.Message ?? ''}`.trim());
    }
  }
}
