/**
 * One replica's scheduler for bench/replicas.ts's takeover figure, in a process of its own so that
 * the bench can kill it (SIGKILL: no lease given back). Runs one job through the real scheduler loop
 * and job leases (jobs/scheduler.ts runJobs, jobs/leases.ts) on DATABASE_URL, every
 * BENCH_LEASE_EVERY_MS with the scheduler's own margin and standby pace, and prints a JSON line
 * `{ holder, at }` each time it runs it; `{ ready }` once started.
 */
import pino from 'pino';
import { openDatabase } from '../src/db/client.js';
import { JobLeases } from '../src/jobs/leases.js';
import { runJobs } from '../src/jobs/scheduler.js';

const everyMs = Number(process.env.BENCH_LEASE_EVERY_MS ?? 1000);
const database = await openDatabase({ url: process.env.DATABASE_URL, poolSize: 2 });
const leases = new JobLeases(database.db);
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
say({ ready: leases.holder });
runJobs({ 'bench.takeover': { everyMs, run: async () => (say({ holder: leases.holder, at: Date.now() }), 0) } }, leases, pino({ level: 'silent' }));
