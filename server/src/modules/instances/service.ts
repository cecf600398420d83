/**
 * The instance core: a paid order becomes a machine, which its owner starts, stops,
 * restarts and releases. Every status change goes through the state machine of
 * contract/schemas/instance.ts with a row lock, is written to the operation log, and is either asked
 * of the compute driver (actions, tasks) or taken from what the driver reports (events, see
 * reconciler.ts). The catalogue's inventory is the capacity ledger: cards are reserved when an
 * instance will hold them and given back when it stops holding them.
 *
 * The rest of the module plugs into this core:
 *   tasks.ts            what a task plugs in: its handler and its typed parameter
 *   save-image.ts, disks.ts, traffic.ts, migrate.ts
 *                       one file per task: the requests that start it, its parameter, its handler
 *                       (disks.ts and traffic.ts also price and sell the disk and the bandwidth)
 *   traffic-refund.ts   the money back of a prepaid bandwidth downgrade
 *   create.ts           the purchase fulfiller: a paid order's machines
 *   renewal.ts          renewal of prepaid time: quote, order, fulfiller
 *   conversions.ts      day-to-month and transfer to long-term rental
 *   prepaid.ts          auto-renewal and refund of unused time
 *   billing.ts          metering, data-disk days, expiry and release
 *   run-rate.ts         what an hour of a run costs (runRate), and the same rule in SQL
 *   views.ts            list, detail and operation log as the console shows them
 *   reconciler.ts       the driver's event stream into applyEvent
 * Each order type an instance is sold by has its fulfiller registered in context.ts.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { and, eq, inArray, isNull, like, ne, notInArray, or, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  DESKTOP_CATEGORIES,
  MANAGE_PERMISSIONS,
  PermissionLabel,
  InstanceActionLabel,
  InstanceStatus,
  InstanceTaskLabel,
  actionTarget,
  canAct,
  canResetPassword,
  canRunTask,
  formatYuan,
  taskStatus,
  formatBeijing,
  isPostpaid,
  POSTPAID_CYCLES,
  type Instance,
  type InstanceAction,
  type InstanceActor,
  type InstanceStatus as Status,
  type InstanceTask,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instanceOperations, instances, type PendingOpKind } from './schema.js';
import { bootOpId, type ComputeDriver, type DriverEvent, type InstanceOp, type MachineSpec } from '../../drivers/compute/types.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { InventoryService } from '../catalogue/index.js';
import type { CatalogueStore, Settings, Snapshot } from '../catalogue/index.js';
import { freeCardsOf, hostMarket, saleLimits } from '../catalogue/index.js';
import type { Checkout } from '../orders/index.js';
import type { Fulfillers } from '../orders/index.js';
import type { OrderRow } from '../orders/index.js';
import type { UsageCharges } from '../orders/index.js';
import type { BalanceFloors, UserRow } from '../users/index.js';
import type { Meter } from './meter.js';
import { METER_OFF, meterStart, type InstanceRow } from './rows.js';
import { notices, type Notice } from '../notices/index.js';
import { newMachinePassword, type PasswordBox } from './secrets.js';
import { NO_PENDING_OP, pendingOpColumns, pendingTaskOf, isTask, statusBefore, type PendingTask, type TaskHandlers, type TaskStart } from './tasks.js';
import { runRate, runRateSql } from './run-rate.js';
import { findManaged, type InstanceViews } from './views.js';

/** Statuses in which a post-paid instance is not charged for its run (nor about to be). */
const NOT_RUNNING: readonly Status[] = ['Stopped', 'Shutdown', 'Failed', 'Deleting'];

