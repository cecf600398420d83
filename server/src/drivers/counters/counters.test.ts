/**
 * The counters' drivers, each as two "replicas" (two driver objects on one store): calls at once
 * from both never pass a limit together, the window slides in one-second steps, a refused call
 * counts nothing, and Retry-After is when the oldest calls leave the window. The memory driver is
 * one process's (its two replicas are one object); postgres runs on the test database (PGlite, or
 * PostgreSQL with TEST_DATABASE_URL); redis on the machine's Redis under a prefix of this run.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/harness.js';
import { redisForTests, TEST_REDIS_URL } from '../../../test/redis.js';
import type { Database } from '../../db/client.js';
import { MemoryCounters, PostgresCounters, type Counters } from './index.js';
import { RedisCounters } from './redis.js';

const MINUTE = 60_000;
/** On a second's boundary, so windows and Retry-After come out round. */
const T0 = Date.parse('2026-11-23T08:00:00Z');

type Pair = { a: Counters; b: Counters };

const redisUp = await redisForTests();

function conformance(name: string, pair: () => Pair) {
  describe(`${name} counters`, () => {
    const key = () => `test:${randomUUID()}`;

    it('admits calls at once from two replicas up to the limit in all, and refuses the rest with when to retry', async () => {
      const { a, b } = pair();
      const k = key();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).take([{ key: k, limit: 3, amount: 1, windowMs: MINUTE }], T0 + i)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(3);
      // All counted in the second T0: the window frees a minute after it.
      results.forEach((r, i) => r.ok || expect(r).toEqual({ ok: false, index: 0, retryAfterMs: MINUTE - i }));
    });

    it('slides the window in one-second steps, with Retry-After when the oldest call leaves it', async () => {
      const { a, b } = pair();
      const k = key();
      const check = { key: k, limit: 2, amount: 1, windowMs: MINUTE };
      expect(await a.take([check], T0)).toEqual({ ok: true });
      expect(await b.take([check], T0 + 30_000)).toEqual({ ok: true });
      expect(await a.take([check], T0 + 30_000)).toEqual({ ok: false, index: 0, retryAfterMs: 30_000 });
      expect(await b.take([check], T0 + 59_999)).toMatchObject({ ok: false, retryAfterMs: 1 });
      expect(await b.take([check], T0 + 60_000)).toEqual({ ok: true });
      expect(await a.take([check], T0 + 60_000)).toEqual({ ok: false, index: 0, retryAfterMs: 30_000 });
    });

    it('counts tokens after the fact on one replica against a check on the other, and a refused call counts nothing', async () => {
      const { a, b } = pair();
      const tokens = key();
      const requests = key();
      const both = [
        { key: tokens, limit: 1000, amount: 0, windowMs: MINUTE },
        { key: requests, limit: 2, amount: 1, windowMs: MINUTE },
      ];
      expect(await b.take(both, T0)).toEqual({ ok: true });
      await a.add(tokens, 600, MINUTE, T0 + 1000);
      expect(await b.take(both, T0 + 2000)).toEqual({ ok: true }); // 600 < 1000: the check only looks
      await a.add(tokens, 400, MINUTE, T0 + 3000);
      // Full on tokens: refused by its first check, and its request is not counted.
      expect(await b.take(both, T0 + 4000)).toEqual({ ok: false, index: 0, retryAfterMs: 57_000 });
      expect(await a.take(both, T0 + 61_000)).toEqual({ ok: true }); // the first 600 left the minute
      expect(await a.take(both, T0 + 61_000)).toEqual({ ok: false, index: 1, retryAfterMs: 1_000 });
    });

    it('refuses an amount above the limit for a whole window', async () => {
      const { a } = pair();
      expect(await a.take([{ key: key(), limit: 5, amount: 6, windowMs: MINUTE }], T0)).toEqual({ ok: false, index: 0, retryAfterMs: MINUTE });
    });
  });
}

conformance('memory', () => {
  const one = new MemoryCounters();
  return { a: one, b: one };
});

describe('postgres', () => {
  let database: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
  });
  afterAll(async () => {
    await database.close();
    await drop();
  });
  conformance('postgres', () => ({ a: new PostgresCounters(database.db), b: new PostgresCounters(database.db) }));

  it('purges the rows of counters that left their window', async () => {
    const c = new PostgresCounters(database.db);
    const k = `test:${randomUUID()}`;
    await c.add(k, 5, MINUTE, T0);
    const rows = async () =>
      (await database.db.execute(sql`select count(*)::int as n from rate_counts where key = ${k}`)) as unknown as { rows: { n: number }[] };
    expect((await rows()).rows[0]!.n).toBe(1);
    // The next call past the window (and a minute after the last purge) removes it in the background.
    await c.take([{ key: `test:${randomUUID()}`, limit: 1, amount: 1, windowMs: MINUTE }], T0 + 2 * MINUTE);
    await expect.poll(async () => (await rows()).rows[0]!.n).toBe(0);
  });
});

describe.skipIf(!redisUp)('redis', () => {
  const prefix = `console-test:${randomUUID()}:`;
  const opened: RedisCounters[] = [];
  beforeAll(async () => {
    opened.push(await RedisCounters.connect(TEST_REDIS_URL, { prefix }), await RedisCounters.connect(TEST_REDIS_URL, { prefix }));
  });
  afterAll(async () => {
    await opened[0]?.flush();
    await Promise.all(opened.map((c) => c.close()));
  });
  conformance('redis', () => ({ a: opened[0]!, b: opened[1]! }));

  it('refuses a REDIS_URL nobody answers at start', async () => {
    await expect(RedisCounters.connect('redis://127.0.0.1:1', { commandTimeoutMs: 500 })).rejects.toThrow();
  });
});
