import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { loginFailures, users } from './schema.js';
import {
  PASSWORD,
  PNG,
  multipart,
  countRows,
  get,
  json,
  latestCode,
  newMobile,
  post,
  put,
  registerUser,
  requestCode,
  startTestServer,
  type TestServer,
} from '../../../test/harness.js';

const REGISTER = '/userapi/api/v2.1/register';
const LOGIN = '/userapi/api/v2.1/login';
const LOGOUT = '/userapi/api/v2.1/logout';
const ME = '/userapi/api/v2.1/users/me/info';

describe('registration', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('registers with a code, answers { token, user } with the spec defaults, and sets the 7-day cookie', async () => {
    const mobile = newMobile();
    const code = await requestCode(s.app, mobile, 'register');
    const res = await post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: true });
    expect(res.statusCode).toBe(200);
    const { token, user } = json(res);
    expect(token.split('.')).toHaveLength(5); // a compact JWE
    expect(user).toMatchObject({
      mobile,
      certStatus: 'Init',
      certType: 'Uncertified',
      accountType: 'personal',
      isChild: false,
      isStudent: false,
      certified: false,
      firstVisit: true,
      createGPUInstance: true,
      usingLLM: true,
      nickname: `${mobile.slice(0, 3)}****${mobile.slice(-4)}`,
    });
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toContain(`jweToken=${token}`);
    expect(cookie).toContain('Max-Age=604800');
    // The consent is kept with the time it was given.
    const [row] = await s.ctx.db.select({ agreedAt: users.agreedAt }).from(users).where(eq(users.mobile, mobile));
    expect(row!.agreedAt).toEqual(s.clock.now());
    expect(cookie).toContain('Path=/');
    expect(cookie).toContain('HttpOnly');

    const me = await get(s.app, ME, token);
    expect(me.statusCode).toBe(200);
    expect(json(me).id).toBe(user.id);
  });

  it('spends the code: the same code cannot register twice', async () => {
    const mobile = newMobile();
    const code = await requestCode(s.app, mobile, 'register');
    expect((await post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: true })).statusCode).toBe(200);
    const again = await post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: true });
    expect(again.statusCode).toBe(409);
    expect(json(again).code).toBe(40900001);
  });

  it('refuses weak passwords, wrong codes and bad fields without creating anyone', async () => {
    const mobile = newMobile();
    const code = await requestCode(s.app, mobile, 'register');
    const usersBefore = await countRows(s, 'users');
    const sessionsBefore = await countRows(s, 'sessions');
    const cases: [object, number, string?][] = [
      [{ mobile, code, password: 'abcdefgh', agreed: true }, 40010004],
      [{ mobile, code, password: '12345678', agreed: true }, 40010004],
      [{ mobile, code, password: 'Ab1', agreed: true }, 40000001, 'password'],
      [{ mobile, code, password: `Ab1${'x'.repeat(40)}`, agreed: true }, 40000001, 'password'],
      [{ mobile, code: code === '999999' ? '888888' : '999999', password: PASSWORD, agreed: true }, 40010001],
      [{ mobile, password: PASSWORD, agreed: true }, 40000001, 'code'],
      [{ mobile: 'abc', code, password: PASSWORD, agreed: true }, 40000001, 'mobile'],
      [{ mobile, code, password: 12345678, agreed: true }, 40000001, 'password'],
      // Consent to the 用户协议 and 隐私政策 is required: missing, false or anything but true.
      [{ mobile, code, password: PASSWORD }, 40000001, 'agreed'],
      [{ mobile, code, password: PASSWORD, agreed: false }, 40000001, 'agreed'],
      [{ mobile, code, password: PASSWORD, agreed: 'true' }, 40000001, 'agreed'],
    ];
    for (const [payload, expected, field] of cases) {
      const res = await post(s.app, REGISTER, payload);
      expect(res.statusCode).toBe(Math.floor(expected / 100000));
      expect(json(res).code).toBe(expected);
      if (field) expect(json(res).detail.startsWith(field)).toBe(true);
    }
    expect(await countRows(s, 'users')).toBe(usersBefore);
    // Nobody was logged in by a refused registration.
    expect(await countRows(s, 'sessions')).toBe(sessionsBefore);
    // The code is still good after all that (4 wrong tries would not lock it; only one was wrong).
    expect((await post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: true })).statusCode).toBe(200);
  });

  it('refuses a registration without consent to the 用户协议 and 隐私政策, saying what to do', async () => {
    const mobile = newMobile();
    const code = await requestCode(s.app, mobile, 'register');
    const res = await post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: false });
    expect(res.statusCode).toBe(400);
    expect(json(res)).toEqual({ code: 40000001, message: '请求参数不正确', detail: 'agreed：请阅读并同意用户协议和隐私政策' });
    expect((await post(s.app, LOGIN, { account: mobile, password: PASSWORD })).statusCode).not.toBe(200); // no account was made
  });

  it('lets exactly one of two racing registrations with the same code win', async () => {
    const mobile = newMobile();
    const code = await requestCode(s.app, mobile, 'register');
    const usersBefore = await countRows(s, 'users');
    const results = await Promise.all([
      post(s.app, REGISTER, { mobile, code, password: PASSWORD, agreed: true }),
      post(s.app, REGISTER, { mobile, code, password: 'Other1234', agreed: true }),
    ]);
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes[0]).toBe(200);
    // The loser either finds the code spent (400) or the number taken (409), depending on timing.
    expect([400, 409]).toContain(codes[1]);
    expect(await countRows(s, 'users')).toBe(usersBefore + 1);
  });

  it('never answers 500 to garbage', async () => {
    for (const payload of ['not json', '[]', 'null', '{"mobile":{"$gt":""}}']) {
      const res = await s.app.inject({ method: 'POST', url: REGISTER, payload, headers: { 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(400);
      expect([40000001, 40000002]).toContain(json(res).code);
    }
    const form = await s.app.inject({ method: 'POST', url: REGISTER, payload: 'a=b', headers: { 'content-type': 'text/plain' } });
    expect(form.statusCode).toBe(415);
    expect(json(form).code).toBe(41500001);
  });
});

describe('login, sessions and logout', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('logs in by mobile and password, and refuses a wrong password with 40010005', async () => {
    const u = await registerUser(s);
    const ok = await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD });
    expect(ok.statusCode).toBe(200);
    expect(json(ok).user.mobile).toBe(u.mobile);
    const bad = await post(s.app, LOGIN, { account: u.mobile, password: 'Wrong1234' });
    expect(bad.statusCode).toBe(400);
    expect(json(bad)).toEqual({ code: 40010005, message: '账号或密码错误' });
    const unknown = await post(s.app, LOGIN, { account: newMobile(), password: PASSWORD });
    expect(json(unknown).code).toBe(40010005);
  });

  it('logs in by SMS code, once per code', async () => {
    const u = await registerUser(s);
    const code = await requestCode(s.app, u.mobile, 'login');
    const ok = await post(s.app, LOGIN, { mobile: u.mobile, code });
    expect(ok.statusCode).toBe(200);
    const reused = await post(s.app, LOGIN, { mobile: u.mobile, code });
    expect(json(reused).code).toBe(40010002);
    const register = await post(s.app, LOGIN, { mobile: newMobile(), code: '123456' });
    expect(json(register).code).toBe(40010006);
  });

  it('locks password login after 10 failures in 15 minutes', async () => {
    const u = await registerUser(s);
    for (let i = 0; i < 10; i++) expect(json(await post(s.app, LOGIN, { account: u.mobile, password: 'Wrong1234' })).code).toBe(40010005);
    const locked = await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD });
    expect(locked.statusCode).toBe(429);
    expect(json(locked).code).toBe(42900003);
    s.clock.advance(15 * 60_000 + 1);
    expect((await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });

  it('refuses a flood on a locked account from memory for a second, then asks the database again', async () => {
    const u = await registerUser(s);
    for (let i = 0; i < 10; i++) await post(s.app, LOGIN, { account: u.mobile, password: 'Wrong1234' });
    expect(json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).code).toBe(42900003);
    // The failures are gone (as if their window had passed): attempts within the second are still
    // refused without a transaction each, which is what keeps a guesser's flood from stalling the server.
    await s.ctx.db.delete(loginFailures).where(eq(loginFailures.account, u.mobile));
    const flood = await Promise.all(Array.from({ length: 20 }, () => post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })));
    expect(flood.map((r) => json(r).code)).toEqual(Array.from({ length: 20 }, () => 42900003));
    s.clock.advance(1_001);
    expect((await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });

  it('counts concurrent wrong passwords one after another: ten are checked, the rest are refused', async () => {
    const u = await registerUser(s);
    const answers = await Promise.all(Array.from({ length: 40 }, () => post(s.app, LOGIN, { account: u.mobile, password: 'Wrong1234' })));
    const codes = answers.map((r) => json(r).code);
    expect(codes.filter((c) => c === 40010005)).toHaveLength(10);
    expect(codes.filter((c) => c === 42900003)).toHaveLength(30);
    // The right password is refused too until the window has passed.
    expect(json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).code).toBe(42900003);
    s.clock.advance(15 * 60_000 + 1);
    expect((await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });

  it('throttles one address that fails on many accounts, not the others', async () => {
    const from = (remoteAddress: string, account: string, password: string) =>
      s.app.inject({ method: 'POST', url: LOGIN, payload: { account, password }, remoteAddress });
    const spray = await Promise.all(Array.from({ length: 60 }, () => from('203.0.113.9', newMobile(), 'Wrong1234')));
    const codes = spray.map((r) => json(r).code);
    expect(codes.filter((c) => c === 40010005)).toHaveLength(50);
    expect(codes.filter((c) => c === 42900004)).toHaveLength(10);
    const u = await registerUser(s);
    expect(json(await from('203.0.113.9', u.mobile, PASSWORD))).toMatchObject({ code: 42900004, message: expect.stringContaining('当前网络') });
    expect((await from('198.51.100.7', u.mobile, PASSWORD)).statusCode).toBe(200);
    // A successful login is not a failure: it does not count toward the address's limit.
    for (let i = 0; i < 3; i++) expect((await from('198.51.100.8', u.mobile, PASSWORD)).statusCode).toBe(200);
    s.clock.advance(15 * 60_000 + 1);
    expect((await from('203.0.113.9', u.mobile, PASSWORD)).statusCode).toBe(200);
  });

  it('accepts the token as bearer header, ?token= query and cookie for reads', async () => {
    const u = await registerUser(s);
    expect((await get(s.app, ME, u.token)).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: `${ME}?token=${u.token}` })).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: ME, cookies: { jweToken: u.token } })).statusCode).toBe(200);
    const none = await get(s.app, ME);
    expect(none.statusCode).toBe(401);
    expect(json(none)).toEqual({ code: 40100001, message: '请先登录' });
  });

  it('refuses a state-changing request that carries only the cookie (CSRF) and changes nothing', async () => {
    const u = await registerUser(s);
    const res = await s.app.inject({ method: 'POST', url: LOGOUT, cookies: { jweToken: u.token } });
    expect(res.statusCode).toBe(403);
    expect(json(res).code).toBe(40300001);
    expect((await get(s.app, ME, u.token)).statusCode).toBe(200);
  });

  it('answers 401 codes for malformed, tampered, expired and revoked tokens', async () => {
    const u = await registerUser(s);
    expect(json(await get(s.app, ME, 'garbage')).code).toBe(40100002);
    const tampered = u.token.slice(0, -3) + (u.token.endsWith('AAA') ? 'BBB' : 'AAA');
    expect(json(await get(s.app, ME, tampered)).code).toBe(40100002);

    const logout = await post(s.app, LOGOUT, undefined, u.token);
    expect(logout.statusCode).toBe(200);
    expect(String(logout.headers['set-cookie'])).toMatch(/jweToken=;/);
    const revoked = await get(s.app, ME, u.token);
    expect(revoked.statusCode).toBe(401);
    expect(json(revoked).code).toBe(40100004);

    const fresh = json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).token;
    s.clock.advance(7 * 24 * 3600_000 + 1000);
    const expired = await get(s.app, ME, fresh);
    expect(expired.statusCode).toBe(401);
    expect(json(expired).code).toBe(40100003);
  });
});

