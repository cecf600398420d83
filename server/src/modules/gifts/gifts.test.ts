import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { giftGrants, recharges, users } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const DAY = 86400_000;

describe('gift credit scheme', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  /** A long-lived token: the clock moves weeks in these tests, past the 7-day session. */
  async function relogin(u: { mobile: string; password: string }) {
    return json(await post(s.app, '/userapi/api/v2.1/login', { account: u.mobile, password: u.password })).token as string;
  }

  it('me/info carries the payer’s cash and gift fields: remain counts only active, unexpired items with money left', async () => {
    const u = await registerUser(s);
    const grant = async (amount: string, validDays: number) =>
      (await s.ctx.db.transaction((tx) =>
        s.ctx.gifts.grant(tx, { userId: u.user.id, amount: yuanToUnits(amount), source: 'test', validDays, key: randomUUID(), memo: '测试' }),
      ))!;
    const active = await grant('5', 10);
    const later = await grant('2', 40);
    const expired = await grant('7', 1);
    const pending = await grant('3', 20);
    const spent = await grant('4', 5);
    const now = s.clock.now().getTime();
    await s.ctx.db
      .update(giftGrants)
      .set({ expireAt: new Date(now - 1000) })
      .where(eq(giftGrants.id, expired));
    await s.ctx.db.update(giftGrants).set({ status: 0 }).where(eq(giftGrants.id, pending));
    await s.ctx.db.update(giftGrants).set({ remain: 0n }).where(eq(giftGrants.id, spent));
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits('20') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits('20') },
      ],
    });

    const me = json(await get(s.app, '/userapi/api/v2.1/users/me/info', u.token));
    expect(me).toMatchObject({
      id: u.user.id,
      cash: String(yuanToUnits('20')),
      remain: String(yuanToUnits('7')), // 5 + 2: not the expired 7, the pending 3 or the spent one
      renewStatus: true,
      obtained: false,
      recharged: '0',
      expireAt: new Date(now + 10 * DAY).toISOString(),
    });
    expect(me.gift.map((g: { id: string }) => g.id)).toEqual([expired, spent, active, pending, later]); // earliest expiry first
    expect(me.gift.find((g: { id: string }) => g.id === pending)).toMatchObject({ status: 0, remain: String(yuanToUnits('3')) });

    // A child account with 财务 sees its parent's money (without it, none); its own identity stays its own.
    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: u.user.id }).where(eq(users.id, child.user.id));
    expect(json(await get(s.app, '/userapi/api/v2.1/users/me/info', child.token))).not.toHaveProperty('cash');
    await s.ctx.db.update(users).set({ finance: true }).where(eq(users.id, child.user.id));
    const childMe = json(await get(s.app, '/userapi/api/v2.1/users/me/info', child.token));
    expect(childMe).toMatchObject({ id: child.user.id, isChild: true, cash: String(yuanToUnits('20')), remain: String(yuanToUnits('7')), renewStatus: true });

    // Without gift credit: zero, no renewal, no expiry.
    const fresh = await registerUser(s);
    expect(json(await get(s.app, '/userapi/api/v2.1/users/me/info', fresh.token))).toMatchObject({
      cash: '0',
      remain: '0',
      renewStatus: false,
      expireAt: null,
      gift: [],
    });
    await s.ctx.db.update(giftGrants).set({ status: 1 }).where(eq(giftGrants.id, pending));
    expect(json(await get(s.app, '/userapi/api/v2.1/users/me/info', u.token))).toMatchObject({ remain: String(yuanToUnits('10')), renewStatus: false });
  });

  it('a new account may claim the welcome credit once; a child account may not', async () => {
    const u = await registerUser(s);
    expect(json(await get(s.app, '/order/api/v2.1/gift/eligibility', u.token))).toEqual({
      eligible: true,
      obtained: false,
      amount: String(yuanToUnits('10')),
      validDays: 30,
      reason: '',
    });
    const after = json(await post(s.app, '/order/api/v2.1/gift/obtain', {}, u.token));
    expect(after).toMatchObject({ obtained: true, remain: String(yuanToUnits('10')), renewStatus: false, recharged: '0' });
    expect(after.items).toEqual([expect.objectContaining({ source: 'welcome', status: 1, remain: String(yuanToUnits('10')) })]);
    expect((await s.ctx.ledger.balances(u.user.id)).gift).toBe(yuanToUnits('10'));

    const again = await post(s.app, '/order/api/v2.1/gift/obtain', {}, u.token);
    expect(again.statusCode).toBe(400);
    expect(json(again)).toMatchObject({ code: 40020007, detail: '已领取过新人赠送金' });
    expect((await s.ctx.ledger.balances(u.user.id)).gift).toBe(yuanToUnits('10'));

    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: u.user.id }).where(eq(users.id, child.user.id));
    expect(json(await get(s.app, '/order/api/v2.1/gift/eligibility', child.token))).toMatchObject({ eligible: false, reason: '子账号不能领取，请使用主账号' });
  });

  it('at the end of its validity the welcome credit waits for renewal; a paying customer renews it', async () => {
    const u = await registerUser(s);
    await post(s.app, '/order/api/v2.1/gift/obtain', {}, u.token);
    s.clock.advance(30 * DAY + 1000);
    await s.ctx.gifts.expireDue();
    let token = await relogin(u);
    const waiting = json(await get(s.app, '/order/api/v2.1/gift', token));
    expect(waiting).toMatchObject({ renewStatus: true, remain: '0', items: [expect.objectContaining({ status: 0, remain: String(yuanToUnits('10')) })] });
    // Not spendable while it waits, but not gone either.
    expect((await s.ctx.ledger.balances(u.user.id)).gift).toBe(yuanToUnits('10'));

    const needsRecharge = await post(s.app, '/order/api/v2.1/gift/renew', {}, token);
    expect(json(needsRecharge).code).toBe(40020008);
    await s.ctx.db.insert(recharges).values({
      id: randomUUID(),
      userId: u.user.id,
      amount: yuanToUnits('100'),
      bonus: 0n,
      method: 'Alipay',
      status: 'Paid',
      expiresAt: s.clock.now(),
      paidAt: s.clock.now(),
      createdAt: s.clock.now(),
    });
    const renewed = json(await post(s.app, '/order/api/v2.1/gift/renew', {}, token));
    expect(renewed).toMatchObject({ renewed: 1, renewStatus: false, remain: String(yuanToUnits('10')), recharged: String(yuanToUnits('100')) });
    expect(Date.parse(renewed.expireAt) - s.clock.now().getTime()).toBe(30 * DAY);
    const effect = await post(s.app, `/order/api/v2.1/gift/effect/${renewed.items[0].id}`, {}, token);
    expect(json(effect).code).toBe(40020009);
    expect(json(await post(s.app, '/order/api/v2.1/gift/effect/not-a-uuid', {}, token)).code).toBe(40000001);

    // Left unrenewed past the grace period, it leaves the balance through the ledger.
    s.clock.advance(30 * DAY + 1000);
    await s.ctx.gifts.expireDue();
    s.clock.advance(7 * DAY + 1000);
    await s.ctx.gifts.expireDue();
    token = await relogin(u);
    expect((await s.ctx.ledger.balances(u.user.id)).gift).toBe(0n);
    expect(json(await get(s.app, '/order/api/v2.1/gift', token))).toMatchObject({ remain: '0', renewStatus: false });
  });
});
