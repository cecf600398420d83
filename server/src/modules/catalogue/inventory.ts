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
import { reportedFreeCards, type LastReports } from './fleet-market.js';
import { compareVersion } from './versions.js';
import type { CatalogueStore, HostRow, Snapshot } from './store.js';

/** Hosts that are on sale: active, in an active room and region, of an active GPU type. */
export function liveHosts(snap: Snapshot): HostRow[] {
  const rooms = new Map(snap.rooms.map((r) => [r.id, r]));
  const regions = new Set(snap.regions.map((r) => r.id));
  const types = new Set(snap.gpuTypes.map((g) => g.id));
  return snap.hosts.filter((h) => {
    const room = rooms.get(h.roomId);
    return room && regions.has(room.regionId) && types.has(h.gpuTypeId);
  });
}

export function regionOfHost(snap: Snapshot, h: HostRow): string {
  return snap.rooms.find((r) => r.id === h.roomId)!.regionId;
}

/** What a GPU order asked for, beyond its type and card count: the host it may move to must fit it too. */
export interface PlacementScope {
  /** The buyer chose this host: no other will do. */
  hostChosen: boolean;
  regionId?: string;
  roomId?: string;
  dataDiskGb: number;
}

export class InventoryService {
  constructor(
    private store: CatalogueStore,
    private clock: Clock,
    /** A fleet's per-host reports (catalogue/fleet-market.ts): a host is never given more cards than its agent has free. */
    private reports?: LastReports,
  ) {}

  /** Takes `count` cards of the host, or fails with NO_CAPACITY and takes nothing. */
  async reserve(exec: Executor, hostId: string, count: number): Promise<void> {
    if (!(await this.take(exec, hostId, count))) throw new AppError('NO_CAPACITY', `主机 ${hostId} 空闲卡数不足 ${count} 卡`);
  }

  private async take(exec: Executor, hostId: string, count: number): Promise<boolean> {
    const rows = await exec
      .update(catalogueHosts)
      .set({ gpuFree: sql`${catalogueHosts.gpuFree} - ${count}`, updatedAt: this.clock.now() })
      .where(and(eq(catalogueHosts.id, hostId), eq(catalogueHosts.active, true), gte(catalogueHosts.gpuFree, count)))
      .returning({ gpuFree: catalogueHosts.gpuFree });
    if (rows.length) this.store.invalidateInventory();
    return rows.length > 0;
  }

  /**
   * Takes `count` cards for an order placed on `placedId` when it was quoted: there if it still has
   * them, else on the fullest other live host the order runs and costs the same on (same GPU type,
   * included data disk and a driver at least as new, within the region or room the buyer asked
   * for). The quote read a snapshot that concurrent orders may have emptied since; the guarded
   * update decides. Fails with NO_CAPACITY, taking nothing, when no host has the cards. `snap` is
   * read by the caller before its transaction: reading it inside could wait for a pooled connection
   * that transactions like this one hold.
   */
  async reserveFitting(exec: Executor, snap: Snapshot, placedId: string, count: number, scope: PlacementScope): Promise<{ host: HostRow; regionId: string }> {
    const placed = snap.hosts.find((h) => h.id === placedId);
    if (!placed) throw new AppError('NO_CAPACITY', `主机 ${placedId} 已下架`);
    const others = scope.hostChosen
      ? []
      : liveHosts(snap)
          .filter(
            (h) =>
              h.id !== placed.id &&
              h.gpuTypeId === placed.gpuTypeId &&
              h.dataDiskFreeGb === placed.dataDiskFreeGb &&
              h.dataDiskMaxGb >= scope.dataDiskGb &&
              compareVersion(h.maxCuda, placed.maxCuda) >= 0 &&
              (!scope.roomId || h.roomId === scope.roomId) &&
              (!scope.regionId || regionOfHost(snap, h) === scope.regionId),
          )
          .sort((a, b) => a.gpuFree - b.gpuFree || a.sort - b.sort);
    for (const host of [placed, ...others]) {
      if (this.reportedRoom(snap, host, count) && (await this.take(exec, host.id, count))) return { host, regionId: regionOfHost(snap, host) };
    }
    throw new AppError(
      'NO_CAPACITY',
      scope.hostChosen ? `主机 ${placed.name} 空闲卡数不足 ${count} 卡` : `所选范围内已没有空闲 ${count} 卡的主机，请换个地区或稍后再试`,
    );
  }

  /** Whether the host's agent (on a fleet) reports `count` cards free: the catalogue's count alone could sell cards the host lacks. */
  private reportedRoom(snap: Snapshot, host: HostRow, count: number): boolean {
    if (!this.reports) return true;
    const free = reportedFreeCards(snap, host, this.reports);
    return free !== null && free >= count;
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
