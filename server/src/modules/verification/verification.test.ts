import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, json, latestCode, newMobile, post, registerUser, startTestServer, countRows, type TestServer } from '../../../test/harness.js';
import type { SmsDriver } from '../../drivers/sms/types.js';
import { isAppError } from '../../http/errors.js';

const SMS = '/api/v1/users/verify/smscode';
const VALIDATE = '/userapi/api/v2.1/register/validate';

describe('SMS verification codes', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('sends a 6-digit code that the outbox shows, newest first, valid 5 minutes', async () => {
    const mobile = newMobile();
    const res = await post(s.app, SMS, { mobile, scene: 'register' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ expiresIn: 300, resendIn: 60 });
    const outbox = json(await get(s.app, `/dev/outbox?to=${mobile}`));
    expect(outbox.items).toHaveLength(1);
    expect(outbox.items[0]).toMatchObject({ to: mobile, channel: 'sms' });
    expect(outbox.items[0].code).toMatch(/^\d{6}$/);
    expect(outbox.items[0].text).toContain(outbox.items[0].code);

    s.clock.advance(61_000);
    await post(s.app, SMS, { mobile, scene: 'register' });
    const again = json(await get(s.app, `/dev/outbox?to=${mobile}`));
    expect(again.items).toHaveLength(2);
    expect(Date.parse(again.items[0].createdAt)).toBeGreaterThan(Date.parse(again.items[1].createdAt));
  });

  it('refuses a second code for the same number within 60 s, then allows it', async () => {
    const mobile = newMobile();
    expect((await post(s.app, SMS, { mobile, scene: 'register' })).statusCode).toBe(200);
    s.clock.advance(30_000);
    const res = await post(s.app, SMS, { mobile, scene: 'register' });
    expect(res.statusCode).toBe(429);
    expect(json(res)).toMatchObject({ code: 42900001, detail: '请 30 秒后再试' });
    s.clock.advance(30_001);
    expect((await post(s.app, SMS, { mobile, scene: 'register' })).statusCode).toBe(200);
  });

  it('answers bad input with 40000001 naming the field and sends nothing', async () => {
    const before = await countRows(s, 'outbox');
    for (const [payload, field] of [
      [{ mobile: '1391234', scene: 'register' }, 'mobile'],
      [{ mobile: '23912345678', scene: 'register' }, 'mobile'],
      [{ mobile: newMobile(), scene: 'hack' }, 'scene'],
      [{ scene: 'register' }, 'mobile'],
      [{ mobile: 13912345678, scene: 'register' }, 'mobile'],
      [{ mobile: newMobile() }, 'scene'],
    ] as const) {
      const res = await post(s.app, SMS, payload);
      expect(res.statusCode).toBe(400);
      const body = json(res);
      expect(body.code).toBe(40000001);
      expect(body.message).toBe('请求参数不正确');
      expect(body.detail.startsWith(field)).toBe(true);
    }
    expect(await countRows(s, 'outbox')).toBe(before);
  });

  it('checks the scene against the account: register needs a new number, login and reset an existing one', async () => {
    const user = await registerUser(s);
    expect(json(await post(s.app, SMS, { mobile: user.mobile, scene: 'register' })).code).toBe(40900001);
    expect(json(await post(s.app, SMS, { mobile: newMobile(), scene: 'login' })).code).toBe(40010006);
    expect(json(await post(s.app, SMS, { mobile: newMobile(), scene: 'reset' })).code).toBe(40010006);
    const anonymousMobileScene = await post(s.app, SMS, { mobile: newMobile(), scene: 'mobile' });
    expect(anonymousMobileScene.statusCode).toBe(401);
    expect(json(anonymousMobileScene).code).toBe(40100001);
  });

  it('validates a code without spending it, counts wrong tries and locks after 5', async () => {
    const mobile = newMobile();
    await post(s.app, SMS, { mobile, scene: 'register' });
    const code = await latestCode(s.app, mobile);
    const wrong = code === '000000' ? '111111' : '000000';

    expect(json(await post(s.app, VALIDATE, { mobile, code }))).toEqual({ ok: true });
    expect(json(await post(s.app, VALIDATE, { mobile, code }))).toEqual({ ok: true });

    for (let left = 4; left >= 1; left--) {
      const res = await post(s.app, VALIDATE, { mobile, code: wrong });
      expect(res.statusCode).toBe(400);
      expect(json(res)).toMatchObject({ code: 40010001, detail: `还可尝试 ${left} 次` });
    }
    expect(json(await post(s.app, VALIDATE, { mobile, code: wrong })).code).toBe(40010003);
    // Even the right code no longer works: the user must ask for a new one.
    expect(json(await post(s.app, VALIDATE, { mobile, code })).code).toBe(40010003);
    const reg = await post(s.app, '/userapi/api/v2.1/register', { mobile, code, password: 'Abcd1234', agreed: true });
    expect(json(reg).code).toBe(40010003);

    s.clock.advance(61_000);
    await post(s.app, SMS, { mobile, scene: 'register' });
    const fresh = await latestCode(s.app, mobile);
    expect(json(await post(s.app, VALIDATE, { mobile, code: fresh }))).toEqual({ ok: true });
  });

  it('expires a code after 5 minutes', async () => {
    const mobile = newMobile();
    await post(s.app, SMS, { mobile, scene: 'register' });
    const code = await latestCode(s.app, mobile);
    s.clock.advance(5 * 60_000 + 1);
    const res = await post(s.app, VALIDATE, { mobile, code });
    expect(res.statusCode).toBe(400);
    expect(json(res).code).toBe(40010002);
  });

  it('rejects a malformed code before looking anything up', async () => {
    const res = await post(s.app, VALIDATE, { mobile: newMobile(), code: '12ab56' });
    expect(json(res)).toMatchObject({ code: 40000001 });
    expect(json(res).detail).toMatch(/^code/);
  });

  it('serialises two simultaneous requests for one number: exactly one code is sent', async () => {
    const mobile = newMobile();
    const [a, b] = await Promise.all([post(s.app, SMS, { mobile, scene: 'register' }), post(s.app, SMS, { mobile, scene: 'register' })]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 429]);
    expect(json(await get(s.app, `/dev/outbox?to=${mobile}`)).items).toHaveLength(1);
  });

  it('asks /dev/outbox for a recipient', async () => {
    const res = await get(s.app, '/dev/outbox');
    expect(res.statusCode).toBe(400);
    expect(json(res).code).toBe(40000001);
  });
});

