/**
 * Moves the database toward what the compute driver reports: reads the driver's event stream from
 * where the last reader stopped (the cursor is a row, so any process can continue it; applying an
 * event twice changes nothing), and sends again operations that have waited too long, which a
 * driver that lost them will now run (it dedupes by operation id).
 */
import { and, eq, isNotNull, lt, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { computeCursors, instances } from './schema.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import type { InstanceService } from './service.js';

const PAGE = 200;

export class Reconciler {
  constructor(private deps: { db: Db; clock: Clock; driver: ComputeDriver; instances: InstanceService; log: FastifyBaseLogger; retryAfterMs: number }) {}

  /** Applies every new event, then retries stale operations. Returns how many of each it handled. */
  async tick(): Promise<number> {
    let handled = 0;
    for (let cursor = await this.cursor(); ;) {
      const events = await this.deps.driver.events(cursor, PAGE);
      for (const e of events) {
        try {
          await this.deps.instances.applyEvent(e);
        } catch (err) {
          // One bad event must not stop the stream; the operation's retry and the log bring it to light.
          this.deps.log.error({ event: e, err: (err as Error).message }, 'driver event could not be applied');
        }
      }
      if (!events.length) break;
      cursor = events[events.length - 1]!.seq;
      await this.saveCursor(cursor);
      handled += events.length;
      if (events.length < PAGE) break;
    }
    return handled + (await this.retryStale());
  }

  private async cursor(): Promise<number> {
    const [row] = await this.deps.db.select().from(computeCursors).where(eq(computeCursors.driver, this.deps.driver.name));
    return row?.seq ?? 0;
  }

  private async saveCursor(seq: number) {
    await this.deps.db
      .insert(computeCursors)
      .values({ driver: this.deps.driver.name, seq, updatedAt: this.deps.clock.now() })
      .onConflictDoUpdate({ target: computeCursors.driver, set: { seq: sql`greatest(${computeCursors.seq}, ${seq})`, updatedAt: this.deps.clock.now() } });
  }

  private async retryStale(): Promise<number> {
    const now = this.deps.clock.now();
    const stale = await this.deps.db
      .update(instances)
      .set({ opStartedAt: now })
      .where(and(isNotNull(instances.pendingOpId), lt(instances.opStartedAt, new Date(now.getTime() - this.deps.retryAfterMs))))
      .returning();
    for (const row of stale) {
      this.deps.log.warn({ instance: row.id, op: row.pendingOpId }, 'operation waited too long: sending it to the compute driver again');
      await this.deps.instances.submit(row);
    }
    return stale.length;
  }
}
