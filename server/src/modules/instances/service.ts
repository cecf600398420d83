/**
 * Instances (issue 6): a paid order becomes a machine, which its owner starts, stops, restarts and
 * releases. Every status change goes through the state machine of contract/schemas/instance.ts with
 * a row lock, is written to the operation log, and is either asked of the compute driver (actions)
 * or taken from what the driver reports (events, see reconciler.ts). The catalogue's inventory is
 * the capacity ledger: cards are reserved when an instance will hold them and given back when it
 * stops holding them.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { and, count, desc, eq, ilike, inArray, isNull, like, or, sql, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  InstanceActionLabel,
  InstanceStatus,
  INSTANCE_TASKS,
  TASK_FROM,
  InstanceTaskLabel,
  bandwidthChoices,
  MANAGE_PERMISSIONS,
  MAX_DATA_DISK_GB,
  MIGRATE_DONE_STATUS,
  actionTarget,
  allowedActions,
  allowedTasks,
  canAct,
  canResetPassword,
  canRunTask,
  formatYuan,
  parseFilterBy,
  taskStatus,
  type BillingCycle,
  type Instance,
  type InstanceAction,
  type InstanceActor,
  type InstanceCategory,
  type InstanceOperation,
  type InstanceStatus as Status,
  type InstanceTask,
  type MigrateInstanceRequest,
  type MigrationTarget,
  type Order,
  type Quote,
  type RenewInstanceRequest,
  type SaveImageRequest,
  type UserImage,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instanceOperations, instances, users } from '../../db/schema.js';
import type { ComputeDriver, DriverEvent, MachineSpec } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { InventoryService } from '../catalogue/inventory.js';
import type { CatalogueService } from '../catalogue/service.js';
import { HOURS_PER_UNIT, discounted } from '../catalogue/pricing.js';
import { priceKey, type CatalogueStore, type Settings, type Snapshot } from '../catalogue/store.js';
import type { ImageService, UsableImage } from '../images/service.js';
import type { OrderRow, OrderService } from '../orders/service.js';
import type { UserRow } from '../sessions/service.js';
import type { Meter } from './billing.js';
import { newMachinePassword, type PasswordBox } from './secrets.js';

export type InstanceRow = typeof instances.$inferSelect;

/** Post-paid cycles: metered while running and charged at each tick. */
export const POSTPAID: readonly BillingCycle[] = ['Usage', 'Hour'];

export interface InstanceDeps {
  db: Db;
  clock: Clock;
  driver: ComputeDriver;
  inventory: InventoryService;
  catalogue: CatalogueStore;
  orders: OrderService;
  meter: Meter;
  /** The catalogue's price function, for renewals. */
  pricing: CatalogueService;
  /** My images: saved from stopped instances, and what new instances are created from. */
  images: ImageService;
  passwords: PasswordBox;
  log: FastifyBaseLogger;
  /** Tells an owner something about their instance (release notices, a stop for lack of balance). */
  notify: (userId: string, text: string) => Promise<void>;
  publicBaseUrl: string;
}

/** What order.request holds for an instance order (orders/routes.ts writes it). */
interface InstanceRequest {
  name?: string;
  gpuTypeId?: string;
  gpuCount?: number;
  sizeId?: string;
  count?: number;
  imageId?: string;
  userImageId?: string;
  applicationId?: string;
  cycle: BillingCycle;
  duration: number;
  dataDiskGb: number;
  placement: { regionId: string; roomId?: string; hostId?: string };
}

export class InstanceService {
  /** Applies paid DayToMonth and TransferToLong orders (conversions.ts); set once at start. */
  private conversions?: { apply(order: OrderRow): Promise<{ resourceId: string }> };

  constructor(private deps: InstanceDeps) {}

  useConversions(c: { apply(order: OrderRow): Promise<{ resourceId: string }> }): void {
    this.conversions = c;
  }

  // --- creation (the order fulfiller for every instance category) --------------------

