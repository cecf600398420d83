/**
 * Billing ticks in two real server processes on one database (DESIGN.md "Running it": several
 * processes may run side by side, a tick still happens exactly once). Each process is
 * test/tick-process.ts: its own Node process, its own connection pool, the real server context on a
 * clock fixed at the same instant. On PostgreSQL both are started, wait until both are built, get
 * the start signal on stdin at the same moment and tick at once; then both tick again at the same
 * instant and charge nothing. PGlite has one writer (one server process), so there the two processes
 * take the same database one after the other: the second, ticking the same instant, finds nothing
 * left to charge (the replay).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { buildApp } from '../../app.js';
import { ManualClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { openDatabase } from '../../db/client.js';
import type { AppContext } from '../../context.js';
import { createScratchDatabase } from '../../../test/scratch-db.js';
import { checkLedger } from '../ledger/check.js';
import { runCost } from './meter.js';

const yuan = yuanToUnits;
const HOUR = 3_600_000;
const HOURLY = yuan('1.98');
const USERS = 150;
const PER_USER = 4;
const RUNS = USERS * PER_USER;
const T0 = new Date('2026-11-23T08:00:00Z');
const TICK_AT = new Date(T0.getTime() + HOUR);
const SERVER_DIR = fileURLToPath(new URL('../../..', import.meta.url));
const TICK_SCRIPT = fileURLToPath(new URL('../../../test/tick-process.ts', import.meta.url));
const ADMIN_URL = process.env.TEST_DATABASE_URL;
/** Two processes at once need a database server; PGlite is opened by one process at a time. */
const CONCURRENT = Boolean(ADMIN_URL);

interface TickResult {
  ok: boolean;
  pid: number;
  handled?: number;
  error?: string;
}

interface TickProcess {
  /** The process has built its server context and waits for the start signal. */
  ready: Promise<void>;
  /** Exit code and the result line it printed. */
  done: Promise<{ code: number | null; result: TickResult | null; stderr: string }>;
  go(): void;
}

const children = new Set<ChildProcess>();

function startTickProcess(env: Record<string, string>): TickProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', TICK_SCRIPT], { cwd: SERVER_DIR, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let result: TickResult | null = null;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    child.once('close', (code) => reject(new Error(`tick process exited (${code}) before it was ready:\n${stderr}`)));
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let m: { ready?: boolean } & Partial<TickResult>;
    try {
      m = JSON.parse(line) as typeof m;
    } catch {
      return; // not ours
    }
    if (m.ready) markReady();
    else if (typeof m.ok === 'boolean') result = m as TickResult;
  });
  const done = new Promise<{ code: number | null; result: TickResult | null; stderr: string }>((resolve) =>
    child.once('close', (code) => {
      children.delete(child);
      resolve({ code, result, stderr });
    }),
  );
  return { ready, done, go: () => child.stdin!.end('go\n') };
}

