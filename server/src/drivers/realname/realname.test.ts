import { describe, expect, it } from 'vitest';
import { signRpcRequest } from '../sms/aliyun.js';
import { AliyunRealNameDriver } from './aliyun.js';
import { SandboxRealNameDriver } from './sandbox.js';

describe('real-name verifiers', () => {
  it('sandbox: matches well-formed identities, fails the configured ones with the real service’s two reasons', async () => {
    const sandbox = new SandboxRealNameDriver(['310101199001011234', '张三:11010519491231002X']);
    expect(await sandbox.verify({ name: '李四', idNumber: '11010519491231002X' })).toMatchObject({ outcome: 'match' });
    expect(await sandbox.verify({ name: '张三', idNumber: '11010519491231002x' })).toMatchObject({ outcome: 'mismatch', reason: '姓名与身份证号不一致' });
    expect(await sandbox.verify({ name: '王五', idNumber: '310101199001011234' })).toMatchObject({ outcome: 'no-record', reason: '查无此身份证号' });
  });

  it('Aliyun Id2MetaVerify: a signed POST, BizCode 1/2/3 mapped, anything else an error', async () => {
    const bodies: URLSearchParams[] = [];
    let answer: object = { Code: '200', RequestId: 'req-1', ResultObject: { BizCode: '1' } };
    const driver = new AliyunRealNameDriver({
      accessKeyId: 'id',
      accessKeySecret: 'secret',
      endpoint: 'https://cloudauth.test/',
      now: () => new Date('2026-11-23T08:00:00.123Z'),
      fetch: (async (_url: string, init: RequestInit) => {
        bodies.push(new URLSearchParams(String(init.body)));
        return new Response(JSON.stringify(answer), { status: 200 });
      }) as typeof fetch,
    });
    expect(await driver.verify({ name: '张三', idNumber: '11010519491231002X' })).toEqual({ outcome: 'match', ref: 'req-1' });
    const sent = Object.fromEntries(bodies[0]!);
    expect(sent).toMatchObject({
      Action: 'Id2MetaVerify',
      ParamType: 'normal',
      UserName: '张三',
      IdentifyNum: '11010519491231002X',
      Timestamp: '2026-11-23T08:00:00Z',
    });
    const { Signature, ...signed } = sent;
    expect(Signature).toBe(signRpcRequest(signed, 'secret', 'POST'));

    answer = { Code: '200', RequestId: 'req-2', ResultObject: { BizCode: '2' } };
    expect(await driver.verify({ name: '张三', idNumber: '11010519491231002X' })).toMatchObject({ outcome: 'mismatch' });
    answer = { Code: '200', RequestId: 'req-3', ResultObject: { BizCode: '3' } };
    expect(await driver.verify({ name: '张三', idNumber: '11010519491231002X' })).toMatchObject({ outcome: 'no-record' });
    answer = { Code: 'InvalidAccessKeyId.NotFound', Message: 'Specified access key is not found.' };
    await expect(driver.verify({ name: '张三', idNumber: '11010519491231002X' })).rejects.toThrow(/InvalidAccessKeyId/);
  });
});
