/**
 * Concurrent reads of the same kind (the session behind a token, a payer's balances) coalesced into
 * one statement per batch, without ever answering a caller from a statement that started before it
 * asked.
 *
 * Why that rule makes coalescing as exact as one query per request: a key joins only the *next*
 * batch, never one already sent, so the statement that answers it starts after the caller asked.
 * PostgreSQL (READ COMMITTED) and PGlite take a statement's snapshot when it starts, so the answer
 * includes every transaction that had committed when the caller asked — in particular any write
 * (a logout, a disabled account, a payment) whose request had already returned, whatever process
 * made it. Nothing is kept between batches: there is no cache to invalidate.
 *
 * Under load the next batch fills while the current one runs, so 50 concurrent requests cost a
 * couple of statements instead of 50; alone, a request waits for at most the batch in flight.
 */
import { setImmediate } from 'node:timers/promises';

interface Caller<V> {
  resolve(value: V | undefined): void;
  reject(error: unknown): void;
}

export class FreshReads<K, V> {
  private waiting = new Map<K, Caller<V>[]>();
  private running = false;

  /**
   * @param loadMany reads the given keys in one statement (or a few); keys it does not return are answered undefined.
   * @param maxBatch the most keys one statement carries; more wait for the following batch.
   */
  constructor(
    private loadMany: (keys: K[]) => Promise<Map<K, V>>,
    private maxBatch = 500,
  ) {}

  /** The value of `key` as of a statement that started after this call. */
  load(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const callers = this.waiting.get(key);
      if (callers) callers.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      if (!this.running) void this.drain();
    });
  }

  private async drain() {
    this.running = true;
    try {
      while (this.waiting.size) {
        // Let the requests already received reach us first: PGlite runs a statement without
        // yielding, so without this turn each batch would hold just the request that started it.
        await setImmediate();
        await this.runBatch(this.takeBatch());
      }
    } finally {
      this.running = false;
    }
  }

  private takeBatch() {
    const batch = new Map<K, Caller<V>[]>();
    for (const [key, callers] of this.waiting) {
      if (batch.size === this.maxBatch) break;
      batch.set(key, callers);
    }
    for (const key of batch.keys()) this.waiting.delete(key);
    return batch;
  }

  private async runBatch(batch: Map<K, Caller<V>[]>) {
    try {
      const found = await this.loadMany([...batch.keys()]);
      for (const [key, callers] of batch) for (const c of callers) c.resolve(found.get(key));
    } catch (e) {
      for (const callers of batch.values()) for (const c of callers) c.reject(e);
    }
  }
}
