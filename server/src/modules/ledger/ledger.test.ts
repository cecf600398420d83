import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { countRows, get, json, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { ledgerAccounts, users } from '../../db/schema.js';
import { checkLedger } from './check.js';
import { PLATFORM_SHARDS, type Leg } from './accounts.js';

const yuan = yuanToUnits;

describe('ledger', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });

  const compensate = (userId: string, amount: bigint): Leg[] => [
    { account: { platform: 'compensation' }, amount: -amount },
    { account: { userId, kind: 'cash' }, amount },
  ];
  const pay = (userId: string, amount: bigint): Leg[] => [
    { account: { userId, kind: 'cash' }, amount: -amount },
    { account: { platform: 'revenue' }, amount },
  ];

  it('starts with every shard of every platform account, so concurrent first transfers never create one (and deadlock)', async () => {
    const res = (await s.ctx.db.execute(
      sql`select kind, count(*)::int as n from ledger_accounts where user_id is null and code ~ '^platform:[a-z]+:s[0-9]{2}$' group by kind order by kind`,
    )) as unknown as { rows: { kind: string; n: number }[] };
    expect(res.rows).toEqual(['clearing', 'compensation', 'hold', 'promotion', 'refund', 'revenue'].map((kind) => ({ kind, n: PLATFORM_SHARDS })));
    // Fifty holds at once, each on a shard of its own key, with one payer: none is refused.
    const { user } = await registerUser(s);
    await s.ctx.ledger.post({ key: `t-${randomUUID()}`, kind: 'compensation', legs: compensate(user.id, yuan('50')) });
    const holds = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        s.ctx.ledger.post({
          key: `t-${randomUUID()}`,
          kind: 'model_hold',
          legs: [
            { account: { userId: user.id, kind: 'cash' }, amount: -yuan('1') },
            { account: { platform: 'hold' }, amount: yuan('1') },
          ],
        }),
      ),
    );
    expect(holds.filter((h) => h.status === 'rejected')).toEqual([]);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(0n);
  });

  it('posts a transfer as entries that sum to zero and moves both balances', async () => {
    const { user } = await registerUser(s);
    const posted = await s.ctx.ledger.post({ key: `t-${randomUUID()}`, kind: 'compensation', memo: '测试补偿', legs: compensate(user.id, yuan('12.3456')) });
    expect(posted.replayed).toBe(false);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(yuan('12.3456'));
    const statement = await s.ctx.ledger.statement(user.id, 'cash', { page: 1, pageSize: 10 });
    expect(statement.total).toBe(1);
    expect(statement.items[0]).toMatchObject({ amount: yuan('12.3456'), balanceAfter: yuan('12.3456'), kind: 'compensation', memo: '测试补偿' });
  });

  it('posts a replayed event once, however often and however concurrently it arrives', async () => {
    const { user } = await registerUser(s);
    const key = `notify-${randomUUID()}`;
    const before = await countRows(s, 'ledger_entries');
    const results = await Promise.all(
      Array.from({ length: 10 }, () => s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('100')) })),
    );
    for (let i = 0; i < 3; i++) results.push(await s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('100')) }));
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.transferId)).size).toBe(1);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(yuan('100'));
    expect((await countRows(s, 'ledger_entries')) - before).toBe(2);
  });

  it('knows a replay posted before the platform accounts were sharded differently as the same event', async () => {
    const { user } = await registerUser(s);
    const key = `k-${randomUUID()}`;
    await s.ctx.ledger.post({
      key,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation', name: 's99' }, amount: -yuan('3') },
        { account: { userId: user.id, kind: 'cash' }, amount: yuan('3') },
      ],
    });
    const replay = await s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('3')) });
    expect(replay.replayed).toBe(true);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(yuan('3'));
  });

  it('refuses a key reused for a different event and changes nothing', async () => {
    const { user } = await registerUser(s);
    const key = `k-${randomUUID()}`;
    await s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('5')) });
    await expect(s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('6')) })).rejects.toMatchObject({ code: 40911001 });
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(yuan('5'));
  });

  it('lets exactly 10 of 50 racing 10-yuan payments through a 100-yuan balance, and none below zero', async () => {
    const { user } = await registerUser(s);
    await s.ctx.ledger.post({ key: `seed-${randomUUID()}`, kind: 'compensation', legs: compensate(user.id, yuan('100')) });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => s.ctx.ledger.post({ key: `pay-${user.id}-${i}`, kind: 'order', legs: pay(user.id, yuan('10')) })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const r of refused) expect(r.reason).toMatchObject({ code: 40011001 });
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(0n);
  });

  it('says how much is missing when the balance does not cover a payment', async () => {
    const { user } = await registerUser(s);
    await s.ctx.ledger.post({ key: `seed-${randomUUID()}`, kind: 'compensation', legs: compensate(user.id, yuan('1.5')) });
    await expect(s.ctx.ledger.post({ key: `p-${randomUUID()}`, kind: 'order', legs: pay(user.id, yuan('2.0001')) })).rejects.toMatchObject({
      code: 40011001,
      detail: '还差 0.51 元',
    });
  });

  it('leaves nothing behind when the surrounding transaction fails after posting, and the key stays free', async () => {
    const { user } = await registerUser(s);
    const key = `crash-${randomUUID()}`;
    await expect(
      s.ctx.db.transaction(async (tx) => {
        await s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('30')) }, tx);
        throw new Error('process died before the order was marked paid');
      }),
    ).rejects.toThrow(/process died/);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(0n);
    const again = await s.ctx.ledger.post({ key, kind: 'compensation', legs: compensate(user.id, yuan('30')) });
    expect(again.replayed).toBe(false);
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(yuan('30'));
  });

  it('refuses legs that do not balance before touching the database', async () => {
    const { user } = await registerUser(s);
    const bad = [
      [{ account: { userId: user.id, kind: 'cash' }, amount: 5n }],
      [
        { account: { userId: user.id, kind: 'cash' }, amount: 5n },
        { account: { platform: 'revenue' }, amount: -4n },
      ],
    ] as Leg[][];
    for (const legs of bad) await expect(s.ctx.ledger.post({ key: randomUUID(), kind: 'compensation', legs })).rejects.toThrow(/ledger:/);
  });

  it('GET user/money: needs a session, shows cash and gift, and a child sees its parent’s balance', async () => {
    expect((await get(s.app, '/billing/api/v1/user/money')).statusCode).toBe(401);
    const parent = await registerUser(s);
    await s.ctx.ledger.post({ key: randomUUID(), kind: 'compensation', legs: compensate(parent.user.id, yuan('100')) });
    await s.ctx.ledger.post({
      key: randomUUID(),
      kind: 'gift_grant',
      legs: [
        { account: { platform: 'promotion' }, amount: -yuan('18') },
        { account: { userId: parent.user.id, kind: 'gift' }, amount: yuan('18') },
      ],
    });
    const money = json(await get(s.app, '/billing/api/v1/user/money', parent.token));
    // The 50-yuan new-user voucher was granted at registration.
    expect(money).toEqual({ cash: String(yuan('100')), gift: String(yuan('18')), voucher: String(yuan('50')), deposit: '0', available: String(yuan('118')) });

    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: parent.user.id }).where(eq(users.id, child.user.id));
    // Only with 财务 (finance) does a child see its parent's balance.
    expect(json(await get(s.app, '/billing/api/v1/user/money', child.token))).toMatchObject({ code: 40330101 });
    await s.ctx.db.update(users).set({ finance: true }).where(eq(users.id, child.user.id));
    expect(json(await get(s.app, '/billing/api/v1/user/money', child.token)).available).toBe(String(yuan('118')));
  });
});