describe('meter ticks in two server processes', () => {
  let dataDir: string;
  let dbUrl: string | undefined;
  let drop = async () => {};

  /** The test's own server on the shared database (PGlite: only while no tick process has it open). */
  async function withServer<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      WEB_DIST: path.join(dataDir, 'web'),
      BILLING_TICK_SECONDS: '60',
      COMPUTE_DRIVER: 'simulated',
    });
    const database = await openDatabase({ url: dbUrl, dataDir: config.dataDir, poolSize: 5 });
    const { app, ctx } = await buildApp({ config, database, clock: new ManualClock(T0), logger: false });
    try {
      await app.ready();
      return await fn(ctx);
    } finally {
      await app.close();
    }
  }

  const rows = async <T>(ctx: AppContext, q: ReturnType<typeof sql>) => ((await ctx.db.execute(q)) as unknown as { rows: T[] }).rows;

  /** Both processes tick at TICK_AT: at the same moment on PostgreSQL, one after the other on PGlite. */
  async function tickRound(): Promise<TickResult[]> {
    const env = (i: number): Record<string, string> => ({
      TICK_AT: TICK_AT.toISOString(),
      // Side by side each process has its own files; on PGlite the database lives under the shared DATA_DIR.
      DATA_DIR: CONCURRENT ? path.join(dataDir, `process-${i}`) : dataDir,
      WEB_DIST: path.join(dataDir, 'web'),
      BILLING_TICK_SECONDS: '60',
      DATABASE_POOL_SIZE: '5',
      ...(dbUrl ? { DATABASE_URL: dbUrl } : {}),
    });
    const outcomes = [];
    if (CONCURRENT) {
      const procs = [startTickProcess(env(0)), startTickProcess(env(1))];
      await Promise.all(procs.map((p) => p.ready));
      for (const p of procs) p.go();
      outcomes.push(...(await Promise.all(procs.map((p) => p.done))));
    } else {
      for (const i of [0, 1]) {
        const p = startTickProcess(env(i));
        await p.ready;
        p.go();
        outcomes.push(await p.done);
      }
    }
    for (const o of outcomes) {
      expect(o.result, o.stderr).not.toBeNull();
      expect(o.result!.error, o.stderr).toBeUndefined();
      expect(o.result!.ok).toBe(true);
      expect(o.code, o.stderr).toBe(0);
    }
    return outcomes.map((o) => o.result!);
  }

  /** Everything a second charge would change. */
  const snapshot = (ctx: AppContext) =>
    rows<Record<string, string>>(
      ctx,
      sql`select (select count(*) from ledger_transfers)::text as transfers, (select count(*) from ledger_entries)::text as entries,
        (select string_agg(code || '=' || balance, ',' order by code) from ledger_accounts)::text as balances,
        (select count(*) from order_payments)::text as payments, (select count(*) from instance_operations)::text as operations,
        (select string_agg(id || ':' || status || ':' || meter_ms || ':' || meter_charged || ':' || arrears || ':' || meter_since, ',' order by id) from instances)::text as meters`,
    );

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'console-processes-'));
    if (ADMIN_URL) {
      const scratch = await createScratchDatabase(ADMIN_URL, 'console_test');
      dbUrl = scratch.url;
      drop = scratch.drop;
    }
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    CONCURRENT
      ? `two processes ticking at the same moment over ${RUNS} runs charge each run once; ticking again at that instant charges nothing`
      : `two processes ticking one after the other (PGlite: one writer) over ${RUNS} runs: the first charges each run once, the second at the same instant nothing`,
    { timeout: 120_000 },
    async () => {
      const tag = randomUUID().slice(0, 8);
      // Users with balances and four running post-paid runs each; every tenth can pay one cent of them.
      const users = await withServer(async (ctx) => {
        const now = T0.toISOString();
        await ctx.db.execute(sql`insert into users (id, mobile, created_at, updated_at)
          select gen_random_uuid(), '16' || lpad(g::text, 9, '0'), ${now}::timestamptz, ${now}::timestamptz from generate_series(1, ${USERS}) g`);
        const users = (await rows<{ id: string }>(ctx, sql`select id from users where mobile like '16%' order by mobile`)).map((u, k) => ({
          id: u.id,
          poor: k % 10 === 0,
        }));
        await ctx.db.transaction((tx) =>
          ctx.ledger.postMany(
            tx,
            users.map((u) => ({
              key: `fund-${tag}-${u.id}`,
              kind: 'compensation',
              legs: [
                { account: { platform: 'compensation' }, amount: -(u.poor ? yuan('0.01') : yuan('100')) },
                { account: { userId: u.id, kind: 'cash' }, amount: u.poor ? yuan('0.01') : yuan('100') },
              ],
            })),
          ),
        );
        await ctx.db.execute(sql`create temp table run_ids as
          select gen_random_uuid() as order_id, gen_random_uuid() as instance_id, u.id as user_id, g as n, row_number() over () as k
          from users u, generate_series(1, ${PER_USER}) g where u.mobile like '16%'`);
        await ctx.db
          .execute(sql`insert into orders (id, order_uid, user_id, created_by, kind, type, category, status, request, quote, description, amount, pay_method, expires_at, created_at, updated_at)
          select order_id, 'P' || ${tag} || lpad(k::text, 8, '0'), user_id, user_id, 'Personal', 'Usage', 'Gpu', 'Time', '{}'::jsonb, '{}'::jsonb, 'RTX 4090 × 1', 0, 'Balance',
            ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from run_ids`);
        await ctx.db
          .execute(sql`insert into instances (id, user_id, created_by, category, name, status, region_id, gpu_count, cpu, memory_gb, data_disk_gb, free_data_disk_gb, cycle,
            hourly_price, no_card_hourly_price, disk_daily_price, usage_order_id, meter_rate, meter_since, meter_segment, ssh_password_enc, jupyter_token, started_at, created_at, updated_at)
          select instance_id, user_id, user_id, 'Gpu', 'proc-' || n, 'Running', 'bj-b', 1, 16, 60, 50, 50, 'Usage',
            ${HOURLY}, 1000, 0, order_id, ${HOURLY}, ${now}::timestamptz, ${now}::timestamptz, 'x', 'token-' || k, ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz from run_ids`);
        await ctx.db.execute(sql`drop table run_ids`);
        return users;
      });
      expect(users).toHaveLength(USERS);
      const funded = (u: { poor: boolean }) => (u.poor ? yuan('0.01') : yuan('100'));

      // Round 1: both processes tick the hour.
      const first = await tickRound();
      const handled = first.map((r) => r.handled!);
      if (CONCURRENT) {
        // Between them they took every run once (a run the other held was skipped, not charged twice);
        // one of them may have found nothing left.
        expect(handled[0]! + handled[1]!).toBe(RUNS);
      } else {
        expect(handled).toEqual([RUNS, 0]);
      }

      const due = runCost(HOURLY, BigInt(HOUR));
      expect(due).toBe(yuan('1.98')); // one hour at ¥1.98/h: 19,800 units
      /** Every run charged once for the hour, balances and stops to match, the ledger clean; returns the snapshot. */
      const verify = async (ctx: AppContext) => {
        const runs = await rows<{
          id: string;
          user_id: string;
          status: string;
          meter_ms: string;
          meter_charged: string;
          arrears: string;
          amount: string;
          paid: string;
          keys: string[] | null;
          debited: string;
          stops: number;
        }>(
          ctx,
          sql`with usage as (
              select split_part(t.idempotency_key, ':', 2)::uuid as instance_id, array_agg(distinct t.idempotency_key) as keys,
                coalesce(-sum(e.amount) filter (where a.user_id is not null), 0) as debited
              from ledger_transfers t join ledger_entries e on e.transfer_id = t.id join ledger_accounts a on a.id = e.account_id
              where t.kind = 'usage' group by 1),
            paid as (select order_id, sum(amount) as paid from order_payments group by 1),
            stops as (select instance_id, count(*)::int as n from instance_operations where action = 'stop' group by 1)
            select i.id, i.user_id, i.status, i.meter_ms::text, i.meter_charged::text, i.arrears::text, o.amount::text,
              coalesce(p.paid, 0)::text as paid, u.keys, coalesce(u.debited, 0)::text as debited, coalesce(s.n, 0) as stops
            from instances i join orders o on o.id = i.usage_order_id
              left join usage u on u.instance_id = i.id left join paid p on p.order_id = o.id left join stops s on s.instance_id = i.id`,
        );
        expect(runs).toHaveLength(RUNS);
        // Every run was metered for exactly the hour and charged once under its key for that period.
        for (const r of runs) {
          expect(BigInt(r.meter_ms)).toBe(BigInt(HOUR));
          expect(BigInt(r.meter_charged)).toBe(due);
          const paid = due - BigInt(r.arrears);
          expect(BigInt(r.amount)).toBe(paid);
          expect(BigInt(r.paid)).toBe(paid);
          expect(BigInt(r.debited)).toBe(paid);
          expect(r.keys ?? []).toEqual(paid > 0n ? [`usage:${r.id}:${T0.getTime()}:${HOUR}`] : []);
        }
        // Per account: the balance went down by what its runs paid; those that ran out were stopped, once.
        const byUser = new Map<string, typeof runs>();
        for (const r of runs) byUser.set(r.user_id, [...(byUser.get(r.user_id) ?? []), r]);
        const spendable = await ctx.ledger.spendableMany(
          ctx.db,
          users.map((u) => u.id),
        );
        for (const u of users) {
          const mine = byUser.get(u.id)!;
          const paid = mine.reduce((n, r) => n + BigInt(r.amount), 0n);
          const now = spendable.get(u.id)!;
          expect(funded(u) - now.cash - now.gift).toBe(paid);
          if (u.poor) {
            expect(paid).toBe(yuan('0.01'));
            expect(mine.reduce((n, r) => n + BigInt(r.arrears), 0n)).toBe(due * BigInt(PER_USER) - yuan('0.01'));
            expect(mine.map((r) => [r.status, r.stops])).toEqual(mine.map(() => ['Stopping', 1]));
          } else {
            expect(paid).toBe(due * BigInt(PER_USER));
            expect(mine.map((r) => [r.status, r.arrears, r.stops])).toEqual(mine.map(() => ['Running', '0', 0]));
          }
        }
        expect((await checkLedger(ctx.db)).problems).toEqual([]);
        return snapshot(ctx);
      };
      if (!CONCURRENT) {
        // On PGlite the second process of the round was the replay.
        await withServer(verify);
        return;
      }
      const before = await withServer(verify);

      // Round 2: both processes again at the same instant find nothing to charge, and nothing changes.
      const second = await tickRound();
      expect(second.map((r) => r.handled)).toEqual([0, 0]);
      expect(await withServer(verify)).toEqual(before);
    },
  );
});
