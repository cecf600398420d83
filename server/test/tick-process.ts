/**
 * One server process for billing-processes.test.ts: builds the real server context the way main.ts
 * does (its own database handle: a PostgreSQL pool with DATABASE_URL, else the PGlite under
 * DATA_DIR), on a clock fixed at TICK_AT, and runs no scheduler. It prints `{"ready":true}` when
 * built, waits for a line on stdin (the test writes it to every process at once), runs one meter
 * tick, prints `{"ok":true,"handled":n}` (or `{"ok":false,"error":…}`) and exits.
 *
 *   DATABASE_URL=postgres://… DATA_DIR=/tmp/x TICK_AT=2026-11-23T09:00:00Z node --import tsx test/tick-process.ts
 */
import { createInterface } from 'node:readline';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import type { Clock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { bwrapWorks } from '../src/drivers/compute/local/sandbox.js';
import { openDatabase } from '../src/db/client.js';

const say = (o: object) => new Promise<void>((resolve) => process.stdout.write(`${JSON.stringify(o)}\n`, () => resolve()));

async function main() {
  const at = new Date(process.env.TICK_AT ?? '');
  if (Number.isNaN(at.getTime())) throw new Error('TICK_AT must be an ISO time');
  const clock: Clock = { now: () => new Date(at) };
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' }, bwrapWorks);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: config.DATABASE_POOL_SIZE });
  const { app, ctx } = await buildApp({ config, database, clock, logger: false });
  await app.ready();
  // Open the connections the tick's lanes will use now, so both processes start charging at once.
  if (database.kind === 'postgres') await Promise.all([0, 1, 2, 3].map(() => ctx.db.execute(sql`select pg_sleep(0.05)`)));
  try {
    const lines = createInterface({ input: process.stdin });
    const go = new Promise<void>((resolve, reject) => {
      lines.once('line', () => resolve());
      lines.once('close', () => reject(new Error('stdin closed before the start signal')));
    });
    await say({ ready: true, pid: process.pid, database: database.kind });
    await go;
    lines.close();
    const handled = await ctx.instanceBilling.meterTick();
    await say({ ok: true, pid: process.pid, handled });
  } finally {
    await app.close(); // closes the database too
  }
}

main().then(
  () => process.exit(0),
  async (e: Error) => {
    await say({ ok: false, pid: process.pid, error: e.stack ?? e.message });
    process.exit(1);
  },
);
