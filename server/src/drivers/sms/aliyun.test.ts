import { describe, expect, it } from 'vitest';
import { AliyunSmsDriver, percentEncode, signRpcRequest } from './aliyun.js';

describe('Aliyun SMS driver', () => {
  it('signs exactly as the published signature v1 example', () => {
    // The worked example of Alibaba Cloud's RPC signature documentation (DescribeRegions).
    const params = {
      AccessKeyId: 'testid',
      Action: 'DescribeRegions',
      Format: 'XML',
      SignatureMethod: 'HMAC-SHA1',
      SignatureNonce: '3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf',
      SignatureVersion: '1.0',
      Timestamp: '2016-02-23T12:46:24Z',
      Version: '2014-05-26',
    };
    expect(signRpcRequest(params, 'testsecret')).toBe('OLeaidS1JvxuMvnyHOwuJ+uX5qY=');
  });

  it('percent-encodes the characters encodeURIComponent leaves alone', () => {
    expect(percentEncode("a b*c'(!)~")).toBe('a%20b%2Ac%27%28%21%29~');
  });

  it('sends the code as template parameter and fails loudly on a provider error', async () => {
    const calls: URL[] = [];
    let answer = { Code: 'OK', Message: 'OK' };
    const driver = new AliyunSmsDriver({
      accessKeyId: 'id',
      accessKeySecret: 'secret',
      signName: '算力云',
      templateCode: 'SMS_1',
      endpoint: 'https://sms.test/',
      fetch: (async (url: string) => {
        calls.push(new URL(url));
        return new Response(JSON.stringify(answer), { status: 200 });
      }) as typeof fetch,
    });
    await driver.send({ to: '13912345678', code: '123456', scene: 'login', text: '' });
    const q = calls[0]!.searchParams;
    expect(q.get('Action')).toBe('SendSms');
    expect(q.get('PhoneNumbers')).toBe('13912345678');
    expect(JSON.parse(q.get('TemplateParam')!)).toEqual({ code: '123456' });
    const params = Object.fromEntries([...q.entries()].filter(([k]) => k !== 'Signature'));
    expect(q.get('Signature')).toBe(signRpcRequest(params, 'secret'));

    answer = { Code: 'isv.BUSINESS_LIMIT_CONTROL', Message: '触发流控' };
    await expect(driver.send({ to: '13912345678', code: '1', scene: 'login', text: '' })).rejects.toThrow(/BUSINESS_LIMIT_CONTROL/);
  });

  it('sends a notice with the template of its kind and its parameters, signed; refuses one without a template', async () => {
    const calls: URL[] = [];
    const driver = new AliyunSmsDriver({
      accessKeyId: 'id',
      accessKeySecret: 'secret',
      signName: '算力云',
      templateCode: 'SMS_1',
      endpoint: 'https://sms.test/',
      fetch: (async (url: string) => {
        calls.push(new URL(url));
        return new Response(JSON.stringify({ Code: 'OK', Message: 'OK' }), { status: 200 });
      }) as typeof fetch,
    });
    const params = { name: '训练机 & "1"', time: '2026-11-30 16:00', days: '7 天' };
    await driver.sendNotice({ to: '13912345678', kind: 'ReleaseCountdown', templateCode: 'SMS_900002', params, text: '【算力云】…' });
    const q = calls[0]!.searchParams;
    expect(q.get('TemplateCode')).toBe('SMS_900002');
    expect(JSON.parse(q.get('TemplateParam')!)).toEqual(params);
    expect(q.get('PhoneNumbers')).toBe('13912345678');
    const signed = Object.fromEntries([...q.entries()].filter(([k]) => k !== 'Signature'));
    expect(q.get('Signature')).toBe(signRpcRequest(signed, 'secret'));
    await expect(driver.sendNotice({ to: '13912345678', kind: 'BalanceLow', templateCode: null, params: {}, text: '' })).rejects.toThrow(/no template/);
    expect(calls).toHaveLength(1);
  });
});
