/**
 * Instances (issue 6): a paid order becomes a machine, which its owner starts, stops, restarts and
 * releases. Every status change goes through the state machine of contract/schemas/instance.ts with
 * a row lock, is written to the operation log, and is either asked of the compute driver (actions)
 * or taken from what the driver reports (events, see reconciler.ts). The catalogue's inventory is
 * the capacity ledger: cards are reserved when an instance will hold them and given back when it
 * stops holding them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, count, desc, eq, ilike, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  InstanceActionLabel,
  InstanceStatus,
  MANAGE_PERMISSIONS,
  actionTarget,
  allowedActions,
  canAct,
  canResetPassword,
  formatYuan,
  parseFilterBy,
  type BillingCycle,
  type Instance,
  type InstanceAction,
  type InstanceActor,
  type InstanceCategory,
  type InstanceOperation,
  type InstanceStatus as Status,
  type Order,
  type Quote,
  type RenewInstanceRequest,
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
  applicationId?: string;
  cycle: BillingCycle;
  duration: number;
  dataDiskGb: number;
  placement: { regionId: string; roomId?: string; hostId?: string };
}

export class InstanceService {
  constructor(private deps: InstanceDeps) {}

  // --- creation (the order fulfiller for every instance category) --------------------

  /** Creates the order's instances (idempotent per order) and asks the driver for the machines; or applies a renewal. */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    if (order.type === 'Renew') return this.applyRenewal(order);
    const req = order.request as InstanceRequest;
    const snap = await this.deps.catalogue.get();
    const now = this.deps.clock.now();
    const count = req.gpuTypeId ? 1 : (req.count ?? 1);
    const rows = Array.from({ length: count }, (_, i) => this.newRow(order, req, snap, i, count, now));
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

  private newRow(order: OrderRow, req: InstanceRequest, snap: Snapshot, i: number, count: number, now: Date): InstanceRow {
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
      sizeId: size?.id ?? null,
      cpu: host ? host.cpuPerGpu * gpuCount : (size?.cpu ?? 0),
      memoryGb: host ? host.memoryGbPerGpu * gpuCount : (size?.memoryGb ?? 0),
      imageId: app?.imageId ?? req.imageId ?? null,
      applicationId: app?.id ?? null,
      dataDiskGb: req.dataDiskGb,
      freeDataDiskGb: freeDisk,
      cycle: req.cycle,
      hourlyPrice: hourly,
      noCardHourlyPrice: postpaid ? s.noCardPricePerHour : 0n,
      diskDailyPrice: postpaid ? extraGb * s.dataDiskPricePerGbDay : 0n,
      expireAt: postpaid ? null : new Date(now.getTime() + prepaidHours * 3600_000),
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
    await this.mustFind(user, id);
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

  private async begin(tx: Tx, cur: InstanceRow, action: InstanceAction, by: { actor: InstanceActor; actorId: string | null; detail: string }): Promise<InstanceRow> {
    if (!canAct(action, cur.status, by.actor)) {
      throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(cur.status)}，不能${InstanceActionLabel[action]}`);
    }
    const now = this.deps.clock.now();
    const set: Partial<InstanceRow> = {};
    if (action === 'start' || action === 'startNoCard') Object.assign(set, await this.prepareStart(tx, cur, action === 'startNoCard'));
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
      const hourly = noCard ? cur.noCardHourlyPrice : cur.hourlyPrice;
      const spendable = await this.deps.orders.spendable(cur.userId, tx);
      if (spendable < hourly) throw new AppError('INSUFFICIENT_BALANCE', `开机需余额不少于 ${formatYuan(hourly)} 元（1 小时费用）`);
    }
    if (noCard || cur.gpuCount === 0) return { noCard, gpuHeld: 0, releaseAt: null };
    try {
      await this.deps.inventory.reserve(tx, cur.hostId!, cur.gpuCount);
    } catch (e) {
      if (e instanceof AppError && e.code === 40920001) {
        throw new AppError('INSTANCE_GPU_BUSY', `所在主机当前空闲卡不足 ${cur.gpuCount} 卡；可以无卡模式开机（不挂载 GPU），或稍后再试`);
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
      const now = this.deps.clock.now();
      const from = cur.expireAt && cur.expireAt > now ? cur.expireAt : now;
      const expireAt = new Date(from.getTime() + Number(HOURS_PER_UNIT[cur.cycle]) * duration * 3600_000);
      await tx.update(instances).set({ expireAt, releaseAt: null, releaseNoticeAt: null, updatedAt: now }).where(eq(instances.id, instanceId));
      await this.logOp(tx, cur, { action: 'renew', actorId: order.createdBy, from: cur.status, to: cur.status, detail: order.orderUid });
    });
    return { resourceId: instanceId };
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
    const [action] = row.pendingAction.split(':') as [InstanceAction | 'create'];
    try {
      if (action === 'create') await d.create(row.pendingOpId, row.id, this.specOf(row));
      else if (action === 'start' || action === 'startNoCard') await d.start(row.pendingOpId, row.id, { gpu: !row.noCard && row.gpuCount > 0 });
      else if (action === 'stop') await d.stop(row.pendingOpId, row.id);
      else if (action === 'restart') await d.restart(row.pendingOpId, row.id);
      else if (action === 'release') await d.destroy(row.pendingOpId, row.id);
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
      dataDiskGb: row.dataDiskGb,
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
    const { settings } = await this.deps.catalogue.get();
    const after = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(instances).where(eq(instances.id, e.instanceId)).for('update');
      if (!row || row.releasedAt) return null;
      if (e.kind === 'lost') return this.onLost(tx, row, e);
      if (e.kind === 'found') return this.onFound(tx, row, e);
      if (e.opId !== row.pendingOpId) return null;
      return e.ok ? this.onDone(tx, row, e, settings) : this.onFailed(tx, row, e);
    });
    if (after?.notice) await this.notifyOwner(after.row.userId, after.notice);
    if (after?.refundOrder) await this.deps.orders.refundDelivered(after.refundOrder, e.error ?? '实例创建失败');
  }

  private async onDone(tx: Tx, row: InstanceRow, e: DriverEvent, settings: Settings) {
    const from = row.status;
    const set: Partial<InstanceRow> = { lastError: null };
    let to: Status = from;
    let clearOp = true;
    switch (e.kind) {
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
    await this.logOp(tx, moved!, { action: `done:${e.kind}`, actorId: null, from, to, detail: e.kind === 'destroy' ? '已释放' : '' });
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
    const [moved] = await tx.update(instances).set({ ...set, status: to, updatedAt: this.deps.clock.now() }).where(eq(instances.id, row.id)).returning();
    await this.logOp(tx, moved!, { action: `fail:${e.kind}`, actorId: null, from, to, detail: e.error ?? '' });
    return { row: moved!, notice: creating ? `您的实例「${row.name}」创建失败（${e.error ?? '未知原因'}），订单款项已原路退回。` : null, refundOrder };
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
    const to: Status = running ? 'Running' : row.noCard ? 'Shutdown' : 'Stopped';
    const set: Partial<InstanceRow> = { lastError: null, pendingOpId: null, pendingAction: null, opStartedAt: null };
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
    return { meterRate: row.noCard ? row.noCardHourlyPrice : row.hourlyPrice, meterSince: at, meterSegment: at, meterMs: 0n, meterCharged: 0n };
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
    return { items: rows.map((r) => this.view(r, snap)), total, page: q.page, pageSize: q.pageSize };
  }

  async get(user: UserRow, id: string): Promise<Instance> {
    return this.view(await this.mustFind(user, id), await this.deps.catalogue.get());
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
  private async mustFind(user: UserRow, id: string): Promise<InstanceRow> {
    const [row] = await this.deps.db.select().from(instances).where(and(eq(instances.id, id), eq(instances.userId, payerIdOf(user))));
    if (!row || row.releasedAt) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在或已释放`);
    if (user.isChild && !childCategories(user).includes(row.category)) throw new AppError('PERMISSION_DENIED', `子账号没有管理${row.category}实例的权限`);
    return row;
  }

  private async lock(tx: Tx, id: string): Promise<InstanceRow> {
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

  view(r: InstanceRow, snap: Snapshot): Instance {
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
      cycle: r.cycle,
      hourlyPrice: String(r.hourlyPrice),
      noCardHourlyPrice: String(r.noCardHourlyPrice),
      diskDailyPrice: String(r.diskDailyPrice),
      expireAt: r.expireAt?.toISOString() ?? null,
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
      actions: allowedActions(r.status),
      orderUid: null,
      createdAt: r.createdAt.toISOString(),
      startedAt: r.startedAt?.toISOString() ?? null,
      stoppedAt: r.stoppedAt?.toISOString() ?? null,
    };
  }
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
