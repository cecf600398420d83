/**
 * Counters in PostgreSQL, shared by every console process on the database: one row per counter and
 * second (rate_counts), read and written by the rate_take function in one statement per call. It
 * takes each counter's transaction lock (pg_advisory_xact_lock, in key order), drops the buckets
 * that left the window, sums the rest and counts the call only when every check passes, so calls at
 * once in any number of processes cannot together pass a limit. An idle counter's rows are purged
 * once they expire (at most once a minute per process, in the background). The table is unlogged
 * (migration 0047): a call waits for no WAL flush, and the counts start empty after a database crash
 * or failover.
 */
import { sql, type Placeholder } from 'drizzle-orm';
import { pgArray } from '../../db/arrays.js';
import type { Db } from '../../db/client.js';
import { CountersUnavailable, type CounterCheck, type Counters, type TakeResult } from './types.js';

const PURGE_EVERY_MS = 60_000;

type TakeArgs = { keys: string; limits: string; amounts: string; windows: string; now: number };

export class PostgresCounters implements Counters {
  readonly kind = 'postgres';
  private purgedAt = 0;
  private prepared?: ReturnType<typeof prepareTake>;

  constructor(
    private readonly db: Db,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  async take(checks: CounterCheck[], now: number): Promise<TakeResult> {
    if (!checks.length) return { ok: true };
    const args: TakeArgs = {
      keys: pgArray(checks.map((c) => c.key)),
      limits: pgArray(checks.map((c) => Math.floor(c.limit))),
      amounts: pgArray(checks.map((c) => Math.floor(c.amount))),
      windows: pgArray(checks.map((c) => seconds(c.windowMs))),
      now: Math.floor(now),
    };
    let row: { refused: number; retryMs: number } | undefined;
    try {
      // Prepared once per connection: parsed and planned once.
      [row] = await (this.prepared ??= prepareTake(this.db)).execute(args);
    } catch (e) {
      throw new CountersUnavailable(e);
    }
    this.purge(now);
    if (!row || Number(row.refused) === 0) return { ok: true };
    return { ok: false, index: Number(row.refused) - 1, retryAfterMs: Number(row.retryMs) };
  }

  async add(key: string, amount: number, windowMs: number, now: number): Promise<void> {
    const second = Math.floor(now / 1000);
    try {
      await this.db.execute(sql`insert into rate_counts as c (key, second, amount, expires)
        values (${key}, ${second}, ${Math.floor(amount)}, ${second + seconds(windowMs)})
        on conflict (key, second) do update set amount = c.amount + excluded.amount, expires = greatest(c.expires, excluded.expires)`);
    } catch (e) {
      throw new CountersUnavailable(e);
    }
    this.purge(now);
  }

  async close(): Promise<void> {}

  /** Removes the rows of counters that left their window (idle ones: a counted key drops its own at each take). */
  private purge(now: number) {
    if (now - this.purgedAt < PURGE_EVERY_MS) return;
    this.purgedAt = now;
    const second = Math.floor(now / 1000);
    this.db.execute(sql`delete from rate_counts where expires <= ${second}`).then(() => {}, this.onError);
  }
}

function seconds(windowMs: number): number {
  return Math.max(1, Math.round(windowMs / 1000));
}

const TAKE_COLUMNS = { refused: sql<number>`refused`, retryMs: sql<number>`retry_ms` };

function prepareTake(db: Db) {
  const p = (name: keyof TakeArgs): Placeholder => sql.placeholder(name);
  return db
    .select(TAKE_COLUMNS)
    .from(sql`rate_take(${p('keys')}::text[], ${p('limits')}::bigint[], ${p('amounts')}::bigint[], ${p('windows')}::bigint[], ${p('now')}::bigint)`)
    .prepare('rate_take');
}
