/**
 * The bus: an event published by one process reaches the subscribers of every process on the
 * database, each once. On PostgreSQL two databases opened apart (two pools, two listeners) stand for
 * two replicas; on PGlite one process opens the database and its events stay in it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openDatabase, type Database } from './client.js';
import { BUS_CHANNEL } from './bus.js';
import { createScratchDatabase } from '../../test/scratch-db.js';
import { testTemplate } from '../../test/pglite-template.js';

const ADMIN_URL = process.env.TEST_DATABASE_URL;

let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null;
let a: Database;
let b: Database;

beforeAll(async () => {
  if (ADMIN_URL) {
    scratch = await createScratchDatabase(ADMIN_URL, 'console_test');
    a = await openDatabase({ url: scratch.url, poolSize: 2 });
    b = await openDatabase({ url: scratch.url, poolSize: 2 });
  } else {
    a = await openDatabase({ template: await testTemplate() });
    b = { ...a, close: async () => {} };
  }
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  await scratch?.drop();
});

/** Collects a channel's payloads on a database's bus. */
function record(db: Database, channel: string) {
  const got: string[] = [];
  const waiters: (() => void)[] = [];
  const off = db.bus.subscribe(channel, (p) => {
    got.push(p);
    for (const w of waiters.splice(0)) w();
  });
  return {
    got,
    off,
    /** Resolves once `n` payloads have come. */
    async count(n: number) {
      while (got.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

/** A moment for anything still on its way (a second delivery would have come by then). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('the bus', () => {
  it("tells the subscribers of every replica, and the publisher's own once", async () => {
    const onA = record(a, 'test.hello');
    const onB = record(b, 'test.hello');
    const other = record(b, 'test.other');
    a.bus.publish('test.hello', 'job-1');
    await Promise.all([onA.count(1), onB.count(1)]);
    b.bus.publish('test.hello', 'job-2');
    await Promise.all([onA.count(2), onB.count(2)]);
    await settle();
    expect(onA.got).toEqual(['job-1', 'job-2']);
    expect(onB.got).toEqual(['job-1', 'job-2']);
    expect(other.got).toEqual([]);

    // Unsubscribed, a handler hears nothing more; the others still do.
    onB.off();
    a.bus.publish('test.hello', 'job-3');
    await onA.count(3);
    await settle();
    expect(onB.got).toEqual(['job-1', 'job-2']);
    for (const r of [onA, other]) r.off();
  });

  it('a handler that throws does not keep the event from the others', async () => {
    const offBad = b.bus.subscribe('test.throw', () => {
      throw new Error('boom');
    });
    const onB = record(b, 'test.throw');
    a.bus.publish('test.throw', 'x');
    await onB.count(1);
    expect(onB.got).toEqual(['x']);
    offBad();
    onB.off();
  });
});

// A listening connection exists only on PostgreSQL (one process opens a PGlite database).
if (ADMIN_URL) {
  describe('the listening connection (PostgreSQL)', () => {
    it('comes back after it is killed, listening again', async () => {
      const admin = new pg.Client({ connectionString: scratch!.url });
      await admin.connect();
      try {
        const listeners = async () =>
          (
            await admin.query<{ pid: number }>(
              `select pid from pg_stat_activity where datname = current_database() and application_name like 'console-bus-%' and query ilike 'listen%'`,
            )
          ).rows.map((r) => r.pid);
        expect(await listeners()).toHaveLength(2);
        const before = await listeners();
        await admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) pid', [before]);

        // Published until heard: events sent while a listener was away are lost to it (its subscribers look again themselves).
        const onB = record(b, 'test.back');
        const onA = record(a, 'test.back');
        for (let i = 0; onB.got.length === 0; i++) {
          a.bus.publish('test.back', String(i));
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const now = await listeners();
        expect(now).toHaveLength(2);
        expect(now.some((pid) => before.includes(pid))).toBe(false);
        // Each publish reached a's own subscriber once, whatever its listener went through.
        await settle();
        expect(onA.got).toEqual(onA.got.map((_, i) => String(i)));
        onA.off();
        onB.off();
      } finally {
        await admin.end();
      }
    });

    it('a notification on its channel from elsewhere that is not an event is ignored', async () => {
      const onB = record(b, 'test.raw');
      const raw = new pg.Client({ connectionString: scratch!.url });
      await raw.connect();
      try {
        await raw.query('select pg_notify($1, $2)', [BUS_CHANNEL, 'not json']);
        await raw.query('select pg_notify($1, $2)', [BUS_CHANNEL, JSON.stringify({ o: 'elsewhere', c: 'test.raw', p: 'ok' })]);
      } finally {
        await raw.end();
      }
      await onB.count(1);
      expect(onB.got).toEqual(['ok']);
      onB.off();
    });
  });
}
