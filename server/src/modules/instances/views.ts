/**
 * The instances as the console shows them: the list, one instance with its access details, the
 * operation log (spec §2 /console/log). Also who may see and manage which instance (findManaged),
 * which every request about an instance begins with.
 */
import { and, count, desc, eq, ilike, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import {
  InstanceActionLabel,
  InstanceStatus,
  MANAGE_PERMISSIONS,
  allowedActions,
  allowedTasks,
  bandwidthChoices,
  parseFilterBy,
  payerIdOf,
  seesPayerFinance,
  type Instance,
  type InstanceCategory,
  type InstanceOperation,
  type InstanceStatus as Status,
  DESKTOP_CATEGORIES,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { instanceOperations, instances } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore, Snapshot } from '../catalogue/index.js';
import type { ImageService } from '../images/index.js';
import type { OrderService } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import { maskMobile, type UserService } from '../users/index.js';
import type { PasswordBox } from './secrets.js';
import type { InstanceRow } from './rows.js';
import { runRate } from './run-rate.js';
import type { MachineService } from '../../drivers/compute/types.js';

export interface InstanceViewDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  /** The names of images of my images the instances were created from. */
  images: ImageService;
  /** Who did what in the operation log (a child by its name, a main account by its masked mobile). */
  users: Pick<UserService, 'contactsOf'>;
  /** The order numbers the instances were bought by (shown and linked on the detail page). */
  orders: Pick<OrderService, 'uidsOf'>;
  passwords: PasswordBox;
  publicBaseUrl: string;
  /**
   * How the compute driver's machines are reached through the console: a web terminal (the driver
   * gives shells), the notebook and the 自定义服务 port inside the machine through the console's proxy
   * (/jupyter/<id>/, /service/<id>/), and
   * the simulated fleet's own JupyterLab / application pages.
   */
  reach: {
    terminal: boolean;
    simulatedPages: boolean;
    notebookProxy: boolean;
    serviceProxy: boolean;
    appProxy: boolean;
    machineApps: boolean;
    desktop: boolean;
  };
  /** Why a running machine lacks a service its driver offers (its image has not the programs): ComputeDriver.serviceMissing. */
  serviceMissing?: (instanceId: string, service: MachineService) => string | null;
}

export class InstanceViews {
  constructor(private deps: InstanceViewDeps) {}