  /** Creates the order's instances (idempotent per order) and asks the driver for the machines; or applies a renewal. */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    if (order.type === 'Renew') return this.applyRenewal(order);
    if (order.type === 'ChangeDataDisk') return this.applyDiskChange(order);
    if (order.type === 'TrafficUpgrade') return this.applyBandwidthOrder(order);
    if (order.type === 'DayToMonth' || order.type === 'TransferToLong') {
      if (!this.conversions) throw new Error('计费方式转换暂不可用');
      return this.conversions.apply(order);
    }
    const req = order.request as InstanceRequest;
    const snap = await this.deps.catalogue.get();
    const now = this.deps.clock.now();
    const count = req.gpuTypeId ? 1 : (req.count ?? 1);
    // An image of my images (or one shared with a link) must still be usable when the order is fulfilled.
    const userImage = req.userImageId ? await this.deps.images.usableFor(order.userId, req.userImageId) : null;
    const rows = Array.from({ length: count }, (_, i) => this.newRow(order, req, snap, i, count, now, userImage));
    const created = await this.deps.db.transaction(async (tx) => {
      const inserted = await tx.insert(instances).values(rows).onConflictDoNothing().returning();
      for (const row of inserted) {
        if (row.gpuHeld > 0) await this.deps.inventory.reserve(tx, row.hostId!, row.gpuHeld);
        await this.logOp(tx, row, { action: 'create', actorId: order.createdBy, from: null, to: 'Pending', detail: `订单 ${order.orderUid}` });
      }
      return inserted;
    });
    for (const row of created) await this.submit(row);
    return { resourceId: rows.map((r) => r.id).join(',') };
  }

  private newRow(order: OrderRow, req: InstanceRequest, snap: Snapshot, i: number, count: number, now: Date, userImage: UsableImage | null): InstanceRow {
    const s = snap.settings;
    const host = req.placement.hostId ? snap.hosts.find((h) => h.id === req.placement.hostId) : undefined;
    const size = req.sizeId ? snap.sizes.find((x) => x.id === req.sizeId) : undefined;
    const app = req.applicationId ? snap.applications.find((a) => a.id === req.applicationId) : undefined;
    const gpuCount = req.gpuCount ?? 0;
    const postpaid = POSTPAID.includes(req.cycle);
    const unit = snap.prices.get(host ? priceKey('gpu', host.gpuTypeId) : priceKey('size', req.sizeId!))?.get(postpaid ? req.cycle : 'Hour');
    const hourly = unit ? discounted(unit) * BigInt(Math.max(gpuCount, 1)) : 0n;
    const freeDisk = host ? host.dataDiskFreeGb * gpuCount : 0;
    const extraGb = BigInt(Math.max(0, req.dataDiskGb - freeDisk));
    const base = req.name?.trim() || (app?.name ?? (host ? `${snap.gpuTypes.find((g) => g.id === host.gpuTypeId)?.name ?? 'GPU'} 实例` : (size?.name ?? '实例')));
    const prepaidHours = postpaid ? 0 : Number(HOURS_PER_UNIT[req.cycle]) * req.duration;
    return {
      id: instanceIdFor(order.id, i),
      userId: order.userId,
      createdBy: order.createdBy,
      category: order.category as InstanceCategory,
      name: count > 1 ? `${base}-${i + 1}` : base,
      status: 'Pending',
      noCard: false,
      lastError: null,
      regionId: req.placement.regionId,
      roomId: req.placement.roomId ?? null,
      hostId: host?.id ?? null,
      gpuTypeId: host?.gpuTypeId ?? null,
      gpuCount,
      gpuHeld: gpuCount,
      cardsHeldUntil: null,
      sizeId: size?.id ?? null,
      cpu: host ? host.cpuPerGpu * gpuCount : (size?.cpu ?? 0),
      memoryGb: host ? host.memoryGbPerGpu * gpuCount : (size?.memoryGb ?? 0),
      imageId: userImage ? userImage.baseImageId : (app?.imageId ?? req.imageId ?? null),
      userImageId: userImage?.id ?? null,
      applicationId: app?.id ?? null,
      // The free size is there even when the buyer asked for none: the disk is at least that big.
      dataDiskGb: Math.max(req.dataDiskGb, freeDisk),
      freeDataDiskGb: freeDisk,
      bandwidthMbps: size?.bandwidthMbps ?? 0,
      includedBandwidthMbps: size?.bandwidthMbps ?? 0,
      cycle: req.cycle,
      hourlyPrice: hourly,
      noCardHourlyPrice: postpaid ? s.noCardPricePerHour : 0n,
      bandwidthHourlyPrice: 0n,
      diskDailyPrice: postpaid ? extraGb * s.dataDiskPricePerGbDay : 0n,
      expireAt: postpaid ? null : new Date(now.getTime() + prepaidHours * 3600_000),
      autoRenew: false,
      autoRenewFailedFor: null,
      releaseAt: null,
      releaseNoticeAt: null,
      orderId: order.type === 'Usage' ? null : order.id,
      usageOrderId: order.type === 'Usage' ? order.id : null,
      meterRate: 0n,
      meterSince: null,
      meterSegment: null,
      meterMs: 0n,
      meterCharged: 0n,
      diskBilledUntil: postpaid && extraGb > 0n ? now : null,
      arrears: 0n,
      sshHost: null,
      sshPort: null,
      sshUser: 'root',
      sshPasswordEnc: this.deps.passwords.seal(newMachinePassword()),
      jupyterToken: randomBytes(16).toString('hex'),
      pendingOpId: `create:${instanceIdFor(order.id, i)}`,
      pendingAction: 'create:Pending',
      opStartedAt: now,
      startedAt: null,
      stoppedAt: null,
      releasedAt: null,
      createdAt: now,
      updatedAt: now,
    };
  }

  // --- actions -------------------------------------------------------------------------

  /** A person asks for an action: checked against the state machine, the balance and the host's free cards. */
  async act(user: UserRow, id: string, action: InstanceAction): Promise<Instance> {
    const found = await this.mustFind(user, id);
    if (action === 'startNoCard' && found.gpuCount === 0) throw new AppError('INSTANCE_STATE_INVALID', '该实例没有 GPU，直接开机即可（无卡模式仅用于 GPU 实例）');
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      return this.begin(tx, cur, action, { actor: 'user', actorId: user.id, detail: '' });
    });
    await this.submit(row);
    return this.get(user, id);
  }

  /** The system's own stop or release (billing, expiry, grace period). */
  async actAsSystem(id: string, action: 'stop' | 'release', detail: string): Promise<boolean> {
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      if (!canAct(action, cur.status, 'system')) return null;
      return this.begin(tx, cur, action, { actor: 'system', actorId: null, detail });
    });
    if (row) await this.submit(row);
    return row !== null;
  }

  /** Moves a locked instance by an action (state machine, operation log); the caller submits the row afterwards. */
  async begin(tx: Tx, cur: InstanceRow, action: InstanceAction, by: { actor: InstanceActor; actorId: string | null; detail: string }): Promise<InstanceRow> {
    if (!canAct(action, cur.status, by.actor)) {
      throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(cur.status)}，不能${InstanceActionLabel[action]}`);
    }
    const now = this.deps.clock.now();
    const set: Partial<InstanceRow> = {};
    if (action === 'start' || action === 'startNoCard') Object.assign(set, await this.prepareStart(tx, cur, action === 'startNoCard'), { cardsHeldUntil: null });
    if (action === 'release') set.releaseAt = null;
    const to = actionTarget(action, cur.noCard);
    const opId = `${action}:${cur.id}:${now.getTime()}`;
    const [row] = await tx
      .update(instances)
      .set({ ...set, status: to, lastError: null, pendingOpId: opId, pendingAction: `${action}:${cur.status}`, opStartedAt: now, updatedAt: now })
      .where(eq(instances.id, cur.id))
      .returning();
    await this.logOp(tx, row!, { action, actorId: by.actorId, from: cur.status, to, detail: by.detail });
    return row!;
  }

  /** Starting needs the balance (post-paid) and, with cards, free cards on the instance's own host. */
  private async prepareStart(tx: Tx, cur: InstanceRow, noCard: boolean): Promise<Partial<InstanceRow>> {
    if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) {
      throw new AppError('INSTANCE_EXPIRED', `已于 ${beijingTime(cur.expireAt)} 到期`);
    }
    if (POSTPAID.includes(cur.cycle) && cur.usageOrderId) {
      if (cur.arrears > 0n) {
        const paid = await this.deps.orders.chargeUsage(tx, cur.usageOrderId, cur.arrears, `arrears:${cur.id}:${cur.arrears}:${cur.updatedAt.getTime()}`, `${cur.name} 欠费结清`);
        if (paid < cur.arrears) throw new AppError('INSTANCE_ARREARS', `还欠 ${formatYuan(cur.arrears - paid)} 元，请充值后再开机`);
        await tx.update(instances).set({ arrears: 0n }).where(eq(instances.id, cur.id));
      }
      const hourly = runRate({ ...cur, noCard });
      const spendable = await this.deps.orders.spendable(cur.userId, tx);
      if (spendable < hourly) throw new AppError('INSUFFICIENT_BALANCE', `开机需余额不少于 ${formatYuan(hourly)} 元（1 小时费用）`);
    }
    if (noCard || cur.gpuCount === 0) {
      // Cards kept for it since a migration are not needed in no-card mode: they go back to the host.
      if (cur.gpuHeld > 0) await this.deps.inventory.release(tx, cur.hostId!, cur.gpuHeld);
      return { noCard, gpuHeld: 0, releaseAt: null };
    }
    // A migrated instance starts on the cards its migration reserved on the new host.
    if (cur.gpuHeld >= cur.gpuCount) return { noCard: false, gpuHeld: cur.gpuHeld, releaseAt: null };
    try {
      await this.deps.inventory.reserve(tx, cur.hostId!, cur.gpuCount);
    } catch (e) {
      if (e instanceof AppError && e.code === 40920001) {
        throw new AppError('INSTANCE_GPU_BUSY', `所在主机当前空闲卡不足 ${cur.gpuCount} 卡；可以迁移到其他主机（免费，数据随实例迁移），或以无卡模式开机（不挂载 GPU），或稍后再试`);
      }
      throw e;
    }
    return { noCard: false, gpuHeld: cur.gpuCount, releaseAt: null };
  }

  // --- renewal of prepaid time ------------------------------------------------------------

  /** What `duration` more units of the instance's own cycle cost (the same price function as buying). */
  async renewQuote(user: UserRow, id: string, req: RenewInstanceRequest): Promise<Quote> {
    const row = await this.mustFind(user, id);
    if (POSTPAID.includes(row.cycle)) throw new AppError('INSTANCE_STATE_INVALID', '按量计费实例随用随付，无需续费');
    if (row.status === 'Deleting' || row.status === 'Failed') throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能续费`);
    const snap = await this.deps.catalogue.get();
    const gpu = row.gpuTypeId ? snap.gpuTypes.find((g) => g.id === row.gpuTypeId) : undefined;
    const size = row.sizeId ? snap.sizes.find((x) => x.id === row.sizeId) : undefined;
    return this.deps.pricing.quoteRenewal(
      {
        category: row.category,
        gpuTypeId: row.gpuTypeId,
        sizeId: row.sizeId,
        quantity: row.gpuTypeId ? row.gpuCount : 1,
        productName: `续费 ${row.name}（${gpu ? `${gpu.name} × ${row.gpuCount}` : (size?.name ?? row.sizeId)}）`,
        cycle: row.cycle,
        duration: req.duration,
        dataDiskGb: row.dataDiskGb,
        freeDataDiskGb: row.freeDataDiskGb,
        extraBandwidthMbps: row.bandwidthMbps - row.includedBandwidthMbps,
        regionId: row.regionId,
        voucherId: req.voucherId,
      },
      user,
    );
  }

  /** A Renew order for the instance, to be paid like any order; paying extends expireAt. */
  async renew(user: UserRow, id: string, req: RenewInstanceRequest): Promise<Order> {
    const quote = await this.renewQuote(user, id, { duration: req.duration });
    const row = await this.mustFind(user, id);
    return this.deps.orders.create({
      payerId: row.userId,
      createdBy: user.id,
      kind: row.category === 'Gpu' || row.category === 'App' ? 'Personal' : 'default',
      type: 'Renew',
      category: row.category,
      request: { instanceId: row.id, duration: req.duration },
      quote,
      description: quote.lines[0]!.name,
    });
  }

  /** Extends a paid renewal's instance, once per order; an expired, stopped instance may run again. */
  private async applyRenewal(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, duration } = order.request as { instanceId: string; duration: number };
    await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, instanceId);
      const [done] = await tx
        .select({ id: instanceOperations.id })
        .from(instanceOperations)
        .where(and(eq(instanceOperations.instanceId, instanceId), eq(instanceOperations.action, 'renew'), eq(instanceOperations.detail, order.orderUid)));
      if (done) return;
      await this.extendExpiry(tx, cur, duration, { action: 'renew', actorId: order.createdBy, detail: order.orderUid });
    });
    return { resourceId: instanceId };
  }

  /** `duration` more units of the cycle from the expiry (or from now if expired), cancelling a scheduled release; logged. */
  async extendExpiry(tx: Tx, cur: InstanceRow, duration: number, log: { action: string; actorId: string | null; detail: string }): Promise<Date> {
    const now = this.deps.clock.now();
    const from = cur.expireAt && cur.expireAt > now ? cur.expireAt : now;
    const expireAt = new Date(from.getTime() + Number(HOURS_PER_UNIT[cur.cycle]) * duration * 3600_000);
    await tx.update(instances).set({ expireAt, releaseAt: null, releaseNoticeAt: null, updatedAt: now }).where(eq(instances.id, cur.id));
    await this.logOp(tx, cur, { action: log.action, actorId: log.actorId, from: cur.status, to: cur.status, detail: log.detail });
    return expireAt;
  }

  // --- tasks on a stopped machine: save as image, expand the data disk ---------------------

  /**
   * Saves the stopped machine as an image of my images (Build until the driver reports it): the
   * instance is Operating meanwhile and goes back where it was.
   */
  async saveImage(user: UserRow, id: string, req: SaveImageRequest): Promise<UserImage> {
    await this.mustFind(user, id);
    const { row, image } = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      this.assertTask(cur, 'saveImage');
      const imageId = randomUUID();
      const opId = `saveImage:${imageId}`;
      const image = await this.deps.images.createBuilding(tx, {
        id: imageId,
        ownerId: cur.userId,
        createdBy: user.id,
        name: req.name,
        opId,
        source: { id: cur.id, name: cur.name, category: cur.category, imageId: cur.imageId, gpuTypeId: cur.gpuTypeId },
      });
      const row = await this.beginTask(tx, cur, 'saveImage', { actorId: user.id, opId, param: imageId, detail: `镜像「${req.name}」` });
      return { row, image };
    });
    await this.submit(row);
    return this.deps.images.view(image, await this.deps.catalogue.get());
  }

  /** A task needs a stopped machine: a running one is told to stop first, anything else is refused. */
  assertTask(cur: InstanceRow, task: InstanceTask): void {
    if (canRunTask(task, cur.status)) return;
    const on: Status[] = ['Running', 'Starting', 'Restarting', 'Stopping', 'Shutdowning'];
    if (on.includes(cur.status)) throw new AppError('INSTANCE_MUST_BE_STOPPED', `实例${InstanceStatus.label(cur.status)}，请先关机再${InstanceTaskLabel[task]}`);
    throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(cur.status)}，不能${InstanceTaskLabel[task]}`);
  }

  /** The largest data disk the instance can have: its host's limit, or the product's. */
  maxDiskGb(row: InstanceRow, snap: Snapshot): number {
    const host = row.hostId ? snap.hosts.find((h) => h.id === row.hostId) : undefined;
    return Math.min(MAX_DATA_DISK_GB, host?.dataDiskMaxGb ?? MAX_DATA_DISK_GB);
  }

  /** Why the data disk cannot be expanded to `newGb` now, as the error the request gets. */
  checkResize(cur: InstanceRow, newGb: number, snap: Snapshot): void {
    this.assertTask(cur, 'resizeDisk');
    if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再扩容');
    if (newGb <= cur.dataDiskGb) throw new AppError('DATA_DISK_SIZE_INVALID', `新容量须大于当前的 ${cur.dataDiskGb} GB（数据盘只能扩容，不能缩小）`);
    const max = this.maxDiskGb(cur, snap);
    if (newGb > max) throw new AppError('DATA_DISK_SIZE_INVALID', `该实例数据盘最大 ${max} GB`);
  }

  /**
   * Post-paid: the expansion starts at once, with nothing to pay up front; the daily data-disk
   * charge follows the new size (see applyResize).
   */
  async expandPostpaid(user: UserRow, id: string, newGb: number): Promise<Instance> {
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      if (!POSTPAID.includes(cur.cycle)) throw new AppError('INSTANCE_STATE_INVALID', '包周期实例扩容需先支付扩容订单');
      this.checkResize(cur, newGb, snap);
      const opId = `resizeDisk:${cur.id}:${this.deps.clock.now().getTime()}`;
      return this.beginTask(tx, cur, 'resizeDisk', { actorId: user.id, opId, param: String(newGb), detail: `按量计费：${cur.dataDiskGb} GB → ${newGb} GB` });
    });
    await this.submit(row);
    return this.get(user, id);
  }

  /**
   * Fulfils a paid ChangeDataDisk order, once per order: the disk grows once the driver reports it.
   * An instance that cannot be expanded now (started again since, expired, already as large) fails
   * the order here, which refunds it; a driver failure later refunds it too (onFailed).
   */
  private async applyDiskChange(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, dataDiskGb } = order.request as { instanceId: string; dataDiskGb: number };
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, instanceId);
      const [done] = await tx
        .select({ id: instanceOperations.id })
        .from(instanceOperations)
        .where(and(eq(instanceOperations.instanceId, instanceId), eq(instanceOperations.action, 'resizeDisk'), like(instanceOperations.detail, `${order.orderUid}%`)));
      if (done) return null;
      this.checkResize(cur, dataDiskGb, snap);
      return this.beginTask(tx, cur, 'resizeDisk', {
        actorId: order.createdBy,
        opId: `resizeDisk:${order.id}`,
        param: `${dataDiskGb}:${order.id}`,
        detail: `${order.orderUid}：${cur.dataDiskGb} GB → ${dataDiskGb} GB`,
      });
    });
    if (row) await this.submit(row);
    return { resourceId: instanceId };
  }

  /**
   * The instance goes Operating (Pending_Migrate) with the task pending. pendingAction is
   * "task:statusBefore:param", where param is the image id (saveImage), "newGb[:orderId]"
   * (resizeDisk) or the target host's id (migrate).
   */
  private async beginTask(tx: Tx, cur: InstanceRow, task: InstanceTask, o: { actorId: string | null; opId: string; param: string; detail: string }): Promise<InstanceRow> {
    const now = this.deps.clock.now();
    const [row] = await tx
      .update(instances)
      .set({ status: taskStatus(task), lastError: null, pendingOpId: o.opId, pendingAction: `${task}:${cur.status}:${o.param}`, opStartedAt: now, updatedAt: now })
      .where(eq(instances.id, cur.id))
      .returning();
    await this.logOp(tx, row!, { action: task, actorId: o.actorId, from: cur.status, to: taskStatus(task), detail: o.detail });
    return row!;
  }

  /**
   * The data disk has grown. Post-paid: its daily charge follows the new size; if the disk was
   * within the free size until now, daily charging starts now; if today's day was already charged
   * at the old size, the difference for the rest of that day is charged at once (arrears if the
   * balance cannot pay). Prepaid: paid up front by the order; renewals price the new size.
   */
  private async applyResize(tx: Tx, row: InstanceRow, newGb: number, at: Date, settings: Settings): Promise<Partial<InstanceRow>> {
    const set: Partial<InstanceRow> = { dataDiskGb: newGb };
    if (!POSTPAID.includes(row.cycle)) return set;
    const daily = BigInt(Math.max(0, newGb - row.freeDataDiskGb)) * settings.dataDiskPricePerGbDay;
    set.diskDailyPrice = daily;
    if (daily > 0n && !row.diskBilledUntil) set.diskBilledUntil = at;
    else if (row.diskBilledUntil && row.diskBilledUntil > at && daily > row.diskDailyPrice && row.usageOrderId) {
      const ms = BigInt(row.diskBilledUntil.getTime() - at.getTime());
      const due = ((daily - row.diskDailyPrice) * ms + DAY_MS_N - 1n) / DAY_MS_N;
      const paid = await this.deps.orders.chargeUsage(tx, row.usageOrderId, due, `disk-resize:${row.pendingOpId}`, `${row.name} 数据盘扩容至 ${newGb} GB（当日剩余时间）`);
      set.arrears = row.arrears + (due - paid);
    }
    return set;
  }

  // --- bandwidth of e-commerce machines (priced and checked in traffic.ts) ---------------------

  /**
   * Starts a bandwidth change that needs no payment first (post-paid, or a prepaid downgrade): the
   * instance goes Operating and the driver applies it; `detail` says what it costs from then on.
   */
  async beginBandwidthChange(user: UserRow, id: string, change: BandwidthChange, check: (cur: InstanceRow) => void, detail: string): Promise<Instance> {
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      check(cur);
      const opId = `changeBandwidth:${cur.id}:${this.deps.clock.now().getTime()}`;
      return this.beginTask(tx, cur, 'changeBandwidth', { actorId: user.id, opId, param: `${change.mbps}::${change.hourly}`, detail });
    });
    await this.submit(row);
    return this.get(user, id);
  }

  /** Posts a prepaid downgrade's refund when the driver has applied it (traffic.ts); answers what came back. */
  private bandwidthRefund?: (tx: Tx, row: InstanceRow, mbps: number, opId: string) => Promise<bigint>;

  useBandwidthRefund(refund: (tx: Tx, row: InstanceRow, mbps: number, opId: string) => Promise<bigint>): void {
    this.bandwidthRefund = refund;
  }

  /** Why the instance cannot go to `mbps` of bandwidth now, as the error the request gets. */
  checkBandwidth(cur: InstanceRow, mbps: number, settings: Settings): void {
    if (cur.category !== 'Ebusiness') throw new AppError('BANDWIDTH_NOT_EBUSINESS');
    this.assertTask(cur, 'changeBandwidth');
    if (mbps === cur.bandwidthMbps) throw new AppError('BANDWIDTH_INVALID', `当前带宽已是 ${mbps} Mbps`);
    const choices = bandwidthChoices(cur.includedBandwidthMbps, settings.bandwidthStepsMbps);
    if (!choices.includes(mbps)) throw new AppError('BANDWIDTH_INVALID', `可选带宽：${choices.join('、')} Mbps`);
  }

  /**
   * Fulfils a paid TrafficUpgrade order once: the change starts now and applies when the driver
   * reports it. An instance that cannot take it any more (released, downgraded or upgraded since)
   * fails the order here, which refunds it; a driver failure refunds it too (onFailed).
   */
  private async applyBandwidthOrder(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, bandwidthMbps, fromMbps } = order.request as { instanceId: string; bandwidthMbps: number; fromMbps: number };
    const { settings } = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, instanceId);
      const [done] = await tx
        .select({ id: instanceOperations.id })
        .from(instanceOperations)
        .where(and(eq(instanceOperations.instanceId, instanceId), eq(instanceOperations.action, 'changeBandwidth'), like(instanceOperations.detail, `${order.orderUid}%`)));
      if (done) return null;
      if (cur.bandwidthMbps !== fromMbps) throw new AppError('INSTANCE_STATE_INVALID', '下单后实例带宽已变化，请重新选择');
      this.checkBandwidth(cur, bandwidthMbps, settings);
      return this.beginTask(tx, cur, 'changeBandwidth', {
        actorId: order.createdBy,
        opId: `changeBandwidth:${order.id}`,
        param: `${bandwidthMbps}:${order.id}:0`,
        detail: `${order.orderUid}：${cur.bandwidthMbps} Mbps → ${bandwidthMbps} Mbps`,
      });
    });
    if (row) await this.submit(row);
    return { resourceId: instanceId };
  }

  /**
   * The driver applied the new bandwidth. Post-paid: a running meter is settled up to that moment at
   * the old rate and goes on at the new one (a new segment), so each second is charged at the
   * bandwidth it had. Prepaid: an upgrade was paid up front by its order; a downgrade's refund is
   * posted now (traffic.ts), in this transaction; renewals price the new bandwidth.
   */
  private async applyBandwidth(tx: Tx, row: InstanceRow, change: BandwidthChange, at: Date): Promise<{ set: Partial<InstanceRow>; refunded: bigint }> {
    const set: Partial<InstanceRow> = { bandwidthMbps: change.mbps };
    if (!POSTPAID.includes(row.cycle)) {
      const refunded = this.bandwidthRefund && row.pendingOpId ? await this.bandwidthRefund(tx, row, change.mbps, row.pendingOpId) : 0n;
      return { set, refunded };
    }
    set.bandwidthHourlyPrice = change.hourly;
    if (row.meterSegment && row.meterSince) {
      const settled = await this.deps.meter.settle(tx, row, at);
      Object.assign(set, settled, this.meterStart({ ...row, bandwidthHourlyPrice: change.hourly }, at));
    }
    return { set, refunded: 0n };
  }

  // --- migration of a stopped instance to another host (free of charge) -------------------

  /**
   * Moves a stopped instance, data disk included, to another host of the same GPU type in the same
   * region (its own room first), so that it can start with cards when its own host has none free.
   * Free of charge: nothing is ordered or charged. The target's cards are reserved at once (two
   * migrations cannot take the same card) and the instance is Pending_Migrate until the driver
   * reports: done, it is Stopped on the new host and keeps those cards for its next start; failed,
   * it is back where it was on the old host and the cards go back to the target.
   */
  async migrate(user: UserRow, id: string, req: MigrateInstanceRequest): Promise<Instance> {
    await this.mustFind(user, id);
    // Read before the transaction: on PGlite a query outside it would wait for it to end.
    const snap = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      this.assertTask(cur, 'migrate');
      if (!cur.hostId || !cur.gpuTypeId || cur.gpuCount === 0) throw new AppError('MIGRATE_NOT_GPU', '该实例没有 GPU，无需迁移');
      if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再迁移');
      const candidates = this.migrationTargets(cur, snap);
      if (req.hostId && !candidates.some((h) => h.id === req.hostId)) {
        throw new AppError('MIGRATE_HOST_INVALID', `主机 ${req.hostId} 不能作为迁移目标：须为同一地区、同一 GPU 型号的其他主机，且数据盘上限不小于 ${cur.dataDiskGb} GB`);
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
      return this.beginTask(tx, cur, 'migrate', {
        actorId: user.id,
        opId: `migrate:${cur.id}:${this.deps.clock.now().getTime()}`,
        param: target.id,
        detail: `${from} → ${target.name}（${cur.gpuCount} 卡，数据盘 ${cur.dataDiskGb} GB，免费）`,
      });
    });
    await this.submit(row);
    return this.get(user, id);
  }

  /**
   * A migrated instance that did not start within the hold gives its new host's cards back to the
   * pool; it starts later like any stopped instance (free cards permitting). Once per instance, under
   * its row lock.
   */
  async releaseHeldCards(id: string): Promise<boolean> {
    return this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      const now = this.deps.clock.now();
      if (!cur.cardsHeldUntil || cur.cardsHeldUntil > now || cur.gpuHeld === 0 || !TASK_FROM.migrate.includes(cur.status)) return false;
      await this.deps.inventory.release(tx, cur.hostId!, cur.gpuHeld);
      const [moved] = await tx.update(instances).set({ gpuHeld: 0, cardsHeldUntil: null, updatedAt: now }).where(eq(instances.id, id)).returning();
      await this.logOp(tx, moved!, { action: 'releaseCards', actorId: null, from: cur.status, to: cur.status, detail: `迁移后未在保留时间内开机，预留的 ${cur.gpuHeld} 张 GPU 已释放；开机时按主机空闲情况重新分配` });
      return true;
    });
  }

  /** The hosts the migration dialog offers, with their free cards now. */
  async migrationTargetList(user: UserRow, id: string): Promise<MigrationTarget[]> {
    const cur = await this.mustFind(user, id);
    if (!cur.hostId || !cur.gpuTypeId || cur.gpuCount === 0) throw new AppError('MIGRATE_NOT_GPU', '该实例没有 GPU，无需迁移');
    const snap = await this.deps.catalogue.get();
    const rooms = new Map(snap.rooms.map((r) => [r.id, r.name]));
    return this.migrationTargets(cur, snap).map((h) => ({
      hostId: h.id,
      hostName: h.name,
      roomName: rooms.get(h.roomId) ?? h.roomId,
      sameRoom: h.roomId === cur.roomId,
      gpuFree: h.gpuFree,
      available: h.gpuFree >= cur.gpuCount,
    }));
  }

  /** Hosts the instance may move to: active, same GPU type, same region, not its own, room for its cards and data disk; its own room first, then the freest. */
  private migrationTargets(cur: InstanceRow, snap: Snapshot): Snapshot['hosts'] {
    const rooms = new Map(snap.rooms.filter((r) => r.regionId === cur.regionId && r.active).map((r) => [r.id, r]));
    return snap.hosts
      .filter((h) => h.active && h.id !== cur.hostId && h.gpuTypeId === cur.gpuTypeId && rooms.has(h.roomId) && h.gpuTotal >= cur.gpuCount && h.dataDiskMaxGb >= cur.dataDiskGb)
      .sort((a, b) => Number(b.roomId === cur.roomId) - Number(a.roomId === cur.roomId) || b.gpuFree - a.gpuFree || a.id.localeCompare(b.id));
  }

  /** Reserves `count` cards on the first candidate that has them (the inventory's guard decides races), or null. */
  private async reserveTarget(tx: Tx, candidates: Snapshot['hosts'], count: number): Promise<Snapshot['hosts'][number] | null> {
    for (const host of candidates) {
      try {
        await this.deps.inventory.reserve(tx, host.id, count);
        return host;
      } catch (e) {
        if (!(e instanceof AppError && e.code === 40920001)) throw e;
      }
    }
    return null;
  }

  async rename(user: UserRow, id: string, name: string): Promise<Instance> {
    const row = await this.mustFind(user, id);
    if (row.status === 'Deleting') throw new AppError('INSTANCE_STATE_INVALID', '实例正在销毁，不能改名');
    await this.deps.db.transaction(async (tx) => {
      await tx.update(instances).set({ name, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      await this.logOp(tx, row, { action: 'rename', actorId: user.id, from: row.status, to: row.status, detail: `${row.name} → ${name}` });
    });
    return this.get(user, id);
  }

  /** A new root password, shown once in the answer (and afterwards on the access tab). */
  async resetPassword(user: UserRow, id: string): Promise<Instance> {
    const row = await this.mustFind(user, id);
    if (!canResetPassword(row.status)) {
      throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能重置密码`);
    }
    await this.deps.db.transaction(async (tx) => {
      await tx.update(instances).set({ sshPasswordEnc: this.deps.passwords.seal(newMachinePassword()), updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      await this.logOp(tx, row, { action: 'resetPassword', actorId: user.id, from: row.status, to: row.status, detail: '' });
    });
    return this.get(user, id);
  }

  /** Sends the instance's pending operation to the driver; safe to repeat (the driver dedupes by op id). */
  async submit(row: InstanceRow): Promise<void> {
    // The boot half of a creation is the driver's own follow-up: there is nothing to send.
    if (!row.pendingOpId || !row.pendingAction || row.pendingOpId.endsWith(':boot')) return;
    const d = this.deps.driver;
    const [action, , param = ''] = row.pendingAction.split(':') as [InstanceAction | InstanceTask | 'create', string, string?];
    try {
      if (action === 'create') await d.create(row.pendingOpId, row.id, this.specOf(row));
      else if (action === 'start' || action === 'startNoCard') await d.start(row.pendingOpId, row.id, { gpu: !row.noCard && row.gpuCount > 0 });
      else if (action === 'stop') await d.stop(row.pendingOpId, row.id);
      else if (action === 'restart') await d.restart(row.pendingOpId, row.id);
      else if (action === 'release') await d.destroy(row.pendingOpId, row.id);
      else if (action === 'saveImage') await d.saveImage(row.pendingOpId, row.id, param);
      else if (action === 'resizeDisk') await d.resizeDisk(row.pendingOpId, row.id, Number(param));
      else if (action === 'changeBandwidth') await d.changeBandwidth(row.pendingOpId, row.id, Number(param));
      else if (action === 'migrate') await d.migrate(row.pendingOpId, row.id, taskOf(row)!.param);
    } catch (e) {
      // The reconciler sends it again; the instance shows the operation under way meanwhile.
      this.deps.log.warn({ instance: row.id, op: row.pendingOpId, err: (e as Error).message }, 'compute driver did not take the operation; will retry');
    }
  }

  private specOf(row: InstanceRow): MachineSpec {
    return {
      hostId: row.hostId,
      regionId: row.regionId,
      gpuCount: row.gpuCount,
      cpu: row.cpu,
      memoryGb: row.memoryGb,
      imageId: row.imageId,
      userImageRef: row.userImageId,
      dataDiskGb: row.dataDiskGb,
      bandwidthMbps: row.bandwidthMbps,
      sshUser: row.sshUser,
      sshPassword: this.deps.passwords.open(row.sshPasswordEnc),
      jupyterToken: row.jupyterToken,
      appPort: null,
    };
  }

  // --- what the driver reports ------------------------------------------------------------

  /** Applies one driver event. Late, repeated or foreign events change nothing. */
  async applyEvent(e: DriverEvent): Promise<void> {
    // Read before the transaction: on PGlite a query outside it would wait for it to end.
    const snap = await this.deps.catalogue.get();
    const { settings } = snap;
    const after = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(instances).where(eq(instances.id, e.instanceId)).for('update');
      if (!row || row.releasedAt) return null;
      if (e.kind === 'lost') return this.onLost(tx, row, e);
      if (e.kind === 'found') return this.onFound(tx, row, e);
      if (e.opId !== row.pendingOpId) return null;
      return e.ok ? this.onDone(tx, row, e, settings, snap) : this.onFailed(tx, row, e);
    });
    if (after?.notice) await this.notifyOwner(after.row.userId, after.notice);
    if (after?.refundOrder) await this.deps.orders.refundDelivered(after.refundOrder, e.error ?? '实例创建失败');
  }

  private async onDone(tx: Tx, row: InstanceRow, e: DriverEvent, settings: Settings, snap: Snapshot) {
    const from = row.status;
    const set: Partial<InstanceRow> = { lastError: null };
    let to: Status = from;
    let clearOp = true;
    let detail = e.kind === 'destroy' ? '已释放' : '';
    const task = taskOf(row);
    switch (e.kind) {
      case 'saveImage': {
        if (!task) return null;
        to = task.before;
        const failed = await this.deps.images.markBuilt(tx, task.param, e.imageSizeGb);
        if (failed) set.lastError = failed;
        detail = failed ?? `镜像已制作完成${e.imageSizeGb !== undefined ? `（${e.imageSizeGb} GB）` : ''}`;
        break;
      }
      case 'resizeDisk': {
        if (!task) return null;
        to = task.before;
        const newGb = Number(task.param.split(':')[0]);
        Object.assign(set, await this.applyResize(tx, row, newGb, e.at, settings));
        detail = `数据盘 ${row.dataDiskGb} GB → ${newGb} GB`;
        break;
      }
      case 'changeBandwidth': {
        if (task?.task !== 'changeBandwidth') return null;
        to = task.before;
        const change = bandwidthTaskParam(task.param);
        const applied = await this.applyBandwidth(tx, row, change, e.at);
        Object.assign(set, applied.set);
        detail = `带宽 ${row.bandwidthMbps} Mbps → ${change.mbps} Mbps${applied.refunded > 0n ? `，退还 ¥${formatYuan(applied.refunded)}` : ''}`;
        break;
      }
      case 'migrate': {
        if (task?.task !== 'migrate') return null;
        // Stopped on the new host, keeping the cards reserved there for its next start; anything held on the old host goes back.
        const target = snap.hosts.find((h) => h.id === task.param);
        if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
        to = MIGRATE_DONE_STATUS;
        Object.assign(set, {
          hostId: task.param,
          roomId: target?.roomId ?? row.roomId,
          noCard: false,
          gpuHeld: row.gpuCount,
          cardsHeldUntil: new Date(e.at.getTime() + settings.migrateHoldMinutes * 60_000),
          ...(e.access ? { sshHost: e.access.sshHost, sshPort: e.access.sshPort } : {}),
        });
        const oldName = snap.hosts.find((h) => h.id === row.hostId)?.name ?? row.hostId;
        detail = `已迁移：${oldName} → ${target?.name ?? task.param}，GPU 保留 ${holdText(settings.migrateHoldMinutes)}`;
        break;
      }
      case 'create':
        to = 'Starting';
        Object.assign(set, { sshHost: e.access?.sshHost ?? null, sshPort: e.access?.sshPort ?? null, pendingOpId: `${row.pendingOpId}:boot` });
        clearOp = false;
        break;
      case 'boot':
      case 'start':
        to = 'Running';
        Object.assign(set, { startedAt: e.at, stoppedAt: null, releaseAt: null, ...this.meterStart(row, e.at) });
        break;
      case 'restart':
        to = 'Running';
        break;
      case 'stop':
        to = row.noCard ? 'Shutdown' : 'Stopped';
        Object.assign(set, await this.meterStop(tx, row, e.at), { stoppedAt: e.at, gpuHeld: 0, releaseAt: releaseAfterStop(row, e.at, settings), ...METER_OFF });
        if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
        break;
      case 'destroy':
        Object.assign(set, await this.meterStop(tx, row, e.at));
        if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
        Object.assign(set, { releasedAt: e.at, gpuHeld: 0, ...METER_OFF });
        if (row.usageOrderId) await this.deps.orders.finishUsage(tx, row.usageOrderId);
        break;
      default:
        return null;
    }
    if (clearOp) Object.assign(set, { pendingOpId: null, pendingAction: null, opStartedAt: null });
    const [moved] = await tx.update(instances).set({ ...set, status: to, updatedAt: this.deps.clock.now() }).where(eq(instances.id, row.id)).returning();
    await this.logOp(tx, moved!, { action: `done:${e.kind}`, actorId: null, from, to, detail });
    return { row: moved!, notice: null, refundOrder: null };
  }

  /** A failed operation: creation ends in Failed (and a refund); anything else goes back where it was, marked OperateFail. */
  private async onFailed(tx: Tx, row: InstanceRow, e: DriverEvent) {
    const from = row.status;
    const creating = e.kind === 'create' || e.kind === 'boot';
    const before = (row.pendingAction?.split(':')[1] ?? 'Stopped') as Status;
    const to: Status = creating ? 'Failed' : before;
    const set: Partial<InstanceRow> = { lastError: e.error ?? '操作失败', pendingOpId: null, pendingAction: null, opStartedAt: null };
    let refundOrder: string | null = null;
    if (creating || (e.kind === 'start' && row.gpuHeld > 0)) {
      if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
      set.gpuHeld = 0;
    }
    if (creating) {
      if (row.orderId) refundOrder = row.orderId;
      if (row.usageOrderId) await this.deps.orders.finishUsage(tx, row.usageOrderId);
    }
    let notice = creating ? `您的实例「${row.name}」创建失败（${e.error ?? '未知原因'}），订单款项已原路退回。` : null;
    const task = taskOf(row);
    if (task?.task === 'saveImage') await this.deps.images.markFailed(tx, task.param, e.error ?? '镜像制作失败');
    // A failed migration leaves the instance on its old host: the target's cards go back.
    if (task?.task === 'migrate') {
      await this.deps.inventory.release(tx, task.param, row.gpuCount);
      notice = `您的实例「${row.name}」迁移失败（${e.error ?? '未知原因'}），实例仍在原主机、数据完好，可稍后重试迁移或使用无卡模式开机。`;
    }
    if (task?.task === 'resizeDisk') {
      const orderId = task.param.split(':')[1];
      if (orderId) {
        refundOrder = orderId;
        notice = `您的实例「${row.name}」数据盘扩容失败（${e.error ?? '未知原因'}），扩容订单款项已原路退回。`;
      }
    }
    if (task?.task === 'changeBandwidth') {
      const { orderId } = bandwidthTaskParam(task.param);
      if (orderId) {
        refundOrder = orderId;
        notice = `您的实例「${row.name}」带宽升级失败（${e.error ?? '未知原因'}），升级订单款项已原路退回。`;
      }
    }
    const [moved] = await tx.update(instances).set({ ...set, status: to, updatedAt: this.deps.clock.now() }).where(eq(instances.id, row.id)).returning();
    await this.logOp(tx, moved!, { action: `fail:${e.kind}`, actorId: null, from, to, detail: e.error ?? '' });
    return { row: moved!, notice, refundOrder };
  }

  private async onLost(tx: Tx, row: InstanceRow, e: DriverEvent) {
    if (row.status === 'Unknown' || row.status === 'Pending' || row.status === 'Failed' || row.status === 'Deleting') return null;
    const { arrears } = await this.meterStop(tx, row, e.at);
    const [moved] = await tx
      .update(instances)
      .set({ status: 'Unknown', lastError: e.error, arrears, ...METER_OFF, updatedAt: this.deps.clock.now() })
      .where(eq(instances.id, row.id))
      .returning();
    await this.logOp(tx, moved!, { action: 'lost', actorId: null, from: row.status, to: 'Unknown', detail: e.error ?? '' });
    return { row: moved!, notice: `您的实例「${row.name}」所在主机暂时失联，期间不计费，恢复后会自动更新状态。`, refundOrder: null };
  }

  /** The host is back: the instance is what the machine is now, and its pending operation is retried by the reconciler. */
  private async onFound(tx: Tx, row: InstanceRow, e: DriverEvent) {
    if (row.status !== 'Unknown') return null;
    const running = e.power === 'running';
    // A task (save image, expand disk) under way when the host went away goes on: its outcome is still to come.
    const goesOn = !running && taskOf(row) !== null;
    const task = taskOf(row);
    const to: Status = goesOn ? taskStatus(task!.task) : running ? 'Running' : row.noCard ? 'Shutdown' : 'Stopped';
    // A migration that does not go on gives the target's cards back.
    if (!goesOn && task?.task === 'migrate') await this.deps.inventory.release(tx, task.param, row.gpuCount);
    const set: Partial<InstanceRow> = goesOn ? { lastError: null, opStartedAt: e.at } : { lastError: null, pendingOpId: null, pendingAction: null, opStartedAt: null };
    if (running) Object.assign(set, this.meterStart(row, e.at));
    else {
      if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
      Object.assign(set, { gpuHeld: 0, stoppedAt: row.stoppedAt ?? e.at });
    }
    const [moved] = await tx.update(instances).set({ ...set, status: to, updatedAt: this.deps.clock.now() }).where(eq(instances.id, row.id)).returning();
    await this.logOp(tx, moved!, { action: 'found', actorId: null, from: 'Unknown', to, detail: '主机恢复' });
    return { row: moved!, notice: null, refundOrder: null };
  }

  // --- metering hooks (the arithmetic is in billing.ts) ------------------------------------

  private meterStart(row: InstanceRow, at: Date): Partial<InstanceRow> {
    if (!POSTPAID.includes(row.cycle)) return {};
    return { meterRate: runRate(row), meterSince: at, meterSegment: at, meterMs: 0n, meterCharged: 0n };
  }

  /** Charges the run up to `at` (billing.ts owns the arithmetic); the arrears it leaves stay on the instance. */
  private async meterStop(tx: Tx, row: InstanceRow, at: Date): Promise<Pick<InstanceRow, 'arrears'>> {
    const { arrears } = await this.deps.meter.settle(tx, row, at);
    return { arrears };
  }

  async notifyOwner(userId: string, text: string): Promise<void> {
    await this.deps.notify(userId, text).catch((e) => this.deps.log.warn({ userId, err: (e as Error).message }, 'notice not sent'));
  }


  // --- reading ------------------------------------------------------------------------------

  async list(user: UserRow, q: { filterBy?: string; search?: string; page: number; pageSize: number }) {
    let f: Record<string, string>;
    try {
      f = parseFilterBy(q.filterBy);
    } catch (e) {
      throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
    }
    const conds: SQL[] = [eq(instances.userId, payerIdOf(user)), isNull(instances.releasedAt)];
    for (const [key, value] of Object.entries(f)) {
      if (key === 'category') conds.push(eq(instances.category, value as InstanceCategory));
      else if (key === 'status' && (InstanceStatus.values as string[]).includes(value)) conds.push(eq(instances.status, value as Status));
      else if (key === 'region') conds.push(eq(instances.regionId, value));
      else throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选 ${key}=${value}`);
    }
    if (user.isChild) conds.push(inArray(instances.category, childCategories(user)));
    if (q.search) {
      const like = `%${q.search.replace(/[%_\\]/g, '\\$&')}%`;
      conds.push(or(ilike(instances.name, like), ilike(sql`${instances.id}::text`, like))!);
    }
    const where = and(...conds);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(instances).where(where);
    const rows = await this.deps.db.select().from(instances).where(where).orderBy(desc(instances.createdAt), desc(instances.id)).limit(q.pageSize).offset((q.page - 1) * q.pageSize);
    const snap = await this.deps.catalogue.get();
    const names = await this.deps.images.namesOf(rows.flatMap((r) => (r.userImageId ? [r.userImageId] : [])));
    return { items: rows.map((r) => this.view(r, snap, names)), total, page: q.page, pageSize: q.pageSize };
  }

  async get(user: UserRow, id: string): Promise<Instance> {
    const row = await this.mustFind(user, id);
    const names = await this.deps.images.namesOf(row.userImageId ? [row.userImageId] : []);
    return this.view(row, await this.deps.catalogue.get(), names);
  }

  async operations(user: UserRow, q: { filterBy?: string; page: number; pageSize: number }) {
    let f: Record<string, string>;
    try {
      f = parseFilterBy(q.filterBy);
    } catch (e) {
      throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
    }
    const conds: SQL[] = [eq(instanceOperations.userId, payerIdOf(user))];
    for (const [key, value] of Object.entries(f)) {
      if (key === 'instance' && /^[0-9a-f-]{36}$/i.test(value)) conds.push(eq(instanceOperations.instanceId, value));
      else if (key === 'actor' && /^[0-9a-f-]{36}$/i.test(value)) conds.push(eq(instanceOperations.actorId, value));
      else if (key === 'category') conds.push(eq(instances.category, value as InstanceCategory));
      else throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选 ${key}=${value}`);
    }
    if (user.isChild) conds.push(inArray(instances.category, childCategories(user)));
    const where = and(...conds);
    const base = this.deps.db
      .select({ op: instanceOperations, name: instances.name, category: instances.category, actorChild: users.childName, actorMobile: users.mobile, actorIsChild: users.isChild })
      .from(instanceOperations)
      .innerJoin(instances, eq(instances.id, instanceOperations.instanceId))
      .leftJoin(users, eq(users.id, instanceOperations.actorId));
    const [{ total } = { total: 0 }] = await this.deps.db
      .select({ total: count() })
      .from(instanceOperations)
      .innerJoin(instances, eq(instances.id, instanceOperations.instanceId))
      .where(where);
    const rows = await base.where(where).orderBy(desc(instanceOperations.id)).limit(q.pageSize).offset((q.page - 1) * q.pageSize);
    const items: InstanceOperation[] = rows.map((r) => ({
      id: String(r.op.id),
      instanceId: r.op.instanceId,
      instanceName: r.name,
      category: r.category,
      action: r.op.action,
      actionLabel: operationLabel(r.op.action),
      actorId: r.op.actorId,
      actorName: r.op.actorId ? (r.actorIsChild ? `子账号 ${r.actorChild}` : maskMobile(r.actorMobile)) : '系统',
      fromStatus: r.op.fromStatus,
      toStatus: r.op.toStatus,
      detail: r.op.detail,
      createdAt: r.op.createdAt.toISOString(),
    }));
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  /** The instance if this user may manage it: the payer's, and for a child only in categories it was granted. */
  async mustFind(user: UserRow, id: string): Promise<InstanceRow> {
    const [row] = await this.deps.db.select().from(instances).where(and(eq(instances.id, id), eq(instances.userId, payerIdOf(user))));
    if (!row || row.releasedAt) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在或已释放`);
    if (user.isChild && !childCategories(user).includes(row.category)) throw new AppError('PERMISSION_DENIED', `子账号没有管理${row.category}实例的权限`);
    return row;
  }

  async lock(tx: Tx, id: string): Promise<InstanceRow> {
    const [row] = await tx.select().from(instances).where(eq(instances.id, id)).for('update');
    if (!row || row.releasedAt) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在或已释放`);
    return row;
  }

  async logOp(tx: Tx, row: InstanceRow, o: { action: string; actorId: string | null; from: Status | null; to: Status; detail: string }) {
    await tx.insert(instanceOperations).values({
      instanceId: row.id,
      userId: row.userId,
      actorId: o.actorId,
      action: o.action,
      fromStatus: o.from,
      toStatus: o.to,
      detail: o.detail,
      createdAt: this.deps.clock.now(),
    });
  }

  view(r: InstanceRow, snap: Snapshot, imageNames: Map<string, string> = new Map()): Instance {
    const region = snap.regions.find((x) => x.id === r.regionId);
    const host = r.hostId ? snap.hosts.find((h) => h.id === r.hostId) : undefined;
    const gpu = r.gpuTypeId ? snap.gpuTypes.find((g) => g.id === r.gpuTypeId) : undefined;
    const image = r.imageId ? snap.images.find((i) => i.id === r.imageId) : undefined;
    const app = r.applicationId ? snap.applications.find((a) => a.id === r.applicationId) : undefined;
    const password = this.deps.passwords.open(r.sshPasswordEnc);
    const reachable = r.sshHost && r.sshPort && r.status !== 'Failed';
    return {
      id: r.id,
      name: r.name,
      category: r.category,
      status: r.status,
      lastError: r.lastError,
      noCard: r.noCard,
      regionId: r.regionId,
      regionName: region?.name ?? r.regionId,
      roomId: r.roomId,
      hostId: r.hostId,
      hostName: host?.name ?? null,
      gpuTypeId: r.gpuTypeId,
      gpuName: gpu?.name ?? null,
      gpuCount: r.gpuCount,
      sizeId: r.sizeId,
      spec: `${r.cpu} 核 CPU / ${r.memoryGb} GB 内存`,
      imageId: r.imageId,
      imageName: image?.name ?? null,
      applicationId: r.applicationId,
      applicationName: app?.name ?? null,
      dataDiskGb: r.dataDiskGb,
      freeDataDiskGb: r.freeDataDiskGb,
      bandwidthMbps: r.bandwidthMbps,
      includedBandwidthMbps: r.includedBandwidthMbps,
      bandwidthChoices: r.category === 'Ebusiness' ? bandwidthChoices(r.includedBandwidthMbps, snap.settings.bandwidthStepsMbps) : [],
      cycle: r.cycle,
      hourlyPrice: String(r.hourlyPrice + r.bandwidthHourlyPrice),
      noCardHourlyPrice: String(r.noCardHourlyPrice),
      diskDailyPrice: String(r.diskDailyPrice),
      expireAt: r.expireAt?.toISOString() ?? null,
      autoRenew: r.autoRenew,
      releaseAt: r.releaseAt?.toISOString() ?? null,
      access: reachable
        ? {
            sshHost: r.sshHost!,
            sshPort: r.sshPort!,
            sshUser: r.sshUser,
            sshPassword: password,
            sshCommand: `ssh -p ${r.sshPort} ${r.sshUser}@${r.sshHost}`,
            jupyterUrl: r.category === 'Gpu' || r.category === 'App' ? `${this.deps.publicBaseUrl}/dev/compute/jupyter/${r.id}?token=${r.jupyterToken}` : null,
            appUrl: app ? `${this.deps.publicBaseUrl}/dev/compute/app/${r.id}?token=${r.jupyterToken}` : null,
          }
        : null,
      // No-card mode only means something for a machine with cards.
      actions: allowedActions(r.status).filter((a) => a !== 'startNoCard' || r.gpuCount > 0),
      // An expired prepaid instance is renewed before its disk can grow or it can move (it could not start anyway).
      tasks: allowedTasks(r.status).filter(
        (t) =>
          // Bandwidth changes only on e-commerce machines; migration only moves cards.
          (t !== 'changeBandwidth' || r.category === 'Ebusiness') && (t !== 'migrate' || r.gpuCount > 0) && (t === 'saveImage' || !r.expireAt || r.expireAt > this.deps.clock.now()),
      ),
      userImageId: r.userImageId,
      userImageName: r.userImageId ? (imageNames.get(r.userImageId) ?? null) : null,
      orderUid: null,
      createdAt: r.createdAt.toISOString(),
      startedAt: r.startedAt?.toISOString() ?? null,
      stoppedAt: r.stoppedAt?.toISOString() ?? null,
    };
  }
}

