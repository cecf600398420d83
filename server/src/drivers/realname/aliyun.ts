/**
 * Production real-name check through Alibaba Cloud ID Verification (cloudauth, API 2019-03-07,
 * action Id2MetaVerify: 身份二要素核验), RPC style with the same HMAC-SHA1 signature as SendSms.
 * BizCode 1 = name and number agree, 2 = they do not, 3 = no such record.
 */
import { randomUUID } from 'node:crypto';
import { percentEncode, signRpcRequest } from '../sms/aliyun.js';
import type { RealNameCheck, RealNameDriver, RealNameVerdict } from './types.js';

export interface AliyunRealNameOptions {
  accessKeyId: string;
  accessKeySecret: string;
  endpoint: string;
  fetch?: typeof fetch;
  now?: () => Date;
}

interface Id2MetaResponse {
  Code?: string;
  Message?: string;
  RequestId?: string;
  ResultObject?: { BizCode?: string };
}

export class AliyunRealNameDriver implements RealNameDriver {
  readonly name = 'aliyun';
  constructor(private opts: AliyunRealNameOptions) {}

  async verify(check: RealNameCheck): Promise<RealNameVerdict> {
    const now = this.opts.now?.() ?? new Date();
    const params: Record<string, string> = {
      AccessKeyId: this.opts.accessKeyId,
      Action: 'Id2MetaVerify',
      Format: 'JSON',
      IdentifyNum: check.idNumber,
      ParamType: 'normal',
      SignatureMethod: 'HMAC-SHA1',
      SignatureNonce: randomUUID(),
      SignatureVersion: '1.0',
      Timestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      UserName: check.name,
      Version: '2019-03-07',
    };
    params.Signature = signRpcRequest(params, this.opts.accessKeySecret, 'POST');
    const body = Object.entries(params)
      .map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`)
      .join('&');
    const res = await (this.opts.fetch ?? fetch)(this.opts.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const answer = (await res.json().catch(() => ({}))) as Id2MetaResponse;
    if (!res.ok || answer.Code !== '200') throw new Error(`Aliyun Id2MetaVerify failed: ${res.status} ${answer.Code ?? ''} ${answer.Message ?? ''}`.trim());
    const ref = answer.RequestId ?? '';
    switch (answer.ResultObject?.BizCode) {
      case '1':
        return { outcome: 'match', ref };
      case '2':
        return { outcome: 'mismatch', ref, reason: '姓名与身份证号不一致' };
      case '3':
        return { outcome: 'no-record', ref, reason: '查无此身份证号' };
      default:
        throw new Error(`Aliyun Id2MetaVerify: unexpected BizCode ${answer.ResultObject?.BizCode ?? '(none)'}`);
    }
  }
}