  /** The payer's instances not yet released, newest first; a child sees the categories it may manage. */
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
      // One application, or several joined by |: the compute center's AI drawing instances.
      else if (key === 'application') conds.push(inArray(instances.applicationId, value.split('|')));
      else throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选 ${key}=${value}`);
    }
    if (user.isChild) conds.push(inArray(instances.category, childCategories(user)));
    const own = createdByScope(user);
    if (own) conds.push(own);
    if (q.search) {
      const like = `%${q.search.replace(/[%_\\]/g, '\\$&')}%`;
      conds.push(or(ilike(instances.name, like), ilike(sql`${instances.id}::text`, like))!);
    }
    const where = and(...conds);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(instances).where(where);
    const rows = await this.deps.db
      .select()
      .from(instances)
      .where(where)
      .orderBy(desc(instances.createdAt), desc(instances.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    const snap = await this.deps.catalogue.get();
    const names = await this.deps.images.namesOf(rows.flatMap((r) => (r.userImageId ? [r.userImageId] : [])));
    const uids = await this.deps.orders.uidsOf(rows.flatMap(orderIdOf));
    return { items: rows.map((r) => this.view(r, snap, names, uids)), total, page: q.page, pageSize: q.pageSize };
  }

  /** One instance, with how to reach it. */
  async get(user: UserRow, id: string): Promise<Instance> {
    const row = await findManaged(this.deps.db, user, id);
    const names = await this.deps.images.namesOf(row.userImageId ? [row.userImageId] : []);
    const uids = await this.deps.orders.uidsOf(orderIdOf(row));
    return this.view(row, await this.deps.catalogue.get(), names, uids);
  }

  /** The operation log: who did what to which instance, newest first. */
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
    // A child without 财务: the log of the instances it created, and what it did itself.
    if (!seesPayerFinance(user)) conds.push(or(eq(instances.createdBy, user.id), eq(instanceOperations.actorId, user.id))!);
    const where = and(...conds);
    const base = this.deps.db
      .select({ op: instanceOperations, name: instances.name, category: instances.category })
      .from(instanceOperations)
      .innerJoin(instances, eq(instances.id, instanceOperations.instanceId));
    const [{ total } = { total: 0 }] = await this.deps.db
      .select({ total: count() })
      .from(instanceOperations)
      .innerJoin(instances, eq(instances.id, instanceOperations.instanceId))
      .where(where);
    const rows = await base
      .where(where)
      .orderBy(desc(instanceOperations.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    const actors = await this.deps.users.contactsOf(rows.flatMap((r) => (r.op.actorId ? [r.op.actorId] : [])));
    const items: InstanceOperation[] = rows.map((r) => ({
      id: String(r.op.id),
      instanceId: r.op.instanceId,
      instanceName: r.name,
      category: r.category,
      action: r.op.action,
      actionLabel: operationLabel(r.op.action),
      actorId: r.op.actorId,
      actorName: r.op.actorId ? actorName(actors.get(r.op.actorId)) : '系统',
      fromStatus: r.op.fromStatus,
      toStatus: r.op.toStatus,
      detail: r.op.detail,
      createdAt: r.op.createdAt.toISOString(),
    }));
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  private jupyterUrl(r: InstanceRow): string | null {
    if (this.deps.reach.notebookProxy) return `${this.deps.publicBaseUrl}/jupyter/${r.id}/tree`;
    if (this.deps.reach.simulatedPages) return `${this.deps.publicBaseUrl}/dev/compute/jupyter/${r.id}?token=${r.jupyterToken}`;
    return null;
  }

  /**
   * Through the console's proxy: the application the machine runs (drivers that run them) or the
   * embedded ComfyUI; other applications only on the simulated fleet's pages.
   */
  private appUrl(r: InstanceRow, appId: string | undefined): string | null {
    if (appId && (appId === 'comfyui' || this.deps.reach.machineApps) && this.deps.reach.appProxy) return `${this.deps.publicBaseUrl}/app/${r.id}/`;
    if (this.deps.reach.simulatedPages && appId) return `${this.deps.publicBaseUrl}/dev/compute/app/${r.id}?token=${r.jupyterToken}`;
    return null;
  }

  /**
   * The services the running machine's image lacks, each with why and which images have it (a link
   * that would never answer is not given: the reason is shown in its place).
   */
  private missingServices(r: InstanceRow): Partial<Record<MachineService, string>> {
    const out: Partial<Record<MachineService, string>> = {};
    if (r.status !== 'Running' || !this.deps.serviceMissing) return out;
    for (const service of servicesOf(r.category)) {
      const why = this.deps.serviceMissing(r.id, service);
      if (why) out[service] = why;
    }
    return out;
  }

  view(r: InstanceRow, snap: Snapshot, imageNames: Map<string, string> = new Map(), orderUids: Map<string, string> = new Map()): Instance {
    const region = snap.regions.find((x) => x.id === r.regionId);
    const host = r.hostId ? snap.hosts.find((h) => h.id === r.hostId) : undefined;
    const gpu = r.gpuTypeId ? snap.gpuTypes.find((g) => g.id === r.gpuTypeId) : undefined;
    const image = r.imageId ? snap.images.find((i) => i.id === r.imageId) : undefined;
    const app = r.applicationId ? snap.applications.find((a) => a.id === r.applicationId) : undefined;
    const password = this.deps.passwords.open(r.sshPasswordEnc);
    const reachable = r.sshHost && r.sshPort && r.status !== 'Failed';
    const missing = this.missingServices(r);
    return {
      id: r.id,
      name: r.name,
      holderId: r.createdBy,
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
      // No-card mode (GPU machines only) runs on the operator's reduced size, never more than the machine's own.
      noCardSpec: r.gpuCount > 0 ? `${Math.min(r.cpu, snap.settings.noCardCpu)} 核 CPU / ${Math.min(r.memoryGb, snap.settings.noCardMemoryGb)} GB 内存` : null,
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
      hourlyPrice: String(runRate(r, false)),
      noCardHourlyPrice: String(r.noCardHourlyPrice),
      diskDailyPrice: String(r.diskDailyPrice),
      expireAt: r.expireAt?.toISOString() ?? null,
      autoRenew: r.autoRenew,
      releaseAt: r.releaseAt?.toISOString() ?? null,
      scheduledStopAt: r.scheduledStopAt?.toISOString() ?? null,
      access: reachable
        ? {
            sshHost: r.sshHost!,
            sshPort: r.sshPort!,
            sshUser: r.sshUser,
            sshPassword: password,
            sshCommand: `ssh -p ${r.sshPort} ${r.sshUser}@${r.sshHost}`,
            // The console's own SSH gateway (machines with shells) also takes 账号中心's keys; the user name says which machine.
            sshKeyCommand: this.deps.reach.terminal ? `ssh -p ${r.sshPort} ${r.sshUser}.${r.id.slice(0, 8)}@${r.sshHost}` : null,
            jupyterUrl: servicesOf(r.category).includes('jupyter') && !missing.jupyter ? this.jupyterUrl(r) : null,
            appUrl: this.appUrl(r, app?.id),
            terminal: this.deps.reach.terminal,
            desktop: this.deps.reach.desktop && servicesOf(r.category).includes('desktop') && !missing.desktop,
            serviceUrl: this.deps.reach.serviceProxy && !missing.service ? `${this.deps.publicBaseUrl}/service/${r.id}/` : null,
            ...(Object.keys(missing).length ? { missing } : {}),
          }
        : null,
      // No-card mode only means something for a machine with cards.
      actions: allowedActions(r.status).filter((a) => a !== 'startNoCard' || r.gpuCount > 0),
      // An expired prepaid instance is renewed before its disk can grow or it can move (it could not start anyway).
      tasks: allowedTasks(r.status).filter(
        (t) =>
          // Bandwidth changes only on e-commerce machines; migration only moves cards.
          (t !== 'changeBandwidth' || r.category === 'Ebusiness') &&
          (t !== 'migrate' || r.gpuCount > 0) &&
          (t === 'saveImage' || !r.expireAt || r.expireAt > this.deps.clock.now()),
      ),
      userImageId: r.userImageId,
      userImageName: r.userImageId ? (imageNames.get(r.userImageId) ?? null) : null,
      orderUid: orderIdOf(r).map((id) => orderUids.get(id))[0] ?? null,
      createdAt: r.createdAt.toISOString(),
      startedAt: r.startedAt?.toISOString() ?? null,
      stoppedAt: r.stoppedAt?.toISOString() ?? null,
    };
  }
}

/**
 * The console's ways into a machine of this category besides SSH and the terminal: JupyterLab on the
 * machines people compute on, the desktop on desktops, games and shops, 自定义服务 on all.
 */
function servicesOf(category: InstanceCategory): MachineService[] {
  if (DESKTOP_CATEGORIES.includes(category)) return ['desktop', 'service'];
  return category === 'Gpu' || category === 'App' || category === 'Generic' ? ['jupyter', 'service'] : ['service'];
}

/** The instance if this user may manage it: the payer's, and for a child only in categories it was granted (without 财务, only its own). */
export async function findManaged(db: Db, user: UserRow, id: string): Promise<InstanceRow> {
  const [row] = await db
    .select()
    .from(instances)
    .where(and(eq(instances.id, id), eq(instances.userId, payerIdOf(user)), createdByScope(user)));
  if (!row || row.releasedAt) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在或已释放`);
  if (user.isChild && !childCategories(user).includes(row.category)) throw new AppError('PERMISSION_DENIED', `子账号没有管理${row.category}实例的权限`);
  return row;
}

