/**
 * Data disks (spec §2 /console/gpudata/disk): every instance's data disk with its size,
 * free part, usage as the compute driver reports it and what it costs; and its expansion.
 *
 * Expansion (ChangeDataDisk) needs a stopped machine and only grows the disk, up to the host's
 * dataDiskMaxGb. How it is paid follows the instance's billing:
 * - prepaid (Day/Week/Month): the added GB beyond the free size at the catalogue's data-disk price,
 *   prorated over the whole hours left until expireAt, as a ChangeDataDisk order paid through the
 *   normal pay flow (the server prices it; the client's price is never used). Paying fulfils it
 *   (DiskService.fulfil); a failure refunds it.
 * - post-paid (Usage/Hour): no order, nothing up front. The expansion is an operation of the
 *   instance (operation log) and the hourly data-disk charge on its Usage order (billing.ts, each
 *   hour's share of the daily price) follows the new size from then on (ResizeDiskTask).
 *
 * The expansion itself is the resizeDisk task (see tasks.ts): the instance is Operating until the
 * driver reports, and the disk grows only then.
 */
import { and, count, desc, eq, inArray, isNull } from 'drizzle-orm';
import { z } from 'zod';
import type { DataDisk, DataDiskPage, DiskExpansionQuote, ExpandDiskResponse, Instance, InstanceCategory, Quote, StorageCharge } from '@console/contract';
import { InstanceStatus, MAX_DATA_DISK_GB, payerIdOf, isPostpaid } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instances } from './schema.js';
import type { ComputeDriver, DriverEvent, InstanceOp } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { Quotes } from '../catalogue/index.js';
import type { CatalogueStore, Snapshot } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { Fulfiller, OrderRow, OrderService } from '../orders/index.js';
import type { UsageCharges } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import { type InstanceService } from './service.js';
import { type InstanceRow } from './rows.js';
import { TaskParam, type TaskDone, type TaskFailed, type TaskHandler } from './tasks.js';
import { chargeDiskHours } from './meter.js';
import { createdByScope, type InstanceViews } from './views.js';

type StorageChargePage = { items: StorageCharge[]; total: number; page: number; pageSize: number };

const HOUR_MS = 3_600_000;
const DAY_MS_N = 86_400_000n;

/** The size the disk grows to, and the ChangeDataDisk order that paid for it (null: post-paid, nothing paid up front). */
interface ResizeDiskParam {
  newGb: number;
  orderId: string | null;
}

const resizeDiskParam = new TaskParam<'resizeDisk', ResizeDiskParam>(
  'resizeDisk',
  z.object({ newGb: z.number().int().positive(), orderId: z.string().nullable() }),
  (text) => {
    // Before JSON: "newGb" or "newGb:orderId".
    const [newGb = '0', orderId = ''] = text.split(':');
    return { newGb: Number(newGb), orderId: orderId || null };
  },
);

export interface DiskDeps {
  db: Db;
  clock: Clock;
  driver: ComputeDriver;
  catalogue: CatalogueStore;
  pricing: Pick<Quotes, 'quoteDiskExpansion'>;
  orders: OrderService;
  instances: InstanceService;
  views: InstanceViews;
  ledger: LedgerService;
}

export class DiskService implements Fulfiller {
  constructor(private deps: DiskDeps) {}