const DAY_MS_N = 86_400_000n;

/** The task an instance is Operating for, from its pendingAction "task:statusBefore:param". */
function taskOf(row: InstanceRow): { task: InstanceTask; before: Status; param: string } | null {
  const [task, before, ...rest] = row.pendingAction?.split(':') ?? [];
  if (!(INSTANCE_TASKS as readonly string[]).includes(task ?? '')) return null;
  return { task: task as InstanceTask, before: (before as Status) ?? 'Stopped', param: rest.join(':') };
}

/** A bandwidth task's param "mbps:orderId:bandwidthHourlyPrice" (orderId empty when nothing was paid up front). */
export interface BandwidthChange {
  mbps: number;
  orderId: string;
  /** Post-paid: what the bandwidth beyond the included costs per hour once it applies. */
  hourly: bigint;
}

export function bandwidthTaskParam(param: string): BandwidthChange {
  const [mbps = '0', orderId = '', hourly = '0'] = param.split(':');
  return { mbps: Number(mbps), orderId, hourly: BigInt(hourly) };
}

/** What a post-paid run of the instance costs per hour: no-card mode, or its cards and its extra bandwidth. */
export function runRate(row: Pick<InstanceRow, 'noCard' | 'noCardHourlyPrice' | 'hourlyPrice' | 'bandwidthHourlyPrice'>): bigint {
  return row.noCard ? row.noCardHourlyPrice : row.hourlyPrice + row.bandwidthHourlyPrice;
}