describe('password, mobile, e-mail and logo', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { UPLOAD_MAX_BYTES: '4096' } });
  });
  afterAll(async () => s.close());

  it('changes the password with the old one, ending every other session but this one', async () => {
    const u = await registerUser(s);
    const other = json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).token;
    const wrongOld = await put(s.app, '/userapi/api/v2.1/users/me/password', { oldPassword: 'Nope12345', password: 'Newpass123' }, u.token);
    expect(json(wrongOld).code).toBe(40010007);
    const weak = await put(s.app, '/userapi/api/v2.1/users/me/password', { oldPassword: PASSWORD, password: 'onlyletters' }, u.token);
    expect(json(weak).code).toBe(40010004);
    expect((await get(s.app, ME, other)).statusCode).toBe(200);

    const ok = await put(s.app, '/userapi/api/v2.1/users/me/password', { oldPassword: PASSWORD, password: 'Newpass123' }, u.token);
    expect(ok.statusCode).toBe(200);
    expect((await get(s.app, ME, u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, ME, other)).code).toBe(40100004);
    expect(json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).code).toBe(40010005);
    expect((await post(s.app, LOGIN, { account: u.mobile, password: 'Newpass123' })).statusCode).toBe(200);
  });

  it('resets a forgotten password by SMS code and ends every session', async () => {
    const u = await registerUser(s);
    const code = await requestCode(s.app, u.mobile, 'reset');
    const res = await post(s.app, '/userapi/api/v2.1/password/reset', { mobile: u.mobile, code, password: 'Reset1234' });
    expect(res.statusCode).toBe(200);
    expect(json(await get(s.app, ME, u.token)).code).toBe(40100004);
    expect((await post(s.app, LOGIN, { account: u.mobile, password: 'Reset1234' })).statusCode).toBe(200);
  });

  it('moves the account to a new mobile verified by a code sent to that new number', async () => {
    const u = await registerUser(s);
    const taken = await registerUser(s);
    const takenRes = await post(s.app, '/api/v1/users/verify/smscode', { mobile: taken.mobile, scene: 'mobile' }, u.token);
    expect(json(takenRes).code).toBe(40900001);

    const target = newMobile();
    const code = await requestCode(s.app, target, 'mobile', u.token);
    const wrongNumber = await put(s.app, '/userapi/api/v2.1/users/me/mobile', { mobile: newMobile(), code }, u.token);
    expect(json(wrongNumber).code).toBe(40010002);
    const res = await put(s.app, '/userapi/api/v2.1/users/me/mobile', { mobile: target, code }, u.token);
    expect(res.statusCode).toBe(200);
    expect(json(res).mobile).toBe(target);
    expect((await post(s.app, LOGIN, { account: target, password: PASSWORD })).statusCode).toBe(200);
    expect(json(await post(s.app, LOGIN, { account: u.mobile, password: PASSWORD })).code).toBe(40010005);
  });

  it('binds an e-mail verified by an e-mail code, then logs in with it', async () => {
    const u = await registerUser(s);
    const email = `u${Date.now()}@example.com`;
    const sent = await post(s.app, '/api/v1/users/verify/emailcode', { email: email.toUpperCase(), scene: 'email' }, u.token);
    expect(sent.statusCode).toBe(200);
    const code = await latestCode(s.app, email);
    const res = await put(s.app, '/userapi/api/v2.1/users/me/email', { email, code }, u.token);
    expect(res.statusCode).toBe(200);
    expect(json(res).email).toBe(email);
    expect((await post(s.app, LOGIN, { account: email, password: PASSWORD })).statusCode).toBe(200);

    const other = await registerUser(s);
    const again = await post(s.app, '/api/v1/users/verify/emailcode', { email, scene: 'email' }, other.token);
    expect(json(again).code).toBe(40900002);
    expect(json(await put(s.app, '/userapi/api/v2.1/users/me/email', { email: 'not-an-email', code: '123456' }, u.token)).code).toBe(40000001);
  });

  it('stores an uploaded logo through the storage driver and serves it back', async () => {
    const u = await registerUser(s);
    const { payload, headers } = multipart('me.png', PNG, 'image/png');
    const res = await s.app.inject({ method: 'PUT', url: '/api/v1/users/me/logo', payload, headers: { ...headers, authorization: `Bearer ${u.token}` } });
    expect(res.statusCode).toBe(200);
    const logo = json(res).logo as string;
    expect(logo).toMatch(/^\/files\/logos\/.+\.png$/);
    const file = await s.app.inject({ method: 'GET', url: logo });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.rawPayload.equals(PNG)).toBe(true);
    expect(json(await get(s.app, ME, u.token)).logo).toBe(logo);
  });

  it('refuses non-images, oversized files and empty uploads, keeping the old logo', async () => {
    const u = await registerUser(s);
    const auth = { authorization: `Bearer ${u.token}` };
    const text = multipart('evil.png', Buffer.from('<script>alert(1)</script>'), 'image/png');
    const r1 = await s.app.inject({ method: 'PUT', url: '/api/v1/users/me/logo', payload: text.payload, headers: { ...text.headers, ...auth } });
    expect(r1.statusCode).toBe(400);
    expect(json(r1).code).toBe(40010008);

    const big = multipart('big.png', Buffer.concat([PNG, Buffer.alloc(8192)]), 'image/png');
    const r2 = await s.app.inject({ method: 'PUT', url: '/api/v1/users/me/logo', payload: big.payload, headers: { ...big.headers, ...auth } });
    expect(r2.statusCode).toBe(413);
    expect(json(r2).code).toBe(41300002);

    const r3 = await s.app.inject({ method: 'PUT', url: '/api/v1/users/me/logo', payload: {}, headers: auth });
    expect(r3.statusCode).toBe(400);
    expect(json(r3).code).toBe(40010009);

    expect(json(await get(s.app, ME, u.token)).logo).toBe('');
    expect((await get(s.app, '/files/logos%2F..%2F..%2Fetc%2Fpasswd')).statusCode).toBe(404);
  });

  it('needs a login for every /me endpoint', async () => {
    for (const [method, url] of [
      ['GET', ME],
      ['PUT', '/userapi/api/v2.1/users/me/mobile'],
      ['PUT', '/userapi/api/v2.1/users/me/email'],
      ['PUT', '/userapi/api/v2.1/users/me/password'],
      ['PUT', '/api/v1/users/me/logo'],
      ['POST', LOGOUT],
    ] as const) {
      const res = await s.app.inject({ method, url, payload: method === 'GET' ? undefined : {} });
      expect(res.statusCode, url).toBe(401);
      expect(json(res).code).toBe(40100001);
    }
  });
});
