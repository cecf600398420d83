/**
 * Counters in this process's memory: right where one process owns the database (PGlite). With
 * several processes each would count only its own calls — the postgres and redis drivers count them all.
 */
import { passes, retryAfter, type CounterCheck, type Counters, type TakeResult } from './types.js';

interface Window {
  windowS: number;
  /** [second, amount], ascending by second. */
  buckets: [number, number][];
  /** The last second it was counted in. */
  last: number;
}

export class MemoryCounters implements Counters {
  readonly kind = 'memory';
  private readonly windows = new Map<string, Window>();
  private sweptAt = 0;

  async take(checks: CounterCheck[], now: number): Promise<TakeResult> {
    for (const [index, check] of checks.entries()) {
      const w = this.current(check.key, check.windowMs, now);
      const sum = w ? sumOf(w) : 0;
      if (!passes(sum, check)) return { ok: false, index, retryAfterMs: retryAfter(w?.buckets ?? [], sum, check, now) };
    }
    for (const check of checks) if (check.amount) this.count(check.key, check.amount, check.windowMs, now);
    return { ok: true };
  }

  async add(key: string, amount: number, windowMs: number, now: number): Promise<void> {
    this.count(key, amount, windowMs, now);
  }

  async close(): Promise<void> {}

  private count(key: string, amount: number, windowMs: number, now: number) {
    const second = Math.floor(now / 1000);
    let w = this.current(key, windowMs, now);
    if (!w) {
      w = { windowS: windowMs / 1000, buckets: [], last: second };
      this.windows.set(key, w);
    }
    const newest = w.buckets[w.buckets.length - 1];
    if (newest && newest[0] === second) newest[1] += amount;
    else if (newest && newest[0] > second) {
      // A clock that went back: counted in the newest bucket rather than out of order.
      newest[1] += amount;
    } else w.buckets.push([second, amount]);
    w.last = Math.max(w.last, second);
    this.sweep(now);
  }

  /** The key's window with the buckets that left it dropped. */
  private current(key: string, windowMs: number, now: number): Window | undefined {
    const w = this.windows.get(key);
    if (!w) return undefined;
    const oldest = Math.floor(now / 1000) - windowMs / 1000;
    let drop = 0;
    while (drop < w.buckets.length && w.buckets[drop]![0] <= oldest) drop++;
    if (drop) w.buckets.splice(0, drop);
    return w;
  }

  /** Forgets keys whose window is empty (at most once a minute). */
  private sweep(now: number) {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    const second = Math.floor(now / 1000);
    for (const [key, w] of this.windows) if (second - w.last >= w.windowS) this.windows.delete(key);
  }
}

function sumOf(w: Window): number {
  let sum = 0;
  for (const [, amount] of w.buckets) sum += amount;
  return sum;
}
