import type { FastifyBaseLogger } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../test/harness.js';
import type { Database } from '../db/client.js';
import { jobLeases } from '../db/schema.js';
import { JobLeases, leaseHolderId } from './leases.js';
import { jobsOf, runJobs, type Job, type SchedulerDeps, type StopScheduler } from './scheduler.js';

/** A logger that keeps what it was told. */
function recordingLog() {
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => void lines.push({ level, obj, msg });
  const log = {
    level: 'info',
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    debug: at('debug'),
    trace: at('trace'),
    fatal: at('fatal'),
    silent: () => {},
    child: () => log,
  } as unknown as FastifyBaseLogger;
  return { log, lines };
}

/** Waits until `done` holds, checking every 20 ms, for at most `withinMs` (a generous bound: the machine may be busy). */
async function eventually(done: () => boolean | Promise<boolean>, withinMs = 10_000): Promise<void> {
  const until = Date.now() + withinMs;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('job leases — each job once across replicas', () => {
  let database: Database;
  let drop: () => Promise<void>;
  const running: StopScheduler[] = [];

  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((stop) => stop()));
    await database.db.delete(jobLeases);
  });
  afterAll(async () => {
    await database.close();
    await drop();
  });

  /** `n` replicas of the scheduler on the one database, each with its own holder id, running a job that records who ran it. */
  function replicas(n: number, job: Omit<Job, 'run'>, pace: { leaseMarginMs: number; standbyPaceMs: number }) {
    const runs: string[] = [];
    const leases = Array.from({ length: n }, (_, i) => new JobLeases(database.db, `replica-${i}`));
    const stops = leases.map((l) => {
      const stop = runJobs({ 'test.count': { ...job, run: async () => (runs.push(l.holder), 0) } }, l, recordingLog().log, pace);
      running.push(stop);
      return stop;
    });
    return { runs, leases, stops };
  }

  it('takes, renews and refuses a lease by one statement, on the database clock', async () => {
    const a = new JobLeases(database.db, 'a');
    const b = new JobLeases(database.db, 'b');
    expect(await a.acquire('j', 60_000)).toBe(true);
    expect(await b.acquire('j', 60_000)).toBe(false);
    expect(await a.acquire('j', 60_000)).toBe(true);
    expect((await a.holders()).get('j')?.holder).toBe('a');
    // Another job's lease is its own.
    expect(await b.acquire('k', 60_000)).toBe(true);
    // An expired lease goes to whoever asks next.
    expect(await a.acquire('short', 1)).toBe(true);
    await eventually(() => b.acquire('short', 60_000));
    expect(await a.acquire('short', 60_000)).toBe(false);
    // Given back: taken at once, though it had a minute left.
    expect(await a.release()).toBe(1);
    expect(await b.acquire('j', 60_000)).toBe(true);
    expect([...(await a.holders()).values()].map((h) => h.holder)).toEqual(['b', 'b', 'b']);
  });

  it('names each process apart', () => {
    expect(leaseHolderId()).not.toBe(leaseHolderId());
    expect(leaseHolderId()).toContain(`:${process.pid}:`);
  });

  it('runs a job about once per interval in total with three replicas, not three times', async () => {
    const everyMs = 100;
    const started = Date.now();
    const { runs, stops } = replicas(3, { everyMs }, { leaseMarginMs: 50, standbyPaceMs: 25 });
    await sleep(1500);
    await Promise.all(stops.map((stop) => stop()));
    const intervals = (Date.now() - started) / everyMs;
    expect(runs.length).toBeGreaterThanOrEqual(3);
    // Without leases each replica runs it every interval: about 3 × intervals.
    expect(runs.length).toBeLessThan(1.5 * intervals + 3);
  });

  it('runs a per-process job in every replica', async () => {
    const { runs, stops } = replicas(3, { everyMs: 60_000, perProcess: true }, { leaseMarginMs: 50, standbyPaceMs: 25 });
    await eventually(() => runs.length === 3);
    await Promise.all(stops.map((stop) => stop()));
    expect(new Set(runs).size).toBe(3);
    expect(await database.db.select().from(jobLeases)).toEqual([]);
  });

  it('hands the job of a holder that died to another replica once its lease expired', async () => {
    const { runs, leases, stops } = replicas(3, { everyMs: 100 }, { leaseMarginMs: 50, standbyPaceMs: 25 });
    await eventually(() => runs.length >= 2);
    const holder = (await leases[0]!.holders()).get('test.count')!.holder;
    const dead = leases.findIndex((l) => l.holder === holder);
    // A crash: its timers stop, its lease stays in the table.
    await stops[dead]!({ release: false });
    const before = runs.length;
    await eventually(() => runs.slice(before).some((h) => h !== holder));
    expect(runs.slice(before).every((h) => h !== holder)).toBe(true);
    expect((await leases[0]!.holders()).get('test.count')?.holder).not.toBe(holder);
  });

  it('lets a process alone on its database (PGlite) take at once the jobs a crashed run of it left leased', async () => {
    const crashed = replicas(1, { everyMs: 3600_000 }, { leaseMarginMs: 1800_000, standbyPaceMs: 25 });
    await eventually(() => crashed.runs.length === 1);
    await crashed.stops[0]!({ release: false });
    const restarted = new JobLeases(database.db, 'restarted');
    expect(await restarted.acquire('test.count', 1000)).toBe(false);
    expect(await restarted.clearAll()).toBe(1);
    expect(await restarted.acquire('test.count', 1000)).toBe(true);
  });

  it('gives the leases back on a graceful stop: another replica takes the job at its next try, not after the expiry', async () => {
    // An hourly job: its lease would last an hour and a half.
    const { runs, leases, stops } = replicas(2, { everyMs: 3600_000 }, { leaseMarginMs: 1800_000, standbyPaceMs: 25 });
    await eventually(() => runs.length === 1);
    const holder = runs[0]!;
    const stopping = leases.findIndex((l) => l.holder === holder);
    await sleep(100); // the other replica tried and was refused meanwhile
    expect(runs).toEqual([holder]);
    await stops[stopping]!();
    await eventually(() => runs.length === 2);
    expect(runs[1]).not.toBe(holder);
    expect((await leases[0]!.holders()).get('test.count')?.holder).toBe(runs[1]);
  });

  it('leases every job of the shared data; this host’s images, this process’s ComfyUI and the local driver’s samples run in every process', () => {
    const deps = (driver: string) =>
      ({
        intervals: { reconcileMs: 1000, billingTickSeconds: 60, imageBackendTickMs: 1000 },
        drivers: { compute: { name: driver } },
      }) as unknown as SchedulerDeps;
    const perProcess = (driver: string) =>
      Object.entries(jobsOf(deps(driver)))
        .filter(([, j]) => j.perProcess)
        .map(([name]) => name)
        .sort();
    expect(perProcess('simulated')).toEqual(['apps.comfyui-sweep', 'images.gc']);
    expect(perProcess('agent')).toEqual(['apps.comfyui-sweep', 'images.gc']);
    expect(perProcess('local')).toEqual(['apps.comfyui-sweep', 'images.gc', 'monitoring.sample']);
  });
});