export interface InstanceDeps {
  db: Db;
  clock: Clock;
  driver: ComputeDriver;
  inventory: InventoryService;
  catalogue: CatalogueStore;
  /** Post-paid charges: arrears paid before a start, the end of a Usage order. */
  usage: UsageCharges;
  /** Refunds an order whose machine never came up, or whose paid task failed. */
  checkout: Checkout;
  meter: Meter;
  passwords: PasswordBox;
  log: FastifyBaseLogger;
  /** Tells an owner something about their instance (release notices, a stop for lack of balance): notices module. */
  notify: (userId: string, notice: Notice) => Promise<void>;
  views: InstanceViews;
  tasks: TaskHandlers;
  /** The fulfillers of every order type an instance is sold by (registered in context.ts). */
  fulfillers: Fulfillers;
  /** The payers' balance floors (余额保底): a post-paid start below it is refused (the billing tick would stop it). */
  floors?: Pick<BalanceFloors, 'floorsOf'>;
}

/** What applying a driver event leaves to do after its transaction. */
interface Applied {
  row: InstanceRow;
  notice: string | null;
  refundOrder: string | null;
}

export type InstanceAccess = Pick<InstanceRow, 'id' | 'name' | 'jupyterToken' | 'sshHost' | 'sshPort' | 'sshUser' | 'applicationId' | 'status'>;

export class InstanceService {
  constructor(private deps: InstanceDeps) {}

