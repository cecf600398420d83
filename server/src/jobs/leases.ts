/**
 * Job leases: which console process runs each periodic job, so that N replicas on one database run
 * it once per interval rather than N times (DESIGN.md "Many processes, many hosts").
 *
 * - A lease is a row of `job_leases`, taken and renewed by one statement: an insert that, on an
 *   existing row, overwrites it only where this process already holds it or it has expired. The row
 *   comes back only when this process holds the lease afterwards.
 * - Expiry is on the database's clock (`now()`), never on a process's: replicas' clocks differ, and
 *   the injected Clock of the tests stands still. One clock decides for every process.
 * - A process that dies keeps its leases until they expire (one interval and a margin after its last
 *   run); one that stops gives them back, so another takes the jobs over at its next try.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { jobLeases } from './schema.js';

/** This process's name as a lease holder: host, pid and a random part (a pid is reused, a host's name may be too). */
export function leaseHolderId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export class JobLeases {
  constructor(
    private readonly db: Db,
    readonly holder: string = leaseHolderId(),
  ) {}

  /**
   * Takes or renews the job's lease for `ttlMs` from now (the database's now); whether this process
   * holds it. Another holder's lease that has not expired is left alone.
   */
  async acquire(name: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.round(ttlMs));
    const expires = sql`now() + ${ttl}::integer * interval '1 millisecond'`;
    const rows = await this.db
      .insert(jobLeases)
      .values({ name, holder: this.holder, expiresAt: expires, acquiredAt: sql`now()`, renewedAt: sql`now()` })
      .onConflictDoUpdate({
        target: jobLeases.name,
        set: {
          holder: sql`excluded.holder`,
          expiresAt: sql`excluded.expires_at`,
          renewedAt: sql`excluded.renewed_at`,
          acquiredAt: sql`case when job_leases.holder = excluded.holder then job_leases.acquired_at else excluded.acquired_at end`,
        },
        setWhere: sql`job_leases.holder = excluded.holder or job_leases.expires_at < now()`,
      })
      .returning({ holder: jobLeases.holder });
    return rows.length > 0 && rows[0]!.holder === this.holder;
  }

  /** Gives back this process's leases (all of them, or the named ones): another process takes each at its next try. */
  async release(names?: readonly string[]): Promise<number> {
    if (names && !names.length) return 0;
    const rows = await this.db
      .delete(jobLeases)
      .where(and(eq(jobLeases.holder, this.holder), names ? inArray(jobLeases.name, [...names]) : undefined))
      .returning({ name: jobLeases.name });
    return rows.length;
  }

  /**
   * Forgets every lease, whoever holds it. Only for a process that knows it is alone on its database
   * (the embedded PGlite, which one process opens): the leases a crashed run left are its own, and
   * waiting for them to expire would hold the jobs back for up to an interval and a half after a restart.
   */
  async clearAll(): Promise<number> {
    const rows = await this.db.delete(jobLeases).returning({ name: jobLeases.name });
    return rows.length;
  }

  /** Who holds each job now (expired leases included, with their expiry): for the operator and the tests. */
  async holders(): Promise<Map<string, { holder: string; expiresAt: Date }>> {
    const rows = await this.db.select().from(jobLeases);
    return new Map(rows.map((r) => [r.name, { holder: r.holder, expiresAt: r.expiresAt }]));
  }
}
