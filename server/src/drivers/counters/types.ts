/**
 * Counters over a sliding window shared by every console process (issue 31 §1 "Limits are shared"):
 * what a user could multiply by reaching another replica — an API key's requests and tokens per
 * minute, the online experience's requests — is counted here instead of in one process's memory.
 *
 * A window is counted in one-second buckets: a bucket counts while it is younger than the window, so
 * a one-minute window is a sliding minute in one-second steps. Drivers (index.ts chooses):
 * `memory` (this process only: right where one process owns the database, PGlite), `postgres` (the
 * rate_counts table and its rate_take function: one statement per call), `redis` (REDIS_URL: one
 * hash per counter and a Lua script: one round trip per call).
 */

/** One limit a call must stay within. */
export interface CounterCheck {
  key: string;
  /** The most the window may hold. */
  limit: number;
  /**
   * Counted when every check of the call passes; 0 only looks. A check passes while the window holds
   * less than `limit` and `amount` more stays within it.
   */
  amount: number;
  /** Whole seconds (a multiple of 1000). */
  windowMs: number;
}

export type TakeResult =
  | { ok: true }
  /** `index`: the first check that did not pass; `retryAfterMs`: when it would, as far as the buckets leaving the window tell (no new calls meanwhile). */
  | { ok: false; index: number; retryAfterMs: number };

export interface Counters {
  readonly kind: 'memory' | 'postgres' | 'redis';
  /**
   * All or nothing, atomically across processes: when every check passes each one's amount is
   * counted (at `now`, in ms), else nothing is. Calls at once in any number of processes cannot
   * together pass a limit.
   */
  take(checks: CounterCheck[], now: number): Promise<TakeResult>;
  /** Counts `amount` at `now` whatever the window holds (what was used, known after the fact: tokens). */
  add(key: string, amount: number, windowMs: number, now: number): Promise<void>;
  /** Lets go of the connection (Redis); the database's is the database's. */
  close(): Promise<void>;
}

/** The counting store could not be reached: the caller refuses the call for now (nothing was counted). */
export class CountersUnavailable extends Error {
  constructor(cause: unknown) {
    super(`counters unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** A check passes with `sum` in the window. */
export function passes(sum: number, check: Pick<CounterCheck, 'limit' | 'amount'>): boolean {
  return sum < check.limit && sum + check.amount <= check.limit;
}

/**
 * When a refused check would pass as its oldest buckets leave the window: `buckets` ascending by
 * second, all inside the window; null when even an empty window would refuse it (an amount above the limit).
 */
export function retryAfter(buckets: [second: number, amount: number][], sum: number, check: CounterCheck, now: number): number {
  let left = sum;
  for (const [second, amount] of buckets) {
    left -= amount;
    if (passes(left, check)) return Math.max(1, (second + check.windowMs / 1000) * 1000 - now);
  }
  return check.windowMs;
}
