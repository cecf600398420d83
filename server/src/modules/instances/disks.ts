/**
 * Data disks (spec §2 /console/gpudata/disk, issue 6): every instance's data disk with its size,
 * free part, usage as the compute driver reports it and what it costs; and its expansion.
 *
 * Expansion (ChangeDataDisk) needs a stopped machine and only grows the disk, up to the host's
 * dataDiskMaxGb. How it is paid follows the instance's billing:
 * - prepaid (Day/Week/Month): the added GB beyond the free size at the catalogue's data-disk price,
 *   prorated over the whole hours left until expireAt, as a ChangeDataDisk order paid through the
 *   normal pay flow (the server prices it; the client's price is never used). Paying fulfils it
 *   (InstanceService.applyDiskChange); a failure refunds it.
 * - post-paid (Usage/Hour): no order, nothing up front. The expansion is an operation of the
 *   instance (operation log) and the daily data-disk charge on its Usage order follows the new size
 *   from then on (InstanceService.applyResize).
 */
import { and, count, desc, eq, inArray, isNull } from 'drizzle-orm';
import type { DataDisk, DataDiskPage, DiskExpansionQuote, ExpandDiskResponse, Instance, InstanceCategory, Quote, StorageCharge } from '@console/contract';
import { InstanceStatus } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { instances } from '../../db/schema.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueService } from '../catalogue/service.js';
import type { CatalogueStore, Snapshot } from '../catalogue/store.js';
import type { LedgerService } from '../ledger/service.js';
import type { OrderService } from '../orders/service.js';
import type { UserRow } from '../sessions/service.js';
import { POSTPAID, type InstanceRow, type InstanceService } from './service.js';

type StorageChargePage = { items: StorageCharge[]; total: number; page: number; pageSize: number };

const HOUR_MS = 3_600_000;

export class DiskService {
  constructor(
    private deps: { db: Db; clock: Clock; driver: ComputeDriver; catalogue: CatalogueStore; pricing: CatalogueService; orders: OrderService; instances: InstanceService; ledger: LedgerService },
  ) {}

  /**
   * The daily charges for data disks beyond their free size (the storage bill detail), newest
   * first: one ledger transfer per instance and day, keyed `disk:<instance>:<day start ms>`.
   */
  async charges(user: UserRow, q: { page: number; pageSize: number }): Promise<StorageChargePage> {
    const payer = user.isChild && user.parentId ? user.parentId : user.id;
    const page = await this.deps.ledger.chargesByKeyPrefix(payer, 'disk:', q);
    const parsed = page.items.map((c) => {
      const [, instanceId = '', ms = '0'] = c.key.split(':');
      return { ...c, instanceId, periodStart: new Date(Number(ms)) };
    });
    const ids = [...new Set(parsed.map((c) => c.instanceId))];
    const names = ids.length ? await this.deps.db.select({ id: instances.id, name: instances.name }).from(instances).where(inArray(instances.id, ids)) : [];
    const nameOf = new Map(names.map((n) => [n.id, n.name]));
    return {
      items: parsed.map((c) => ({
        id: c.transferId,
        instanceId: c.instanceId,
        instanceName: nameOf.get(c.instanceId) ?? '',
        periodStart: c.periodStart.toISOString(),
        memo: c.memo,
        amount: String(c.paid),
        chargedAt: c.createdAt.toISOString(),
      })),
      total: page.total,
      page: q.page,
      pageSize: q.pageSize,
    };
  }

  /** The data disks of the payer's instances, newest first, with usage where the driver knows it. */
  async list(user: UserRow, q: { page: number; pageSize: number }): Promise<DataDiskPage> {
    const payer = user.isChild && user.parentId ? user.parentId : user.id;
    const where = and(eq(instances.userId, payer), isNull(instances.releasedAt));
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(instances).where(where);
    const rows = await this.deps.db.select().from(instances).where(where).orderBy(desc(instances.createdAt), desc(instances.id)).limit(q.pageSize).offset((q.page - 1) * q.pageSize);
    const snap = await this.deps.catalogue.get();
    let usage = new Map<string, number>();
    try {
      usage = await this.deps.driver.diskUsage(rows.map((r) => r.id));
    } catch {
      // Usage is a nicety: the list stands without it.
    }
    return {
      items: rows.map((r) => this.view(r, snap, usage.get(r.id) ?? null)),
      total,
      page: q.page,
      pageSize: q.pageSize,
      pricePerGbDay: String(snap.settings.dataDiskPricePerGbDay),
    };
  }

