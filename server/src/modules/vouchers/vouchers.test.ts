import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { yuanToUnits } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { checkLedger } from '../ledger/check.js';

describe('vouchers', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('gives a new account one 50-yuan voucher valid 30 days, backed by the ledger', async () => {
    const u = await registerUser(s);
    const list = json(await get(s.app, '/order/api/v2.1/vouchers', u.token)).items;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: '新用户专享代金券', amount: String(yuanToUnits('50')), minSpend: '0', status: 'Unused', categories: [] });
    expect(Date.parse(list[0].expiresAt) - Date.parse(list[0].validFrom)).toBe(30 * 86400_000);
    expect(json(await get(s.app, '/order/api/v2.1/cash/coupon', u.token))).toEqual({ count: 1, total: String(yuanToUnits('50')) });
    expect((await s.ctx.ledger.balances(u.user.id)).voucher).toBe(yuanToUnits('50'));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('shows an expired voucher as expired and not usable', async () => {
    const registered = await registerUser(s);
    s.clock.advance(31 * 86400_000);
    // The 7-day session is long gone: log in again.
    const u = json(await post(s.app, '/userapi/api/v2.1/login', { account: registered.mobile, password: registered.password }));
    const all = json(await get(s.app, '/order/api/v2.1/vouchers', u.token)).items;
    expect(all[0].status).toBe('Expired');
    expect(json(await get(s.app, '/order/api/v2.1/vouchers?usable=true', u.token)).items).toEqual([]);
    expect(json(await get(s.app, '/order/api/v2.1/cash/coupon', u.token))).toEqual({ count: 0, total: '0' });
  });

  it('needs a session and refuses a bad filter', async () => {
    expect((await get(s.app, '/order/api/v2.1/vouchers')).statusCode).toBe(401);
    const u = await registerUser(s);
    const bad = await get(s.app, '/order/api/v2.1/vouchers?usable=maybe', u.token);
    expect(bad.statusCode).toBe(400);
    expect(json(bad).code).toBe(40000001);
  });
});