/**
 * A child without the 财务 permission sees and manages only the instances it created itself (its own
 * purchases); a main account and a child with 财务 all of the payer's (undefined: no condition).
 */
export function createdByScope(user: UserRow): SQL | undefined {
  return seesPayerFinance(user) ? undefined : eq(instances.createdBy, user.id);
}

/** Categories a child account may see and manage (spec §6). */
function childCategories(user: UserRow): InstanceCategory[] {
  return (Object.entries(MANAGE_PERMISSIONS) as [InstanceCategory, readonly (keyof UserRow)[]][])
    .filter(([, flags]) => flags.some((f) => user[f] === true))
    .map(([c]) => c);
}

const OP_LABELS: Record<string, string> = {
  create: '创建',
  rename: '修改名称',
  hand: '转交',
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
  scheduleStop: '设置定时关机',
  cancelScheduledStop: '取消定时关机',
  scheduledStop: '定时关机',
  ...InstanceActionLabel,
};

function operationLabel(action: string): string {
  if (OP_LABELS[action]) return OP_LABELS[action];
  if (action.startsWith('fail:')) return `${OP_LABELS[action.slice(5)] ?? action.slice(5)}失败`;
  return action;
}

/** A child by its name, a main account by its masked mobile. */
function actorName(who: { mobile: string | null; isChild: boolean; childName: string | null } | undefined): string {
  if (who?.isChild) return `子账号 ${who.childName}`;
  return who?.mobile ? maskMobile(who.mobile) : '主账号';
}

/** The order an instance was bought by: its prepaid order, or the post-paid one that bills it. */
function orderIdOf(r: Pick<InstanceRow, 'orderId' | 'usageOrderId'>): string[] {
  const id = r.orderId ?? r.usageOrderId;
  return id ? [id] : [];
}
