/**
 * A meter tick over many post-paid instances, with two ticks running at once (two server processes):
 * on PostgreSQL each tick charges in parallel lanes on several connections, so the two ticks' lanes
 * all race for the same rows. Each run is charged exactly once, gift credit before cash, arrears where
 * the balance ran out, and the ledger stays consistent. On PGlite the same runs with one lane.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { startTestServer, type TestServer } from '../../../test/harness.js';
import { checkLedger } from '../ledger/check.js';
import { runCost } from './meter.js';

const yuan = yuanToUnits;
const HOUR = 3_600_000;
const HOURLY = yuan('1.98');
const PER_USER = 4;
/** More runs than two lanes take in one batch each (METER_BATCH is 5000). */
const USERS = 2600;

describe('meter tick in parallel lanes', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { BILLING_TICK_SECONDS: '60' } });
  });
  afterAll(async () => s.close());

  const rows = async <T>(q: ReturnType<typeof sql>) => ((await s.ctx.db.execute(q)) as unknown as { rows: T[] }).rows;

  it('two ticks at once over 10,400 runs charge each run once: gift before cash, arrears and a stop where money ran out', { timeout: 300_000 }, async () => {
    const now = s.clock.now().toISOString();
    const tag = randomUUID().slice(0, 8);
    await s.ctx.db.execute(sql`insert into users (id, mobile, created_at, updated_at)
      select gen_random_uuid(), '17' || lpad(g::text, 9, '0'), now(), now() from generate_series(1, ${USERS}) g`);
    const users = (await rows<{ id: string; mobile: string }>(sql`select id, mobile from users where mobile like '17%' order by mobile`)).map((u, k) => ({
      id: u.id,
      // Every tenth account can pay one cent of its four runs; the one after has ¥5 of gift credit.
      kind: k % 10 === 0 ? ('poor' as const) : k % 10 === 1 ? ('gift' as const) : ('rich' as const),
    }));
    expect(users).toHaveLength(USERS);
    await s.ctx.db.transaction((tx) =>
      s.ctx.ledger.postMany(
        tx,
        users.map((u) => ({
          key: `fund-${tag}-${u.id}`,
          kind: 'compensation',
          legs: [
            { account: { platform: 'compensation' }, amount: -(u.kind === 'poor' ? yuan('0.01') : yuan('100')) },
            { account: { userId: u.id, kind: 'cash' }, amount: u.kind === 'poor' ? yuan('0.01') : yuan('100') },
          ],
        })),
      ),
    );
    for (const u of users.filter((x) => x.kind === 'gift')) {
      await s.ctx.db.transaction((tx) =>
        s.ctx.gifts.grant(tx, { userId: u.id, amount: yuan('5'), source: 'test', validDays: 30, key: `gift-${tag}-${u.id}`, memo: '测试赠送' }),
      );
    }
    await s.ctx.db.execute(sql`create temp table lane_ids as
      select gen_random_uuid() as order_id, gen_random_uuid() as instance_id, u.id as user_id, g as n, row_number() over () as k
      from users u, generate_series(1, ${PER_USER}) g where u.mobile like '17%'`);
    await s.ctx.db
      .execute(sql`insert into orders (id, order_uid, user_id, created_by, kind, type, category, status, request, quote, description, amount, pay_method, expires_at, created_at, updated_at)
      select order_id, 'L' || ${tag} || lpad(k::text, 8, '0'), user_id, user_id, 'Personal', 'Usage', 'Gpu', 'Time', '{}'::jsonb, '{}'::jsonb, 'RTX 4090 × 1', 0, 'Balance',
        ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from lane_ids`);
    await s.ctx.db
      .execute(sql`insert into instances (id, user_id, created_by, category, name, status, region_id, gpu_count, cpu, memory_gb, data_disk_gb, free_data_disk_gb, cycle,
        hourly_price, no_card_hourly_price, disk_daily_price, usage_order_id, meter_rate, meter_since, meter_segment, ssh_password_enc, jupyter_token, started_at, created_at, updated_at)
      select instance_id, user_id, user_id, 'Gpu', 'lane-' || n, 'Running', 'bj-b', 1, 16, 60, 50, 50, 'Usage',
        ${HOURLY}, 1000, 0, order_id, ${HOURLY}, ${now}::timestamptz, ${now}::timestamptz, 'x', 'token-' || k, ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from lane_ids`);
    const before = new Map(
      (
        await rows<{ user_id: string; cash: string; gift: string }>(sql`select u.id as user_id,
          coalesce((select balance from ledger_accounts where code = 'user:' || u.id || ':cash'), 0)::text as cash,
          coalesce((select balance from ledger_accounts where code = 'user:' || u.id || ':gift'), 0)::text as gift
        from users u where u.mobile like '17%'`)
      ).map((r) => [r.user_id, { cash: BigInt(r.cash), gift: BigInt(r.gift) }]),
    );

    s.clock.advance(HOUR);
    const handled = await Promise.all([s.ctx.instanceBilling.meterTick(), s.ctx.instanceBilling.meterTick()]);
    // Between them the two ticks took every run once (a run the other tick held was skipped, not charged twice).
    expect(handled[0] + handled[1]).toBe(USERS * PER_USER);
    expect(await s.ctx.instanceBilling.meterTick()).toBe(0);

    // Every run was metered for exactly the hour, once; what it could not pay is its arrears.
    const due = runCost(HOURLY, BigInt(HOUR));
    const runs = await rows<{
      id: string;
      user_id: string;
      status: string;
      meter_ms: string;
      meter_charged: string;
      arrears: string;
      amount: string;
      paid: string;
      transfers: number;
      debited: string;
    }>(sql`
      with usage as (
        select split_part(t.idempotency_key, ':', 2)::uuid as instance_id, count(distinct t.id)::int as transfers, coalesce(-sum(e.amount) filter (where a.user_id is not null), 0) as debited
        from ledger_transfers t join ledger_entries e on e.transfer_id = t.id join ledger_accounts a on a.id = e.account_id
        where t.kind = 'usage' group by 1),
      paid as (select order_id, sum(amount) as paid from order_payments group by 1)
      select i.id, i.user_id, i.status, i.meter_ms::text, i.meter_charged::text, i.arrears::text, o.amount::text,
        coalesce(p.paid, 0)::text as paid, coalesce(u.transfers, 0) as transfers, coalesce(u.debited, 0)::text as debited
      from instances i join orders o on o.id = i.usage_order_id join users x on x.id = i.user_id
        left join usage u on u.instance_id = i.id left join paid p on p.order_id = o.id
      where x.mobile like '17%'`);
    expect(runs).toHaveLength(USERS * PER_USER);
    for (const r of runs) {
      expect(BigInt(r.meter_ms)).toBe(BigInt(HOUR));
      expect(BigInt(r.meter_charged)).toBe(due);
      const paid = due - BigInt(r.arrears);
      expect(BigInt(r.amount)).toBe(paid);
      expect(BigInt(r.paid)).toBe(paid);
      expect(BigInt(r.debited)).toBe(paid);
      expect(r.transfers).toBe(paid > 0n ? 1 : 0);
    }

    // Per account: what left the balance is what its four runs paid; gift credit went first; arrears stop the runs.
    const byUser = new Map<string, typeof runs>();
    for (const r of runs) byUser.set(r.user_id, [...(byUser.get(r.user_id) ?? []), r]);
    const after = await s.ctx.ledger.spendableMany(
      s.ctx.db,
      users.map((u) => u.id),
    );
    for (const u of users) {
      const mine = byUser.get(u.id)!;
      const paid = mine.reduce((n, r) => n + BigInt(r.amount), 0n);
      const b = before.get(u.id)!;
      const a = after.get(u.id)!;
      expect(b.cash + b.gift - a.cash - a.gift).toBe(paid);
      if (u.kind === 'rich') {
        expect(paid).toBe(due * BigInt(PER_USER));
        expect(mine.every((r) => r.arrears === '0' && r.status === 'Running')).toBe(true);
      } else if (u.kind === 'gift') {
        expect(a.gift).toBe(0n);
        expect(b.cash - a.cash).toBe(due * BigInt(PER_USER) - yuan('5'));
      } else {
        expect(a.cash).toBe(0n);
        expect(paid).toBe(yuan('0.01'));
        expect(mine.reduce((n, r) => n + BigInt(r.arrears), 0n)).toBe(due * BigInt(PER_USER) - yuan('0.01'));
        expect(mine.every((r) => r.status === 'Stopping')).toBe(true);
      }
    }

    if (s.ctx.database.kind === 'postgres') {
      // The lanes ran: revenue went to both lanes' shards (even and odd).
      const shards = await rows<{ parity: number }>(sql`select distinct (right(code, 2)::int % 2) as parity from ledger_accounts
        where kind = 'revenue' and balance <> 0`);
      expect(shards.map((r) => r.parity).sort()).toEqual([0, 1]);
    }
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });
});