  private view(r: InstanceRow, snap: Snapshot, usedGb: number | null): DataDisk {
    const prepaid = !POSTPAID.includes(r.cycle);
    return {
      instanceId: r.id,
      instanceName: r.name,
      category: r.category,
      status: r.status,
      cycle: r.cycle,
      sizeGb: r.dataDiskGb,
      freeGb: r.freeDataDiskGb,
      usedGb,
      chargeableGb: Math.max(0, r.dataDiskGb - r.freeDataDiskGb),
      dailyPrice: String(prepaid ? 0n : r.diskDailyPrice),
      prepaid,
      expireAt: r.expireAt?.toISOString() ?? null,
      maxGb: this.deps.instances.maxDiskGb(r, snap),
      expandBlocked: this.blocked(r),
    };
  }

  /** Why the disk cannot be expanded now, in the words of the instance's state; null when it can. */
  private blocked(r: InstanceRow): string | null {
    try {
      this.deps.instances.assertTask(r, 'resizeDisk');
    } catch (e) {
      return e instanceof AppError ? (e.detail ?? e.message) : `实例${InstanceStatus.label(r.status)}`;
    }
    if (r.expireAt && r.expireAt <= this.deps.clock.now()) return '实例已到期，请先续费再扩容';
    return null;
  }

  /**
   * What expanding to `newGb` costs. Answered whatever the instance's status (the dialog says to
   * stop it first); the size must be valid.
   */
  async quote(user: UserRow, id: string, newGb: number): Promise<DiskExpansionQuote> {
    const row = await this.deps.instances.mustFind(user, id);
    const snap = await this.deps.catalogue.get();
    const max = this.deps.instances.maxDiskGb(row, snap);
    if (newGb <= row.dataDiskGb) throw new AppError('DATA_DISK_SIZE_INVALID', `新容量须大于当前的 ${row.dataDiskGb} GB（数据盘只能扩容，不能缩小）`);
    if (newGb > max) throw new AppError('DATA_DISK_SIZE_INVALID', `该实例数据盘最大 ${max} GB`);
    const prepaid = !POSTPAID.includes(row.cycle);
    const now = this.deps.clock.now().getTime();
    if (prepaid && (!row.expireAt || row.expireAt.getTime() <= now)) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再扩容');
    const hours = prepaid ? Math.ceil((row.expireAt!.getTime() - now) / HOUR_MS) : 0;
    const quote: Quote = await this.deps.pricing.quoteDiskExpansion(
      {
        category: row.category,
        cycle: row.cycle,
        regionId: row.regionId,
        currentGb: row.dataDiskGb,
        newGb,
        freeGb: row.freeDataDiskGb,
        hours,
        note: prepaid ? `${row.dataDiskGb} → ${newGb} GB，按剩余 ${hours} 小时计` : `${row.dataDiskGb} → ${newGb} GB，按量计费，扩容后按天计费`,
      },
      user,
    );
    const daily = prepaid ? 0n : BigInt(Math.max(0, newGb - row.freeDataDiskGb)) * snap.settings.dataDiskPricePerGbDay;
    return { instanceId: row.id, currentGb: row.dataDiskGb, newGb, freeGb: row.freeDataDiskGb, maxGb: max, prepaid, remainingHours: hours, dailyPriceAfter: String(daily), quote };
  }

  /**
   * Prepaid: an Unpaid ChangeDataDisk order at the server's price; the machine must be stopped
   * already (it must still be when the order is paid, or the order is refunded). Post-paid: the
   * expansion starts now.
   */
  async expand(user: UserRow, id: string, newGb: number): Promise<ExpandDiskResponse> {
    const row = await this.deps.instances.mustFind(user, id);
    if (POSTPAID.includes(row.cycle)) return { order: null, instance: await this.deps.instances.expandPostpaid(user, id, newGb) };
    this.deps.instances.checkResize(row, newGb, await this.deps.catalogue.get());
    const q = await this.quote(user, id, newGb);
    const order = await this.deps.orders.create({
      payerId: row.userId,
      createdBy: user.id,
      kind: isPersonal(row.category) ? 'Personal' : 'default',
      type: 'ChangeDataDisk',
      category: row.category,
      request: { instanceId: row.id, dataDiskGb: newGb },
      quote: q.quote,
      description: `数据盘扩容 ${row.name}：${row.dataDiskGb} GB → ${newGb} GB`,
    });
    const instance: Instance = await this.deps.instances.get(user, id);
    return { order, instance };
  }
}

/** GPU and application instances are "Personal" orders (spec §3), like their purchase. */
function isPersonal(category: InstanceCategory): boolean {
  return category === 'Gpu' || category === 'App';
}