describe('SMS limits per IP and driver failures', () => {
  it('caps codes per IP per hour', async () => {
    const s = await startTestServer({ env: { CODE_IP_LIMIT_PER_HOUR: '3' } });
    try {
      for (let i = 0; i < 3; i++) expect((await post(s.app, SMS, { mobile: newMobile(), scene: 'register' })).statusCode).toBe(200);
      const res = await post(s.app, SMS, { mobile: newMobile(), scene: 'register' });
      expect(res.statusCode).toBe(429);
      expect(json(res).code).toBe(42900002);
      s.clock.advance(3600_000 + 1);
      expect((await post(s.app, SMS, { mobile: newMobile(), scene: 'register' })).statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('caps codes per IP per hour under requests at once for different numbers (replicas on one database)', async () => {
    const s = await startTestServer({ env: { CODE_IP_LIMIT_PER_HOUR: '3' } });
    try {
      const results = await Promise.allSettled(Array.from({ length: 10 }, () => s.ctx.codes.sendSms(newMobile(), 'register', '203.0.113.9')));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
      for (const r of results) if (r.status === 'rejected') expect(isAppError(r.reason, 'CODE_IP_LIMIT'), String(r.reason)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('reports a provider failure as 50200002 and lets the user retry at once; /dev/outbox is off for a real driver', async () => {
    let fail = true;
    const sent: string[] = [];
    const provider: SmsDriver = {
      name: 'test-provider',
      embedded: false,
      async send(m) {
        if (fail) throw new Error('provider down');
        sent.push(m.to);
      },
    };
    const s = await startTestServer({ drivers: { sms: provider } });
    try {
      const mobile = newMobile();
      const res = await post(s.app, SMS, { mobile, scene: 'register' });
      expect(res.statusCode).toBe(502);
      expect(json(res)).toEqual({ code: 50200002, message: '验证码发送失败，请稍后重试' });
      fail = false;
      expect((await post(s.app, SMS, { mobile, scene: 'register' })).statusCode).toBe(200);
      expect(sent).toEqual([mobile]);
      const outbox = await get(s.app, `/dev/outbox?to=${mobile}`);
      expect(outbox.statusCode).toBe(403);
      expect(json(outbox).code).toBe(40300004);
    } finally {
      await s.close();
    }
  });
});
