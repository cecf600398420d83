/**
 * The migrate task (see tasks.ts): a stopped GPU instance moves, data disk included, to another host
 * of the same GPU type in the same region, so that it can start with cards when its own host has
 * none free. Free of charge. The target's cards are reserved when the migration begins; the
 * instance keeps them on its new host for settings.migrateHoldMinutes, after which they go back to
 * the pool (releaseHeldCards, run by billing.ts heldCardsTick).
 */
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { MIGRATE_DONE_STATUS, TASK_FROM, type Instance, type MigrateInstanceRequest, type MigrationTarget } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instances } from './schema.js';
import type { DriverEvent, InstanceOp } from '../../drivers/compute/types.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { InventoryService } from '../catalogue/index.js';
import type { CatalogueStore, Snapshot } from '../catalogue/index.js';
import type { UserRow } from '../users/index.js';
import { type InstanceService } from './service.js';
import { holdText, type InstanceRow } from './rows.js';
import { TaskParam, type TaskDone, type TaskFailed, type TaskHandler } from './tasks.js';
import type { InstanceViews } from './views.js';

/** The host the instance moves to. */
interface MigrateParam {
  hostId: string;
}

const migrateParam = new TaskParam<'migrate', MigrateParam>('migrate', z.object({ hostId: z.string().min(1) }), (hostId) => ({ hostId }));

export interface MigrationDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  inventory: InventoryService;
  instances: InstanceService;
  views: InstanceViews;
}

export class MigrationService {
  constructor(private deps: MigrationDeps) {}

  /**
   * Moves a stopped instance, data disk included, to another host of the same GPU type in the same
   * region (its own room first), so that it can start with cards when its own host has none free.
   * Free of charge: nothing is ordered or charged. The target's cards are reserved at once (two
   * migrations cannot take the same card) and the instance is Pending_Migrate until the driver
   * reports: done, it is Stopped on the new host and keeps those cards for its next start; failed,
   * it is back where it was on the old host and the cards go back to the target.
   */
  async migrate(user: UserRow, id: string, req: MigrateInstanceRequest): Promise<Instance> {
    const core = this.deps.instances;
    await core.mustFind(user, id);
    // Read before the transaction: on PGlite a query outside it would wait for it to end.
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      core.assertTask(cur, 'migrate');
      if (!cur.hostId || !cur.gpuTypeId || cur.gpuCount === 0) throw new AppError('MIGRATE_NOT_GPU', '该实例没有 GPU，无需迁移');
      if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再迁移');
      const candidates = this.targets(cur, snap);
      if (req.hostId && !candidates.some((h) => h.id === req.hostId)) {
        throw new AppError(
          'MIGRATE_HOST_INVALID',
          `主机 ${req.hostId} 不能作为迁移目标：须为同一地区、同一 GPU 型号的其他主机，且数据盘上限不小于 ${cur.dataDiskGb} GB`,
        );
      }
      const target = await this.reserveTarget(tx, req.hostId ? candidates.filter((h) => h.id === req.hostId) : candidates, cur.gpuCount);
      if (!target) {
        throw new AppError(
          'MIGRATE_NO_HOST',
          req.hostId
            ? `主机 ${req.hostId} 当前空闲卡不足 ${cur.gpuCount} 卡，请稍后再试，或使用无卡模式开机`
            : `同地区暂无空闲 ${cur.gpuCount} 卡的同型号主机，请稍后再试，或使用无卡模式开机`,
        );
      }
      const from = snap.hosts.find((h) => h.id === cur.hostId)?.name ?? cur.hostId;
      return core.beginTask(tx, cur, migrateParam.start({ hostId: target.id }), {
        actorId: user.id,
        opId: `migrate:${cur.id}:${this.deps.clock.now().getTime()}`,
        detail: `${from} → ${target.name}（${cur.gpuCount} 卡，数据盘 ${cur.dataDiskGb} GB，免费）`,
      });
    });
    await core.submit(row);
    return this.deps.views.get(user, id);
  }

  /**
   * A migrated instance that did not start within the hold gives its new host's cards back to the
   * pool; it starts later like any stopped instance (free cards permitting). Once per instance, under
   * its row lock.
   */
  async releaseHeldCards(id: string): Promise<boolean> {
    return this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, id);
      const now = this.deps.clock.now();
      if (!cur.cardsHeldUntil || cur.cardsHeldUntil > now || cur.gpuHeld === 0 || !TASK_FROM.migrate.includes(cur.status)) return false;
      await this.deps.inventory.release(tx, cur.hostId!, cur.gpuHeld);
      const [moved] = await tx.update(instances).set({ gpuHeld: 0, cardsHeldUntil: null, updatedAt: now }).where(eq(instances.id, id)).returning();
      await this.deps.instances.logOp(tx, moved!, {
        action: 'releaseCards',
        actorId: null,
        from: cur.status,
        to: cur.status,
        detail: `迁移后未在保留时间内开机，预留的 ${cur.gpuHeld} 张 GPU 已释放；开机时按主机空闲情况重新分配`,
      });
      return true;
    });
  }

  /** The hosts the migration dialog offers, with their free cards now. */
  async targetList(user: UserRow, id: string): Promise<MigrationTarget[]> {
    const cur = await this.deps.instances.mustFind(user, id);
    if (!cur.hostId || !cur.gpuTypeId || cur.gpuCount === 0) throw new AppError('MIGRATE_NOT_GPU', '该实例没有 GPU，无需迁移');
    const snap = await this.deps.catalogue.get();
    const rooms = new Map(snap.rooms.map((r) => [r.id, r.name]));
    return this.targets(cur, snap).map((h) => ({
      hostId: h.id,
      hostName: h.name,
      roomName: rooms.get(h.roomId) ?? h.roomId,
      sameRoom: h.roomId === cur.roomId,
      gpuFree: h.gpuFree,
      available: h.gpuFree >= cur.gpuCount,
    }));
  }

  /** Hosts the instance may move to: active, same GPU type, same region, not its own, room for its cards and data disk; its own room first, then the freest. */
  private targets(cur: InstanceRow, snap: Snapshot): Snapshot['hosts'] {
    const rooms = new Map(snap.rooms.filter((r) => r.regionId === cur.regionId && r.active).map((r) => [r.id, r]));
    return snap.hosts
      .filter(
        (h) =>
          h.active &&
          h.id !== cur.hostId &&
          h.gpuTypeId === cur.gpuTypeId &&
          rooms.has(h.roomId) &&
          h.gpuTotal >= cur.gpuCount &&
          h.dataDiskMaxGb >= cur.dataDiskGb,
      )
      .sort((a, b) => Number(b.roomId === cur.roomId) - Number(a.roomId === cur.roomId) || b.gpuFree - a.gpuFree || a.id.localeCompare(b.id));
  }

  /** Reserves `count` cards on the first candidate that has them (the inventory's guard decides races), or null. */
  private async reserveTarget(tx: Tx, candidates: Snapshot['hosts'], count: number): Promise<Snapshot['hosts'][number] | null> {
    for (const host of candidates) {
      try {
        await this.deps.inventory.reserve(tx, host.id, count);
        return host;
      } catch (e) {
        if (!isAppError(e, 'NO_CAPACITY')) throw e;
      }
    }
    return null;
  }
}

