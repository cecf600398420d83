/**
 * How a job on the image backend is admitted, shared by LoRA training and image generation: one
 * account's submissions take turns (an advisory lock per account and table), the same requestId
 * twice makes one job, an account has at most so many active jobs, and the job's row and its hold
 * are written in that one transaction. How many jobs run at once on the backend is `hasRoom`'s.
 */
import { and, count, eq, getTableName, inArray, sql } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { ErrorName } from '@console/contract';
import type { Db, Tx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { AppError } from '../../http/errors.js';

/** A job table with the columns admission reads: the job, whose it is, the request that made it, its status. */
export type JobTable = PgTable & {
  id: AnyPgColumn<{ data: string; notNull: true }>;
  userId: AnyPgColumn;
  requestId: AnyPgColumn;
  status: AnyPgColumn;
};

export interface AdmitSteps<View> {
  db: Db;
  jobs: JobTable;
  payerId: string;
  requestId: string;
  /** The id the new job gets. */
  id: string;
  /** The statuses that count against the account's limit. */
  active: readonly string[];
  maxActive: number;
  limitError: ErrorName;
  /** Writes the job and holds its price; in the admission's transaction, after the checks. */
  insert(tx: Tx): Promise<void>;
  /** The job the request made, if any (the caller's view of it). */
  byRequest(): Promise<View | null>;
  get(id: string): Promise<View>;
}

/** Admits a job once per requestId: the new one, or the one the same request made before (or concurrently). */
export async function admitOnce<View>(s: AdmitSteps<View>): Promise<View> {
  let made = s.id;
  try {
    await s.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`${getTableName(s.jobs)}:${s.payerId}`}))`);
      // The same request that waited for the lock finds the job the first one made.
      const same = await sameRequest(tx, s);
      if (same) return (made = same);
      if ((await activeJobs(tx, s)) >= s.maxActive) throw new AppError(s.limitError);
      await s.insert(tx);
    });
  } catch (e) {
    // The same request raced itself: the other one made the job.
    if (isUniqueViolation(e)) {
      const won = await s.byRequest();
      if (won) return won;
    }
    throw e;
  }
  return s.get(made);
}

/**
 * Whether the backend has room for one more running job (`running`: the statuses that take a place).
 * Starts take turns across processes, so two cannot both take the last place.
 */
export async function hasRoom(tx: Tx, jobs: JobTable, running: readonly string[], capacity: number): Promise<boolean> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`${getTableName(jobs)}:capacity`}))`);
  const [{ n } = { n: 0 }] = await tx
    .select({ n: count() })
    .from(jobs)
    .where(inArray(jobs.status, [...running]));
  return n < capacity;
}

async function sameRequest(tx: Tx, s: AdmitSteps<unknown>): Promise<string | undefined> {
  const [same] = await tx
    .select({ id: s.jobs.id })
    .from(s.jobs)
    .where(and(eq(s.jobs.userId, s.payerId), eq(s.jobs.requestId, s.requestId)));
  return same?.id;
}

async function activeJobs(tx: Tx, s: AdmitSteps<unknown>): Promise<number> {
  const [{ n } = { n: 0 }] = await tx
    .select({ n: count() })
    .from(s.jobs)
    .where(and(eq(s.jobs.userId, s.payerId), inArray(s.jobs.status, [...s.active])));
  return n;
}
