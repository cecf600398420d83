/**
 * The cost of one billing tick: 1,000, 10,000 and 100,000 post-paid instances running on
 * PostgreSQL, each charged for the last minute, five instances per account. Each size gets a scratch
 * database; the tick's time is what is measured, and ledger invariants are checked after the
 * smallest run. Target: 100,000 in under 10 s on this machine, growing linearly.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { sql } from 'drizzle-orm';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';
import { openDatabase } from '../src/db/client.js';
import { checkLedger } from '../src/modules/ledger/check.js';
import { createScratchDatabase } from '../test/scratch-db.js';

const PER_ACCOUNT = 5;
const HOURLY = 19_800n; // ¥1.98/h
const TARGET_SECONDS = 10;

async function tickOver(adminUrl: string, instances: number, check: boolean): Promise<number> {
  const db = await createScratchDatabase(adminUrl, 'console_bill');
  const database = await openDatabase({ url: db.url, poolSize: 4 });
  try {
    const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
    const config = loadConfig({ DATA_DIR: '/tmp/console-bench', DATABASE_URL: db.url, LOG_LEVEL: 'silent', COMPUTE_DRIVER: 'simulated' });
    const ctx = await createContext({ config, database, clock, log: pino({ level: 'silent' }) });
    const accounts = Math.ceil(instances / PER_ACCOUNT);
    const run = (q: ReturnType<typeof sql>) => database.db.execute(q);
    const now = clock.now().toISOString();

    // Accounts, funded through the ledger; one Time order and one running instance per machine.
    await run(sql`insert into users (id, mobile, created_at, updated_at)
      select gen_random_uuid(), '13' || lpad(g::text, 9, '0'), now(), now() from generate_series(1, ${accounts}) g`);
    const userIds = ((await run(sql`select id from users order by mobile`)) as unknown as { rows: { id: string }[] }).rows.map((r) => r.id);
    for (let i = 0; i < userIds.length; i += 5000) {
      await database.db.transaction((tx) =>
        ctx.ledger.postMany(
          tx,
          userIds.slice(i, i + 5000).map((id) => ({
            key: `fund-${id}`,
            kind: 'compensation',
            legs: [
              { account: { platform: 'compensation' }, amount: -10_000_000n },
              { account: { userId: id, kind: 'cash' }, amount: 10_000_000n },
            ],
          })),
        ),
      );
    }
    await run(sql`create temp table bench_ids as
      select gen_random_uuid() as order_id, gen_random_uuid() as instance_id, u.id as user_id, g as n, row_number() over () as k
      from (select id, row_number() over (order by id) as k from users) u, generate_series(1, ${PER_ACCOUNT}) g
      limit ${instances}`);
    await run(sql`insert into orders (id, order_uid, user_id, created_by, kind, type, category, status, request, quote, description, amount, pay_method, expires_at, created_at, updated_at)
      select order_id, 'O' || to_char(now(), 'YYYYMMDDHH24MISS') || lpad(to_hex(k), 8, '0'), user_id, user_id, 'Personal', 'Usage', 'Gpu', 'Time', '{}'::jsonb, '{}'::jsonb, 'RTX 4090 × 1', 0, 'Balance', ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from bench_ids`);
    await run(sql`insert into instances (id, user_id, created_by, category, name, status, region_id, gpu_count, cpu, memory_gb, data_disk_gb, free_data_disk_gb, cycle,
        hourly_price, no_card_hourly_price, disk_daily_price, usage_order_id, meter_rate, meter_since, meter_segment, ssh_password_enc, jupyter_token, started_at, created_at, updated_at)
      select instance_id, user_id, user_id, 'Gpu', 'bench-' || n, 'Running', 'bj-b', 1, 16, 60, 50, 50, 'Usage',
        ${HOURLY}, 1000, 0, order_id, ${HOURLY}, ${now}::timestamptz, ${now}::timestamptz, 'x', ${randomUUID()}, ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from bench_ids`);
    await run(sql`analyze`);

    clock.advance(60_000);
    const started = performance.now();
    const handled = await ctx.instanceBilling.meterTick();
    const seconds = (performance.now() - started) / 1000;
    if (handled !== instances) throw new Error(`the tick charged ${handled} of ${instances} instances`);
    if (check) {
      const report = await checkLedger(database.db);
      if (!report.ok) throw new Error(`ledger invariants broken after the tick: ${report.problems.join('; ')}`);
    }
    return seconds;
  } finally {
    await database.close();
    await db.drop();
  }
}

export async function benchBilling(adminUrl: string): Promise<boolean> {
  const sizes = (process.env.BENCH_BILLING_SIZES ?? '1000,10000,100000').split(',').map(Number);
  console.log(`\nbilling tick on PostgreSQL (${PER_ACCOUNT} instances per account, one minute charged each)`);
  let ok = true;
  let perThousand: number | null = null;
  for (const n of sizes) {
    const s = await tickOver(adminUrl, n, n === sizes[0]);
    perThousand ??= (s / n) * 1000;
    const linear = ((s / n) * 1000) / perThousand;
    const note = n === 100_000 ? (s < TARGET_SECONDS ? `  (target ${TARGET_SECONDS} s met)` : `  (target ${TARGET_SECONDS} s MISSED)`) : '';
    if (n === 100_000 && s >= TARGET_SECONDS) ok = false;
    console.log(
      `${String(n).padStart(7)} instances  ${s.toFixed(2).padStart(7)} s  ${(n / s).toFixed(0).padStart(7)} instances/s  cost per instance ×${linear.toFixed(2)} of the smallest run${note}`,
    );
  }
  return ok;
}