  /**
   * The charges for data disks beyond their free size (the storage bill detail), newest first: one
   * ledger transfer per instance and hour, keyed `disk:<instance>:<hour start ms>` (a day each before
   * disks were charged by the hour).
   */
  async charges(user: UserRow, q: { page: number; pageSize: number }): Promise<StorageChargePage> {
    const payer = payerIdOf(user);
    // A child without 财务 sees the charges of the instances it created only.
    const own = createdByScope(user);
    const prefixes = own
      ? (
          await this.deps.db
            .select({ id: instances.id })
            .from(instances)
            .where(and(eq(instances.userId, payer), own))
        ).map((r) => `disk:${r.id}:`)
      : 'disk:';
    if (!prefixes.length) return { items: [], total: 0, page: q.page, pageSize: q.pageSize };
    const page = await this.deps.ledger.chargesByKeyPrefix(payer, prefixes, q);
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
    const payer = payerIdOf(user);
    const where = and(eq(instances.userId, payer), isNull(instances.releasedAt), createdByScope(user));
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(instances).where(where);
    const rows = await this.deps.db
      .select()
      .from(instances)
      .where(where)
      .orderBy(desc(instances.createdAt), desc(instances.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
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
    const prepaid = !isPostpaid(r.cycle);
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
      maxGb: maxDiskGb(r, snap),
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
    const max = maxDiskGb(row, snap);
    if (newGb <= row.dataDiskGb) throw new AppError('DATA_DISK_SIZE_INVALID', `新容量须大于当前的 ${row.dataDiskGb} GB（数据盘只能扩容，不能缩小）`);
    if (newGb > max) throw new AppError('DATA_DISK_SIZE_INVALID', `该实例数据盘最大 ${max} GB`);
    const prepaid = !isPostpaid(row.cycle);
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
        note: prepaid
          ? `${row.dataDiskGb} → ${newGb} GB，按剩余 ${hours} 小时计`
          : `${row.dataDiskGb} → ${newGb} GB，按量计费，扩容后按小时扣费（每小时为日价的 1/24）`,
      },
      user,
    );
    const daily = prepaid ? 0n : BigInt(Math.max(0, newGb - row.freeDataDiskGb)) * snap.settings.dataDiskPricePerGbDay;
    return {
      instanceId: row.id,
      currentGb: row.dataDiskGb,
      newGb,
      freeGb: row.freeDataDiskGb,
      maxGb: max,
      prepaid,
      remainingHours: hours,
      dailyPriceAfter: String(daily),
      quote,
    };
  }

  /**
   * Prepaid: an Unpaid ChangeDataDisk order at the server's price; the machine must be stopped
   * already (it must still be when the order is paid, or the order is refunded). Post-paid: the
   * expansion starts now.
   */
  async expand(user: UserRow, id: string, newGb: number): Promise<ExpandDiskResponse> {
    const row = await this.deps.instances.mustFind(user, id);
    if (isPostpaid(row.cycle)) return { order: null, instance: await this.expandPostpaid(user, id, newGb) };
    this.checkResize(row, newGb, await this.deps.catalogue.get());
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
    const instance: Instance = await this.deps.views.get(user, id);
    return { order, instance };
  }

  /**
   * Post-paid: the expansion starts at once, with nothing to pay up front; the hourly data-disk
   * charge follows the new size (ResizeDiskTask).
   */
  private async expandPostpaid(user: UserRow, id: string, newGb: number): Promise<Instance> {
    const core = this.deps.instances;
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      if (!isPostpaid(cur.cycle)) throw new AppError('INSTANCE_STATE_INVALID', '包周期实例扩容需先支付扩容订单');
      this.checkResize(cur, newGb, snap);
      const opId = `resizeDisk:${cur.id}:${this.deps.clock.now().getTime()}`;
      return core.beginTask(tx, cur, resizeDiskParam.start({ newGb, orderId: null }), {
        actorId: user.id,
        opId,
        detail: `按量计费：${cur.dataDiskGb} GB → ${newGb} GB`,
      });
    });
    await core.submit(row);
    return this.deps.views.get(user, id);
  }

  /**
   * Fulfils a paid ChangeDataDisk order, once per order: the disk grows once the driver reports it.
   * An instance that cannot be expanded now (started again since, expired, already as large) fails
   * the order here, which refunds it; a driver failure later refunds it too (ResizeDiskTask.onFailed).
   */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, dataDiskGb } = order.request as { instanceId: string; dataDiskGb: number };
    const core = this.deps.instances;
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, instanceId);
      if (await core.orderApplied(tx, instanceId, 'resizeDisk', order.orderUid)) return null;
      this.checkResize(cur, dataDiskGb, snap);
      return core.beginTask(tx, cur, resizeDiskParam.start({ newGb: dataDiskGb, orderId: order.id }), {
        actorId: order.createdBy,
        opId: `resizeDisk:${order.id}`,
        detail: `${order.orderUid}：${cur.dataDiskGb} GB → ${dataDiskGb} GB`,
      });
    });
    if (row) await core.submit(row);
    return { resourceId: instanceId };
  }

  /** Why the data disk cannot be expanded to `newGb` now, as the error the request gets. */
  private checkResize(cur: InstanceRow, newGb: number, snap: Snapshot): void {
    this.deps.instances.assertTask(cur, 'resizeDisk');
    if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再扩容');
    if (newGb <= cur.dataDiskGb) throw new AppError('DATA_DISK_SIZE_INVALID', `新容量须大于当前的 ${cur.dataDiskGb} GB（数据盘只能扩容，不能缩小）`);
    const max = maxDiskGb(cur, snap);
    if (newGb > max) throw new AppError('DATA_DISK_SIZE_INVALID', `该实例数据盘最大 ${max} GB`);
  }
}

