/**
 * How a job on the image backend is moved forward, shared by LoRA training and image generation:
 * each process runs the jobs it started (`runner`), polls the backend for what they did, and applies
 * that under the job's row lock; a job whose runner went silent is taken over and started again.
 *
 * A module of its own, beside training and diffusion rather than inside either: both run their work
 * on the image backend (drivers/image-backend: the trainer, the painter, ComfyUI) and neither owns
 * how that work is scheduled. It has no tables: the rows it moves are its callers', reached through
 * the steps they pass (`AdvanceSteps`). Not a driver either: it holds transactions and row locks.
 *
 * The poll happens before the transaction (the backend may take a while to answer: the embedded
 * one paints pictures), so a transaction never waits on it. Reported events that are not applied
 * (the job moved meanwhile, the transaction failed) are not lost silently: the run is dropped and
 * starts again from what the database has.
 */
import { eq } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';

/** A runner that has not reported for this long (or three of its ticks, if longer) has stopped: its jobs are taken over. */
export const STALE_RUNNER_MS = 15_000;

export interface RunnerRow {
  runner: string | null;
  status: string;
  heartbeatAt: Date | null;
}

export interface AdvanceSteps<Row extends RunnerRow, E> {
  db: Db;
  clock: Clock;
  runnerId: string;
  staleMs: number;
  peek(): Promise<Pick<Row, 'runner' | 'status'> | undefined>;
  /** The row locked: waiting for the lock when `wait`, else passing a row another process holds. */
  lock(tx: Tx, wait: boolean): Promise<Row | undefined>;
  isActive(status: string): boolean;
  poll(): Promise<E[] | null>;
  /** Forgets the run on the backend (it starts again on the next tick). */
  drop(): Promise<void>;
  start(tx: Tx, row: Row, now: Date): Promise<boolean>;
  takeOver(tx: Tx, row: Row, now: Date, why: 'silent' | 'lost'): Promise<boolean>;
  apply(tx: Tx, row: Row, events: E[], now: Date): Promise<boolean>;
}

export function staleAfter(tickMs = 0): number {
  return Math.max(STALE_RUNNER_MS, 3 * tickMs);
}

/** One job: started when queued, taken over when its runner went silent, or polled and its events applied. */
export async function advanceRun<Row extends RunnerRow, E>(s: AdvanceSteps<Row, E>): Promise<boolean> {
  const peek = await s.peek();
  const mine = peek?.runner === s.runnerId && peek.status !== 'queued';
  const events = mine ? await s.poll() : undefined;
  let applied = false;
  try {
    return await s.db.transaction(async (tx) => {
      const row = await s.lock(tx, mine);
      if (!row || !s.isActive(row.status)) return false;
      const now = s.clock.now();
      if (row.status === 'queued') return s.start(tx, row, now);
      if (row.runner !== s.runnerId || events === undefined) {
        const silent = !row.heartbeatAt || now.getTime() - row.heartbeatAt.getTime() >= s.staleMs;
        return silent ? s.takeOver(tx, row, now, 'silent') : false;
      }
      if (events === null) return s.takeOver(tx, row, now, 'lost');
      const changed = await s.apply(tx, row, events, now);
      applied = true;
      return changed;
    });
  } catch (e) {
    applied = false; // rolled back: nothing of it was kept
    throw e;
  } finally {
    if (events && !applied) await s.drop();
  }
}

/** Advances each job in turn; one that keeps failing does not hold up the others (it is retried next tick, and its error reported). */
export async function advanceEach(ids: string[], advance: (id: string) => Promise<boolean>): Promise<number> {
  let changed = 0;
  let failure: unknown = null;
  for (const id of ids) {
    try {
      if (await advance(id)) changed++;
    } catch (e) {
      failure ??= e;
    }
  }
  if (failure) throw failure;
  return changed;
}

/** A job table with the columns the runner reads. */
export type RunnerTable = PgTable & { id: AnyPgColumn; runner: AnyPgColumn; status: AnyPgColumn };

/** `peek` and `lock` of a job table's row (`Row`: the table's row type): its runner and status read as is, the whole row under a lock. */
export function rowOf<Row extends RunnerRow>(
  db: Db,
  jobs: RunnerTable,
  id: string,
): { peek(): Promise<Pick<Row, 'runner' | 'status'> | undefined>; lock(tx: Tx, wait: boolean): Promise<Row | undefined> } {
  const byId = eq(jobs.id, id);
  return {
    peek: async () => (await db.select({ runner: jobs.runner, status: jobs.status }).from(jobs).where(byId))[0] as Pick<Row, 'runner' | 'status'> | undefined,
    lock: async (tx, wait) => {
      const q = tx.select().from(jobs).where(byId);
      return (await (wait ? q.for('update') : q.for('update', { skipLocked: true })))[0] as Row | undefined;
    },
  };
}
