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

  it('the expiry job takes expired vouchers and gift credit off the balance through the ledger, once', async () => {
    const u = await registerUser(s);
    await s.ctx.db.transaction((tx) =>
      s.ctx.gifts.grant(tx, { userId: u.user.id, amount: yuanToUnits('18'), source: 'recharge_bonus', validDays: 1, key: `g-${u.user.id}`, memo: '测试' }),
    );
    expect(await s.ctx.ledger.balances(u.user.id)).toMatchObject({ voucher: yuanToUnits('50'), gift: yuanToUnits('18') });
    s.clock.advance(2 * 86400_000);
    expect(await s.ctx.gifts.expireDue()).toBeGreaterThanOrEqual(1);
    expect((await s.ctx.ledger.balances(u.user.id)).gift).toBe(0n);
    s.clock.advance(29 * 86400_000);
    expect(await s.ctx.vouchers.expireDue()).toBeGreaterThanOrEqual(1);
    expect((await s.ctx.ledger.balances(u.user.id)).voucher).toBe(0n);
    expect(await s.ctx.vouchers.expireDue()).toBe(0);
    expect(await s.ctx.gifts.expireDue()).toBe(0);
    const statement = await s.ctx.ledger.statement(u.user.id, 'gift', { page: 1, pageSize: 10 });
    expect(statement.items[0]).toMatchObject({ kind: 'gift_expire', amount: -yuanToUnits('18'), balanceAfter: 0n });
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });
});
