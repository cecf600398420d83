/**
 * The server under benchmark, in its own process so that it does not share a core with the load
 * generator: the real app plus a bare route as the baseline. Prints its address on stdout.
 */
import { buildApp } from '../src/app.js';
import { jobsOf, runJobs, startScheduler, type Job } from '../src/jobs/scheduler.js';
import { JobLeases } from '../src/jobs/leases.js';
import { localBus } from '../src/db/bus.js';
import { schedulerDeps } from '../src/context.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { bwrapWorks } from '../src/drivers/compute/local/sandbox.js';
import { openDatabase } from '../src/db/client.js';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { DEMO_ACCOUNT, seedDemo } from '../src/db/seed.js';
import { users } from '../src/db/schema.js';
import { benchLoginMobile } from './login-accounts.js';

const freshDir = mkdtempSync(path.join(tmpdir(), 'console-bench-'));
process.on('exit', () => rmSync(freshDir, { recursive: true, force: true }));
// The simulated fleet unless a case asks for real sandboxes (local-start.ts).
const config = loadConfig(
  {
    COMPUTE_DRIVER: 'simulated',
    ...process.env,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    // A fresh database each run: what an earlier run left (login failures, sessions) would change the figures.
    DATA_DIR: process.env.BENCH_DATA_DIR ?? freshDir,
  },
  bwrapWorks,
);
const opened = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: config.DATABASE_POOL_SIZE });
// bench/replicas.ts's baseline: the same server without what replicas need — events stay in the
// process (no LISTEN connection, no pg_notify) and every job runs without a lease.
const machineryOff = process.env.BENCH_REPLICA_MACHINERY === 'off';
if (machineryOff) await opened.bus.close();
const database = machineryOff ? { ...opened, bus: localBus() } : opened;
const { app, ctx } = await buildApp({ config, database, clock: systemClock, logger: process.env.BENCH_LOG_LEVEL ? true : false });
app.get('/__bench/bare', async () => ({ ok: true }));
// The CPU this process has used (µs): bench/replicas.ts counts requests per CPU-second, which the machine's other load moves less than requests per second.
app.get('/__bench/cpu', async () => process.cpuUsage());
await seedDemo(database.db, systemClock);
if (process.env.BENCH_FUND_DEMO_YUAN) {
  // The gateway case spends from the demo account: a compensation credit, as an operator would give.
  const [demo] = await database.db.select({ id: users.id }).from(users).where(eq(users.mobile, DEMO_ACCOUNT.mobile));
  const amount = yuanToUnits(process.env.BENCH_FUND_DEMO_YUAN);
  await ctx.ledger.post({
    key: `bench-fund-${randomUUID()}`,
    kind: 'compensation',
    legs: [
      { account: { platform: 'compensation' }, amount: -amount },
      { account: { userId: demo!.id, kind: 'cash' }, amount },
    ],
  });
}
const loginAccounts = Number(process.env.BENCH_LOGIN_ACCOUNTS ?? 0);
if (loginAccounts > 0) {
  // The login storm's accounts: distinct people with the demo password (its hash reused: one scrypt, not fifty, at start).
  const [demo] = await database.db.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.mobile, DEMO_ACCOUNT.mobile));
  const now = systemClock.now();
  await database.db
    .insert(users)
    .values(
      Array.from({ length: loginAccounts }, (_, i) => ({
        id: randomUUID(),
        mobile: benchLoginMobile(i),
        passwordHash: demo!.passwordHash,
        nickname: `压测用户${i}`,
        firstVisit: false,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing();
}
if (process.env.BENCH_JOBS) {
  // The background jobs of `npm start` (the reconciler that marks a machine 运行中): the local-start case needs them.
  const unleased = (jobs: Record<string, Job>) => Object.fromEntries(Object.entries(jobs).map(([name, job]) => [name, { ...job, perProcess: true }]));
  const stopJobs = machineryOff
    ? runJobs(unleased(jobsOf(schedulerDeps(ctx))), new JobLeases(database.db), app.log)
    : startScheduler(schedulerDeps(ctx), app.log);
  app.addHook('onClose', async () => stopJobs());
}
const address = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(JSON.stringify({ address, database: database.kind }));
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
process.on('SIGINT', () => void app.close().then(() => process.exit(0)));