/** "2 小时", "90 分钟". */
export function holdText(minutes: number): string {
  return minutes % 60 === 0 ? `${minutes / 60} 小时` : `${minutes} 分钟`;
}

function beijingTime(d: Date): string {
  return new Date(d.getTime() + 8 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
}

/** The metering columns of an instance that is not metered. */
export const METER_OFF = { meterRate: 0n, meterSince: null, meterSegment: null, meterMs: 0n, meterCharged: 0n } as const;

/** When a stopped instance will be released: post-paid after stoppedReleaseDays; prepaid only once expired. */
function releaseAfterStop(row: InstanceRow, at: Date, settings: Settings): Date | null {
  if (POSTPAID.includes(row.cycle)) return new Date(at.getTime() + settings.stoppedReleaseDays * 86400_000);
  return row.expireAt && row.expireAt <= at ? new Date(row.expireAt.getTime() + settings.expiredReleaseDays * 86400_000) : null;
}

function payerIdOf(user: UserRow): string {
  return user.isChild && user.parentId ? user.parentId : user.id;
}

/** Categories a child account may see and manage (spec §6). */
function childCategories(user: UserRow): InstanceCategory[] {
  return (Object.entries(MANAGE_PERMISSIONS) as [InstanceCategory, readonly (keyof UserRow)[]][]).filter(([, flags]) => flags.some((f) => user[f] === true)).map(([c]) => c);
}

/** The same id for the same order and position, so a repeated fulfilment creates nothing new. */
export function instanceIdFor(orderId: string, index: number): string {
  const h = createHash('sha256').update(`${orderId}:${index}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const OP_LABELS: Record<string, string> = {
  create: '创建',
  rename: '修改名称',
  resetPassword: '重置密码',
  lost: '主机失联',
  found: '主机恢复',
  'done:create': '创建完成',
  'done:boot': '开机完成',
  'done:start': '开机完成',
  'done:stop': '关机完成',
  'done:restart': '重启完成',
  'done:destroy': '释放完成',
  renew: '续费',
  autoRenew: '自动续费',
  autoRenewOn: '开启自动续费',
  autoRenewOff: '关闭自动续费',
  dayToMonth: '日转月',
  transferToLong: '转长期租用',
  saveImage: '保存镜像',
  resizeDisk: '数据盘扩容',
  'done:saveImage': '镜像制作完成',
  'done:resizeDisk': '扩容完成',
  migrate: '迁移到其他主机',
  'done:migrate': '迁移完成',
  changeBandwidth: '调整带宽',
  releaseCards: '释放预留 GPU',
  'done:changeBandwidth': '带宽调整完成',
  ...InstanceActionLabel,
};

function operationLabel(action: string): string {
  if (OP_LABELS[action]) return OP_LABELS[action];
  if (action.startsWith('fail:')) return `${OP_LABELS[action.slice(5)] ?? action.slice(5)}失败`;
  return action;
}

function maskMobile(m: string | null): string {
  return m ? `${m.slice(0, 3)}****${m.slice(7)}` : '主账号';
}