export class MigrateTask implements TaskHandler<'migrate', MigrateParam> {
  readonly param = migrateParam;

  constructor(private deps: { inventory: InventoryService }) {}

  op(_row: InstanceRow, p: MigrateParam): InstanceOp {
    return { kind: 'migrate', params: { targetHostId: p.hostId } };
  }

  /** Stopped on the new host, keeping the cards reserved there for its next start; anything held on the old host goes back. */
  async onDone(tx: Tx, row: InstanceRow, p: MigrateParam, e: DriverEvent, snap: Snapshot): Promise<TaskDone> {
    const { settings } = snap;
    const target = snap.hosts.find((h) => h.id === p.hostId);
    if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
    const oldName = snap.hosts.find((h) => h.id === row.hostId)?.name ?? row.hostId;
    return {
      to: MIGRATE_DONE_STATUS,
      set: {
        hostId: p.hostId,
        roomId: target?.roomId ?? row.roomId,
        noCard: false,
        gpuHeld: row.gpuCount,
        cardsHeldUntil: new Date(e.at.getTime() + settings.migrateHoldMinutes * 60_000),
        ...(e.access ? { sshHost: e.access.sshHost, sshPort: e.access.sshPort } : {}),
      },
      detail: `已迁移：${oldName} → ${target?.name ?? p.hostId}，GPU 保留 ${holdText(settings.migrateHoldMinutes)}`,
    };
  }

  /** The instance stays on its old host: the target's cards go back. */
  async onFailed(tx: Tx, row: InstanceRow, p: MigrateParam, e: DriverEvent): Promise<TaskFailed> {
    await this.deps.inventory.release(tx, p.hostId, row.gpuCount);
    return { notice: `您的实例「${row.name}」迁移失败（${e.error ?? '未知原因'}），实例仍在原主机、数据完好，可稍后重试迁移或使用无卡模式开机。` };
  }

  /** The machine came back running on its old host: the target's cards go back. */
  async onAbandoned(tx: Tx, row: InstanceRow, p: MigrateParam): Promise<void> {
    await this.deps.inventory.release(tx, p.hostId, row.gpuCount);
  }
}