/** The resizeDisk task's outcome: the disk has its new size; what that costs from then on. */
export class ResizeDiskTask implements TaskHandler<'resizeDisk', ResizeDiskParam> {
  readonly param = resizeDiskParam;

  constructor(private deps: { usage: UsageCharges }) {}

  op(_row: InstanceRow, p: ResizeDiskParam): InstanceOp {
    return { kind: 'resizeDisk', params: { dataDiskGb: p.newGb } };
  }

  /**
   * The data disk has grown. Post-paid: its hourly charge follows the new size; if the disk was
   * within the free size until now, hourly charging starts now (the disk tick charges the first
   * hour); if the current hour was already charged at the old size, the difference for the rest of
   * that hour is charged at once, rounded up to 0.0001 yuan (arrears if the balance cannot pay).
   * Prepaid: paid up front by the order; renewals price the new size.
   */
  async onDone(tx: Tx, row: InstanceRow, p: ResizeDiskParam, e: DriverEvent, snap: Snapshot): Promise<TaskDone> {
    const set: Partial<InstanceRow> = { dataDiskGb: p.newGb };
    if (isPostpaid(row.cycle)) Object.assign(set, await this.chargeFromNow(tx, row, p.newGb, e.at, snap.settings.dataDiskPricePerGbDay));
    return { set, detail: `数据盘 ${row.dataDiskGb} GB → ${p.newGb} GB` };
  }

  private async chargeFromNow(tx: Tx, cur: InstanceRow, newGb: number, at: Date, pricePerGbDay: bigint): Promise<Partial<InstanceRow>> {
    const daily = BigInt(Math.max(0, newGb - cur.freeDataDiskGb)) * pricePerGbDay;
    const set: Partial<InstanceRow> = { diskDailyPrice: daily };
    let row = cur;
    if (row.diskBilledUntil && row.diskBilledUntil <= at && row.usageOrderId) {
      // Hours begun before the expansion that the disk tick has not charged yet are the old size's.
      const billed = (await chargeDiskHours(this.deps.usage, tx, [row], at)).get(row.id)!;
      Object.assign(set, billed);
      row = { ...row, ...billed };
    }
    if (daily > 0n && !row.diskBilledUntil) set.diskBilledUntil = at;
    else if (row.diskBilledUntil && row.diskBilledUntil > at && daily > row.diskDailyPrice && row.usageOrderId) {
      const ms = BigInt(row.diskBilledUntil.getTime() - at.getTime());
      const due = ((daily - row.diskDailyPrice) * ms + DAY_MS_N - 1n) / DAY_MS_N;
      const paid = await this.deps.usage.chargeUsage(
        tx,
        row.usageOrderId,
        due,
        `disk-resize:${row.pendingOpId}`,
        `${row.name} 数据盘扩容至 ${newGb} GB（当前小时剩余时间）`,
      );
      set.arrears = row.arrears + (due - paid);
    }
    return set;
  }

  /** A paid expansion that did not happen is refunded. */
  async onFailed(_tx: Tx, row: InstanceRow, p: ResizeDiskParam, e: DriverEvent): Promise<TaskFailed> {
    if (!p.orderId) return {};
    return { refundOrder: p.orderId, notice: `您的实例「${row.name}」数据盘扩容失败（${e.error ?? '未知原因'}），扩容订单款项已原路退回。` };
  }
}

/** The largest data disk the instance can have: its host's limit, or the product's. */
function maxDiskGb(row: InstanceRow, snap: Snapshot): number {
  const host = row.hostId ? snap.hosts.find((h) => h.id === row.hostId) : undefined;
  return Math.min(MAX_DATA_DISK_GB, host?.dataDiskMaxGb ?? MAX_DATA_DISK_GB);
}

/** GPU and application instances are "Personal" orders (spec §3), like their purchase. */
function isPersonal(category: InstanceCategory): boolean {
  return category === 'Gpu' || category === 'App';
}