  /** Hands an instance order to the fulfiller of its type, as paying it does (a replay changes nothing: fulfillers apply once). */
  fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    return this.deps.fulfillers.fulfil(order);
  }

  // --- actions -------------------------------------------------------------------------

  /** A person asks for an action: checked against the state machine, the balance and the host's free cards. */
  async act(user: UserRow, id: string, action: InstanceAction): Promise<Instance> {
    const found = await this.mustFind(user, id);
    if (action === 'startNoCard' && found.gpuCount === 0)
      throw new AppError('INSTANCE_STATE_INVALID', '该实例没有 GPU，直接开机即可（无卡模式仅用于 GPU 实例）');
    // Before anything is charged (arrears, the hour reserved): a start the host has no room for stays stopped.
    if ((action === 'start' || action === 'startNoCard') && canAct(action, found.status, 'user')) await this.assertHostHasRoom(found, action === 'startNoCard');
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await this.lock(tx, id);
      return this.begin(tx, cur, action, { actor: 'user', actorId: user.id, detail: '' });
    });
    await this.submit(row);
    return this.deps.views.get(user, id);
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
    if (action === 'start' || action === 'startNoCard')
      Object.assign(set, await this.prepareStart(tx, cur, action === 'startNoCard'), { cardsHeldUntil: null });
    if (action === 'release') set.releaseAt = null;
    let detail = by.detail;
    // A stop or release, by anyone, ends the pending scheduled stop (scheduled-stop.ts): the machine is going down now.
    if ((action === 'stop' || action === 'release') && cur.scheduledStopAt) {
      set.scheduledStopAt = null;
      detail = [detail, `已取消原定 ${formatBeijing(cur.scheduledStopAt)} 的定时关机`].filter(Boolean).join('；');
    }
    const to = actionTarget(action, cur.noCard);
    const opId = `${action}:${cur.id}:${now.getTime()}`;
    const [row] = await tx
      .update(instances)
      .set({ ...set, status: to, lastError: null, ...pendingOpColumns({ opId, kind: action, from: cur.status, at: now }), updatedAt: now })
      .where(eq(instances.id, cur.id))
      .returning();
    await this.logOp(tx, row!, { action, actorId: by.actorId, from: cur.status, to, detail });
    return row!;
  }

  /** Starting needs the balance (post-paid) and, with cards, free cards on the instance's own host. */
  private async prepareStart(tx: Tx, cur: InstanceRow, noCard: boolean): Promise<Partial<InstanceRow>> {
    if (cur.expireAt && cur.expireAt <= this.deps.clock.now()) {
      throw new AppError('INSTANCE_EXPIRED', `已于 ${formatBeijing(cur.expireAt)} 到期`);
    }
    if (isPostpaid(cur.cycle) && cur.usageOrderId) await this.assertCanPayToStart(tx, cur, noCard);
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
      if (isAppError(e, 'NO_CAPACITY')) {
        throw new AppError(
          'INSTANCE_GPU_BUSY',
          `所在主机当前空闲卡不足 ${cur.gpuCount} 卡；可以迁移到其他主机（免费，数据随实例迁移），或以无卡模式开机（不挂载 GPU），或稍后再试`,
        );
      }
      throw e;
    }
    return { noCard: false, gpuHeld: cur.gpuCount, releaseAt: null };
  }

  /**
   * On a driver that sells one real host (ComputeDriver.offer: the local driver), a start is sold as
   * an order is (catalogue/host-market.ts): its cores and memory within what the host may sell
   * (its own times the operator's overcommit ratios) beside the machines that hold it now, and with
   * cards, as many of its type free, exactly. A host without cards runs a GPU machine without them
   * (README "GPUs"): no card is counted there.
   */
  private async assertHostHasRoom(cur: InstanceRow, noCard: boolean): Promise<void> {
    const offer = await this.deps.driver.offer?.();
    if (!offer) return;
    const snap = await this.deps.catalogue.get();
    const market = hostMarket(offer, snap.settings);
    const type = snap.gpuTypes.find((g) => g.id === cur.gpuTypeId);
    const cards = noCard ? 0 : cur.gpuCount;
    if (cards > 0 && type && offer.gpus.length > 0) {
      const free = freeCardsOf(market, type);
      if (cards > free)
        throw new AppError(
          'INSTANCE_GPU_BUSY',
          `本主机空闲的 ${type.name} 只有 ${free} 张，开机需要 ${cards} 张；可以无卡模式开机（不挂载 GPU），或等其他实例关机后再试`,
        );
    }
    const limit = saleLimits(market);
    const free = { cpu: Math.max(0, limit.cpu - offer.held.cpu), memoryGb: Math.max(0, limit.memoryGb - offer.held.memoryGb) };
    if (cur.cpu > free.cpu || cur.memoryGb > free.memoryGb)
      throw new AppError(
        'HOST_FULL',
        `本主机剩余 ${free.cpu} 核 / ${free.memoryGb} GB 内存可用，该实例开机需要 ${cur.cpu} 核 / ${cur.memoryGb} GB；请等其他实例关机后再试，实例保持关机，不产生费用`,
      );
  }

  /** A post-paid start pays its arrears first and needs an hour of its run in the balance. */
  private async assertCanPayToStart(tx: Tx, cur: InstanceRow, noCard: boolean): Promise<void> {
    if (cur.arrears > 0n) {
      const paid = await this.deps.usage.chargeUsage(
        tx,
        cur.usageOrderId!,
        cur.arrears,
        `arrears:${cur.id}:${cur.arrears}:${cur.updatedAt.getTime()}`,
        `${cur.name} 欠费结清`,
      );
      if (paid < cur.arrears) throw new AppError('INSTANCE_ARREARS', `还欠 ${formatYuan(cur.arrears - paid)} 元，请充值后再开机`);
      await tx.update(instances).set({ arrears: 0n }).where(eq(instances.id, cur.id));
    }
    // The run is its order's: a child's instance spends within the child's limit, whoever starts it.
    await this.deps.usage.reserveHour(tx, cur.userId, runRate(cur, noCard), { except: cur.id, spender: cur.createdBy });
    const floor = (await this.deps.floors?.floorsOf(tx, [cur.userId]))?.get(cur.userId);
    if (floor !== undefined) {
      const spendable = await this.deps.usage.spendable(cur.userId, tx);
      if (spendable < floor)
        throw new AppError(
          'INSUFFICIENT_BALANCE',
          `可用余额 ${formatYuan(spendable)} 元低于您设置的 ${formatYuan(floor)} 元保底金额，开机后会被自动关机；请充值，或在“我的余额”调低或关闭保底金额`,
        );
    }
  }

  /**
   * What the payer's post-paid instances that run or are about to run cost per hour (each at its
   * current rate): what a new post-paid start must leave in the balance (UsageCharges.reserveHour).
   * With `createdBy`, only the instances that account created (a child's, against its spending limit).
   * Instances of `pendingOrderIds` are left out: the caller counts those orders by their quote.
   */
  readonly hourlyLoad = async (tx: Tx, payerId: string, except?: string, createdBy?: string, pendingOrderIds?: readonly string[]): Promise<bigint> => {
    const [row] = await tx
      .select({
        sum: sql<string>`coalesce(sum(${runRateSql}), 0)`,
      })
      .from(instances)
      .where(
        and(
          eq(instances.userId, payerId),
          inArray(instances.cycle, [...POSTPAID_CYCLES]),
          notInArray(instances.status, [...NOT_RUNNING]),
          isNull(instances.releasedAt),
          except ? ne(instances.id, except) : undefined,
          createdBy ? eq(instances.createdBy, createdBy) : undefined,
          pendingOrderIds?.length ? or(isNull(instances.usageOrderId), notInArray(instances.usageOrderId, [...pendingOrderIds])) : undefined,
        ),
      );
    return BigInt(row?.sum ?? 0);
  };

  async rename(user: UserRow, id: string, name: string): Promise<Instance> {
    const row = await this.mustFind(user, id);
    if (row.status === 'Deleting') throw new AppError('INSTANCE_STATE_INVALID', '实例正在销毁，不能改名');
    await this.deps.db.transaction(async (tx) => {
      await tx.update(instances).set({ name, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      await this.logOp(tx, row, { action: 'rename', actorId: user.id, from: row.status, to: row.status, detail: `${row.name} → ${name}` });
    });
    return this.deps.views.get(user, id);
  }

  /**
   * The main account hands an instance to one of its children (or takes it back, `childId` null): the
   * holder is the account that sees and manages it and whose spending limit its running costs count
   * against, as if it had bought it. A child may hold only what its grants let it manage (spec §6).
   */
  async hand(user: UserRow, id: string, child: UserRow | null): Promise<Instance> {
    const row = await this.mustFind(user, id);
    if (child && !(MANAGE_PERMISSIONS[row.category] ?? []).some((flag) => child[flag])) {
      const grant = (MANAGE_PERMISSIONS[row.category] ?? []).map((f) => `「${PermissionLabel[f]}」`).join('或');
      throw new AppError('PERMISSION_DENIED', `子账号「${child.childName}」没有管理该类实例的权限${grant ? `，请先授予${grant}` : ''}`);
    }
    const holder = child?.id ?? user.id;
    if (holder !== row.createdBy) {
      await this.deps.db.transaction(async (tx) => {
        // A new holder: the ComfyUI API token the last one could read is revoked (the owner makes a new one).
        await tx.update(instances).set({ createdBy: holder, appTokenEnc: null, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
        const detail = child ? `交给子账号 ${child.childName} 管理` : '收回到主账号';
        await this.logOp(tx, row, { action: 'hand', actorId: user.id, from: row.status, to: row.status, detail });
      });
    }
    return this.deps.views.get(user, id);
  }

  /** A new root password, shown once in the answer (and afterwards on the access tab). */
  async resetPassword(user: UserRow, id: string): Promise<Instance> {
    const row = await this.mustFind(user, id);
    if (!canResetPassword(row.status)) {
      throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能重置密码`);
    }
    await this.deps.db.transaction(async (tx) => {
      await tx
        .update(instances)
        .set({ sshPasswordEnc: this.deps.passwords.seal(newMachinePassword()), updatedAt: this.deps.clock.now() })
        .where(eq(instances.id, id));
      await this.logOp(tx, row, { action: 'resetPassword', actorId: user.id, from: row.status, to: row.status, detail: '' });
    });
    return this.deps.views.get(user, id);
  }

  // --- tasks (their requests and outcomes are in their own files, see tasks.ts) --------------

  /** A task needs a stopped machine: a running one is told to stop first, anything else is refused. */
  assertTask(cur: InstanceRow, task: InstanceTask): void {
    if (canRunTask(task, cur.status)) return;
    const on: Status[] = ['Running', 'Starting', 'Restarting', 'Stopping', 'Shutdowning'];
    if (on.includes(cur.status))
      throw new AppError('INSTANCE_MUST_BE_STOPPED', `实例${InstanceStatus.label(cur.status)}，请先关机再${InstanceTaskLabel[task]}`);
    throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(cur.status)}，不能${InstanceTaskLabel[task]}`);
  }

  /** A locked instance goes Operating (Pending_Migrate for a migration) with the task pending; the caller submits the row afterwards. */
  async beginTask(tx: Tx, cur: InstanceRow, start: TaskStart, o: { actorId: string | null; opId: string; detail: string }): Promise<InstanceRow> {
    const now = this.deps.clock.now();
    const to = taskStatus(start.task);
    const [row] = await tx
      .update(instances)
      .set({
        status: to,
        lastError: null,
        ...pendingOpColumns({ opId: o.opId, kind: start.task, from: cur.status, params: start.param, at: now }),
        updatedAt: now,
      })
      .where(eq(instances.id, cur.id))
      .returning();
    await this.logOp(tx, row!, { action: start.task, actorId: o.actorId, from: cur.status, to, detail: o.detail });
    return row!;
  }

  // --- the driver ---------------------------------------------------------------------------

  /** Sends the instance's pending operation to the driver; safe to repeat (the driver dedupes by op id). */
  async submit(row: InstanceRow): Promise<void> {
    // The boot half of a creation is the driver's own follow-up: there is nothing to send.
    if (!row.pendingOpId || !row.pendingOpKind || row.pendingOpBooting) return;
    try {
      await this.deps.driver.submit(row.pendingOpId, row.id, await this.opOf(row, row.pendingOpKind));
    } catch (e) {
      // The reconciler sends it again; the instance shows the operation under way meanwhile.
      this.deps.log.warn({ instance: row.id, op: row.pendingOpId, err: (e as Error).message }, 'compute driver did not take the operation; will retry');
    }
  }

  /** What the driver is asked to do for the pending operation of `kind`: a task's handler says, an action's is fixed. */
  private async opOf(row: InstanceRow, kind: PendingOpKind): Promise<InstanceOp> {
    if (isTask(kind)) {
      const task = this.pendingTask(row)!;
      return task.handler.op(row, task.param);
    }
    switch (kind) {
      case 'create':
        return { kind: 'create', params: await this.specOf(row) };
      case 'start':
      case 'startNoCard':
        return { kind: 'start', params: { gpu: !row.noCard && row.gpuCount > 0 } };
      case 'stop':
        return { kind: 'stop', params: {} };
      case 'restart':
        return { kind: 'restart', params: {} };
      case 'release':
        return { kind: 'destroy', params: {} };
    }
  }

  /** The machine spec the driver creates from (desktop machines get a graphical desktop). */
  private async specOf(row: InstanceRow): Promise<MachineSpec> {
    // The system disk is the host's (GPU) or the size's (CPU, desktops) as the catalogue sells it.
    const snap = await this.deps.catalogue.get();
    const plan = row.hostId ? snap.hosts.find((h) => h.id === row.hostId) : snap.sizes.find((s) => s.id === row.sizeId);
    return {
      systemDiskGb: plan?.systemDiskGb,
      hostId: row.hostId,
      regionId: row.regionId,
      gpuCount: row.gpuCount,
      cpu: row.cpu,
      memoryGb: row.memoryGb,
      imageId: row.imageId,
      userImageRef: row.userImageId,
      // The OCI image the catalogue image names (a saved image's base too): the machine's system is that image's.
      imageRef: (row.imageId && snap.images.find((i) => i.id === row.imageId)?.oci) || null,
      dataDiskGb: row.dataDiskGb,
      bandwidthMbps: row.bandwidthMbps,
      sshUser: row.sshUser,
      sshPassword: this.deps.passwords.open(row.sshPasswordEnc),
      jupyterToken: row.jupyterToken,
      // An application instance: the port its application serves (its image's command runs on it).
      appPort: (row.applicationId && snap.applications.find((a) => a.id === row.applicationId)?.defaultPort) || null,
      desktop: DESKTOP_CATEGORIES.includes(row.category),
      fileStoreId: row.userId,
    };
  }

  private pendingTask(row: InstanceRow): PendingTask | null {
    return pendingTaskOf(row, this.deps.tasks);
  }

  // --- what the driver reports ------------------------------------------------------------

  /** Applies one driver event. Late, repeated or foreign events change nothing. */
  async applyEvent(e: DriverEvent): Promise<void> {
    // Read before the transaction: on PGlite a query outside it would wait for it to end.
    const snap = await this.deps.catalogue.get();
    const after = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(instances).where(eq(instances.id, e.instanceId)).for('update');
      if (!row || row.releasedAt) return null;
      if (e.kind === 'lost') return this.onLost(tx, row, e);
      if (e.kind === 'found') return this.onFound(tx, row, e);
      if (e.opId !== awaitedOpId(row)) return null;
      return e.ok ? this.onDone(tx, row, e, snap) : this.onFailed(tx, row, e);
    });
    if (after?.notice) await this.notifyOwner(after.row.userId, notices.instanceEvent({ instance: after.row, text: after.notice }));
    if (after?.refundOrder) await this.deps.checkout.refundDelivered(after.refundOrder, e.error ?? '实例创建失败');
  }

  private async onDone(tx: Tx, row: InstanceRow, e: DriverEvent, snap: Snapshot): Promise<Applied | null> {
    const outcome = isTask(e.kind) ? await this.taskDone(tx, row, e, snap) : await this.actionDone(tx, row, e, snap.settings);
    if (!outcome) return null;
    const set: Partial<InstanceRow> = { lastError: null, ...outcome.set };
    if (outcome.clearOp) Object.assign(set, NO_PENDING_OP);
    const [moved] = await tx
      .update(instances)
      .set({ ...set, status: outcome.to, updatedAt: this.deps.clock.now() })
      .where(eq(instances.id, row.id))
      .returning();
    await this.logOp(tx, moved!, { action: `done:${e.kind}`, actorId: null, from: row.status, to: outcome.to, detail: outcome.detail });
    return { row: moved!, notice: null, refundOrder: null };
  }

  /** A task's success, as its handler says; the instance goes back where it was unless the handler says otherwise. */
  private async taskDone(tx: Tx, row: InstanceRow, e: DriverEvent, snap: Snapshot): Promise<Outcome | null> {
    const task = this.pendingTask(row);
    if (task?.handler.param.task !== e.kind) return null;
    const done = await task.handler.onDone(tx, row, task.param, e, snap);
    return { to: done.to ?? task.before, set: done.set, detail: done.detail, clearOp: true };
  }

  private async actionDone(tx: Tx, row: InstanceRow, e: DriverEvent, settings: Settings): Promise<Outcome | null> {
    switch (e.kind) {
      case 'create':
        // The machine exists; its boot is the driver's follow-up under the same operation.
        return {
          to: 'Starting',
          set: { sshHost: e.access?.sshHost ?? null, sshPort: e.access?.sshPort ?? null, pendingOpBooting: true },
          detail: '',
          clearOp: false,
        };
      case 'boot':
      case 'start':
        return { to: 'Running', set: { startedAt: e.at, stoppedAt: null, releaseAt: null, ...meterStart(row, e.at) }, detail: '', clearOp: true };
      case 'restart':
        return { to: 'Running', set: {}, detail: '', clearOp: true };
      case 'stop': {
        const set = { ...(await this.meterStop(tx, row, e.at)), stoppedAt: e.at, gpuHeld: 0, releaseAt: releaseAfterStop(row, e.at, settings), ...METER_OFF };
        if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
        return { to: row.noCard ? 'Shutdown' : 'Stopped', set, detail: '', clearOp: true };
      }
      case 'destroy': {
        const set = await this.meterStop(tx, row, e.at);
        if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
        if (row.usageOrderId) await this.deps.usage.finishUsage(tx, row.usageOrderId, e.at);
        return { to: row.status, set: { ...set, releasedAt: e.at, gpuHeld: 0, ...METER_OFF }, detail: '已释放', clearOp: true };
      }
      default:
        return null;
    }
  }

  /** A failed operation: creation ends in Failed (and a refund); anything else goes back where it was, marked OperateFail. */
  private async onFailed(tx: Tx, row: InstanceRow, e: DriverEvent): Promise<Applied> {
    const creating = e.kind === 'create' || e.kind === 'boot';
    const to: Status = creating ? 'Failed' : statusBefore(row);
    const set: Partial<InstanceRow> = { lastError: e.error ?? '操作失败', ...NO_PENDING_OP };
    let refundOrder: string | null = null;
    let notice: string | null = null;
    if (creating || (e.kind === 'start' && row.gpuHeld > 0)) {
      if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
      set.gpuHeld = 0;
    }
    if (creating) {
      if (row.orderId) refundOrder = row.orderId;
      if (row.usageOrderId) await this.deps.usage.finishUsage(tx, row.usageOrderId);
      // No machine, no disk: its hourly charge (billing.ts diskTick) ends with the order.
      set.diskBilledUntil = null;
      notice = `您的实例「${row.name}」创建失败（${e.error ?? '未知原因'}），订单款项已原路退回。`;
    }
    const task = this.pendingTask(row);
    if (task) {
      const failed = await task.handler.onFailed(tx, row, task.param, e);
      notice = failed.notice ?? notice;
      refundOrder = failed.refundOrder ?? refundOrder;
    }
    const [moved] = await tx
      .update(instances)
      .set({ ...set, status: to, updatedAt: this.deps.clock.now() })
      .where(eq(instances.id, row.id))
      .returning();
    await this.logOp(tx, moved!, { action: `fail:${e.kind}`, actorId: null, from: row.status, to, detail: e.error ?? '' });
    return { row: moved!, notice, refundOrder };
  }

  private async onLost(tx: Tx, row: InstanceRow, e: DriverEvent): Promise<Applied | null> {
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
  private async onFound(tx: Tx, row: InstanceRow, e: DriverEvent): Promise<Applied | null> {
    if (row.status !== 'Unknown') return null;
    const running = e.power === 'running';
    const task = this.pendingTask(row);
    // A task (save image, expand disk) under way when the host went away goes on: its outcome is still to come.
    const goesOn = !running && task !== null;
    const to: Status = goesOn ? taskStatus(task.handler.param.task) : running ? 'Running' : row.noCard ? 'Shutdown' : 'Stopped';
    if (task && !goesOn) await task.handler.onAbandoned?.(tx, row, task.param);
    const set: Partial<InstanceRow> = goesOn ? { lastError: null, opStartedAt: e.at } : { lastError: null, ...NO_PENDING_OP };
    if (running) Object.assign(set, meterStart(row, e.at));
    else {
      if (row.gpuHeld > 0) await this.deps.inventory.release(tx, row.hostId!, row.gpuHeld);
      Object.assign(set, { gpuHeld: 0, stoppedAt: row.stoppedAt ?? e.at });
    }
    const [moved] = await tx
      .update(instances)
      .set({ ...set, status: to, updatedAt: this.deps.clock.now() })
      .where(eq(instances.id, row.id))
      .returning();
    await this.logOp(tx, moved!, { action: 'found', actorId: null, from: 'Unknown', to, detail: '主机恢复' });
    return { row: moved!, notice: null, refundOrder: null };
  }

  /** Charges the run up to `at` (billing.ts owns the arithmetic); the arrears it leaves stay on the instance. */
  private async meterStop(tx: Tx, row: InstanceRow, at: Date): Promise<Pick<InstanceRow, 'arrears'>> {
    const { arrears } = await this.deps.meter.settle(tx, row, at);
    return { arrears };
  }

  /** Sends a notice (a plain text is an InstanceEvent without a subject); a failure is logged, never thrown. */
  async notifyOwner(userId: string, notice: Notice | string): Promise<void> {
    const n: Notice = typeof notice === 'string' ? { kind: 'InstanceEvent', title: '实例通知', body: notice, params: { name: '实例' } } : notice;
    await this.deps.notify(userId, n).catch((e) => this.deps.log.warn({ userId, err: (e as Error).message }, 'notice not sent'));
  }

  // --- finding and locking ----------------------------------------------------------------

  /** The instance if this user may manage it: the payer's, and for a child only in categories it was granted. */
  mustFind(user: UserRow, id: string): Promise<InstanceRow> {
    return findManaged(this.deps.db, user, id);
  }

  /** How an instance is reached (name, SSH, the Jupyter token), for the compute stand-ins' own pages; null when unknown. */
  async accessOf(id: string): Promise<InstanceAccess | null> {
    const [row] = await this.deps.db
      .select({
        id: instances.id,
        name: instances.name,
        jupyterToken: instances.jupyterToken,
        sshHost: instances.sshHost,
        sshPort: instances.sshPort,
        sshUser: instances.sshUser,
        applicationId: instances.applicationId,
        status: instances.status,
      })
      .from(instances)
      .where(eq(instances.id, id));
    return row ?? null;
  }

  /**
   * Which of these running instances an SSH login is for: the user name and the machine password
   * the detail page shows (random per instance, so it names one machine); null when none.
   */
  async sshLogin(instanceIds: string[], user: string, password: string): Promise<string | null> {
    if (!instanceIds.length) return null;
    const rows = await this.deps.db
      .select({ id: instances.id, sshUser: instances.sshUser, sshPasswordEnc: instances.sshPasswordEnc })
      .from(instances)
      .where(and(inArray(instances.id, instanceIds), eq(instances.status, 'Running')));
    const given = createHash('sha256').update(password).digest();
    for (const r of rows) {
      const real = createHash('sha256').update(this.deps.passwords.open(r.sshPasswordEnc)).digest();
      // `root.<id prefix>` (the 公钥登录 command's user) names the machine too: a password after a refused key works there as well.
      const named = r.sshUser === user || user === `${r.sshUser}.${r.id.slice(0, 8)}`;
      if (named && timingSafeEqual(given, real)) return r.id;
    }
    return null;
  }

  /** Whether an order's operation is in the instance's log (its detail starts with the order number), so that a replayed fulfilment applies it once. */
  async orderApplied(tx: Tx, instanceId: string, action: string, orderUid: string): Promise<boolean> {
    const [done] = await tx
      .select({ id: instanceOperations.id })
      .from(instanceOperations)
      .where(and(eq(instanceOperations.instanceId, instanceId), eq(instanceOperations.action, action), like(instanceOperations.detail, `${orderUid}%`)));
    return done !== undefined;
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
}

/** The id of the event the instance waits for: its pending operation's, or once created the boot's that follows it. */
function awaitedOpId(row: Pick<InstanceRow, 'pendingOpId' | 'pendingOpBooting'>): string | null {
  return row.pendingOpId && row.pendingOpBooting ? bootOpId(row.pendingOpId) : row.pendingOpId;
}

/** Where an operation's success leaves the instance. */
interface Outcome {
  to: Status;
  set: Partial<InstanceRow>;
  detail: string;
  /** Whether the operation is over (a creation goes on with its boot). */
  clearOp: boolean;
}

/** When a stopped instance will be released: post-paid after stoppedReleaseDays; prepaid only once expired. */
function releaseAfterStop(row: InstanceRow, at: Date, settings: Settings): Date | null {
  if (isPostpaid(row.cycle)) return new Date(at.getTime() + settings.stoppedReleaseDays * 86400_000);
  return row.expireAt && row.expireAt <= at ? new Date(row.expireAt.getTime() + settings.expiredReleaseDays * 86400_000) : null;
}
