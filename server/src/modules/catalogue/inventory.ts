/**
 * Free cards per host: the one place that changes them. The compute side calls reserve when it
 * places an instance and release when it frees the cards; a row update with a guard makes two
 * concurrent reservations of the last card end with exactly one winner.
 */
import { and, eq, gte, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Executor } from '../../db/client.js';
import { catalogueHosts } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from './store.js';

export class InventoryService {
  constructor(
    private store: CatalogueStore,
    private clock: Clock,
  ) {}

  /** Takes `count` cards of the host, or fails with NO_CAPACITY and takes nothing. */
  async reserve(exec: Executor, hostId: string, count: number): Promise<void> {
    const rows = await exec
      .update(catalogueHosts)
      .set({ gpuFree: sql`${catalogueHosts.gpuFree} - ${count}`, updatedAt: this.clock.now() })
      .where(and(eq(catalogueHosts.id, hostId), eq(catalogueHosts.active, true), gte(catalogueHosts.gpuFree, count)))
      .returning({ gpuFree: catalogueHosts.gpuFree });
    if (rows.length === 0) throw new AppError('NO_CAPACITY', `主机 ${hostId} 空闲卡数不足 ${count} 卡`);
    this.store.invalidateInventory();
  }

  /** Gives cards back, never beyond the host's total. */
  async release(exec: Executor, hostId: string, count: number): Promise<void> {
    await exec
      .update(catalogueHosts)
      .set({ gpuFree: sql`least(${catalogueHosts.gpuFree} + ${count}, ${catalogueHosts.gpuTotal})`, updatedAt: this.clock.now() })
      .where(eq(catalogueHosts.id, hostId));
    this.store.invalidateInventory();
  }
}