describe('ledger check', () => {
  it('reports a cached balance that no longer matches its entries, and a spendable account below zero', async () => {
    const s = await startTestServer();
    try {
      const { user } = await registerUser(s);
      await s.ctx.ledger.post({
        key: 'k1',
        kind: 'compensation',
        legs: [
          { account: { platform: 'compensation' }, amount: -10n },
          { account: { userId: user.id, kind: 'cash' }, amount: 10n },
        ],
      });
      expect((await checkLedger(s.ctx.db)).ok).toBe(true);
      await s.ctx.db.execute(sql`alter table ledger_accounts drop constraint ledger_accounts_not_negative`);
      await s.ctx.db
        .update(ledgerAccounts)
        .set({ balance: -5n })
        .where(eq(ledgerAccounts.code, `user:${user.id}:cash`));
      const report = await checkLedger(s.ctx.db);
      expect(report.ok).toBe(false);
      expect(report.problems.join('\n')).toMatch(/余额 -5，分录合计 10/);
      expect(report.problems.join('\n')).toMatch(/为负：-5/);
      await s.ctx.db.execute(sql`delete from ledger_transfers where idempotency_key = 'k1'`);
      expect((await checkLedger(s.ctx.db)).problems.join('\n')).toMatch(/分录 \d+ 找不到所属转账/);
    } finally {
      await s.close();
    }
  });
});
