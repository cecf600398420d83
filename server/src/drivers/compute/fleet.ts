/**
 * The `fleet` compute driver (issue 31 §2, COMPUTE_DRIVER=fleet): many GPU hosts, each running the
 * compute agent (`npm run compute-agent`, the real local driver) registered with the console
 * (`npm run operator -- host add`, table fleet_hosts). One AgentComputeDriver per host; an operation
 * goes to the host of its machine (a create: the spec's host), and the events of every agent are
 * merged into one ordered stream for the reconciler.
 *
 * - **The merged stream.** Each read of events (the reconciler's, which runs on the replica holding
 *   the `compute.reconcile` lease) first polls every host: its heartbeat (GET /v1/host) and its new
 *   events, copied into fleet_events under one global seq; the agent's own cursor is a column of its
 *   host's row. Both survive a console restart and any replica continues them; a copy made twice (two
 *   pollers at once) is stopped by (host, agent seq) being unique.
 * - **A host that stops answering.** After FLEET_HOST_GRACE_SECONDS without a heartbeat the host is
 *   `lost` and each of its machines gets a `lost` event (the instance: Unknown, 主机异常, billing
 *   paused, owner told — modules/instances). When it answers again, each machine gets a `found` event
 *   with its real power, then the agent's events go on; operations that waited are resent by the
 *   reconciler (stale operations), the agent deduping them by opId.
 * - **The synchronous calls** (runningIds, serviceMissing, shell, socketOf, app): the host's agent
 *   answers from what it read last; the running machines also from the last heartbeat.
 * - **Moving a machine to another host** (migrate to a target that is another agent): fleet-migrate.ts,
 *   in the background; its outcome is the fleet's own `migrate` event, and the machine's host moves.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AgentComputeDriver, type AgentComputeOptions } from './agent.js';
import { isMigrationStep, migrateAcrossHosts, type MigrateOutcome } from './fleet-migrate.js';
import { fleetEvents, fleetHosts, fleetMachines } from './fleet-schema.js';
import { hostReportSchema, readHostReport, reportIsHealthy, type HostReport } from './host-report.js';
import { eventOfRow, OperationCalls } from './operations.js';
import type {
  ComputeDriver,
  DriverEvent,
  FileStoreMount,
  HostOffer,
  InstanceOp,
  MachineAccess,
  MachineApp,
  MachineSample,
  MachineService,
  MachineStatus,
  ShellCommand,
} from './types.js';

type HostRow = typeof fleetHosts.$inferSelect;

/** How many of an agent's events one poll copies at most (the rest at the next). */
const AGENT_PAGE = 500;

export interface FleetOptions {
  db: Db;
  clock: Clock;
  /** The key the hosts' secrets are sealed under (fleetSecretKey). */
  secretKey: () => Promise<Buffer>;
  /** How long a host may stay silent before its machines are lost (FLEET_HOST_GRACE_SECONDS). */
  graceMs: number;
  log?: (message: string) => void;
  /** More options of each host's AgentComputeDriver (timeouts in tests; the channel's settings). */
  agentOptions?: Partial<AgentComputeOptions>;
  /** How long a heartbeat may take (default 3 s). */
  heartbeatTimeoutMs?: number;
  /**
   * The console's SSH gateway, the one address users log in through: it replaces whatever address
   * an agent reports (an agent knows its own settings, not where the console's gateway listens).
   */
  sshGateway?: () => MachineAccess;
}

/** The key that seals the hosts' secrets: from SESSION_SECRET where it is set (a dump then reveals nothing), else the database's own. */
export function fleetSecretKey(sessionKey: Buffer): Buffer {
  return createHash('sha256').update('fleet-host-secrets\n').update(sessionKey).digest();
}

export function sealSecret(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return [iv, c.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
}

export function openSecret(key: Buffer, sealed: string): string {
  const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
  const d = createDecipheriv('aes-256-gcm', key, iv!);
  d.setAuthTag(tag!);
  return Buffer.concat([d.update(body!), d.final()]).toString('utf8');
}

interface HostAgent {
  row: HostRow;
  agent: AgentComputeDriver;
}

export class FleetComputeDriver extends OperationCalls implements ComputeDriver {
  readonly name = 'fleet';
  readonly osFamilies = ['linux'] as const;
  /** Host id → its agent, made from fleet_hosts (again when a host's row changes). */
  private agents = new Map<string, HostAgent>();
  /** Machine → host, as far as this process has read fleet_machines. */
  private placement = new Map<string, string>();
  private polling: Promise<void> | null = null;
  private migrations = new Map<string, Promise<void>>();

  constructor(private readonly opts: FleetOptions) {
    super();
  }

  // --- the registry ------------------------------------------------------------------------------

  /** Registers (or re-registers) a host's agent; its secret is sealed, and never shown again. */
  async addHost(h: { hostId: string; baseUrl: string; keyId: string; secret: string }): Promise<void> {
    const sealed = sealSecret(await this.opts.secretKey(), h.secret);
    const now = this.opts.clock.now();
    await this.opts.db
      .insert(fleetHosts)
      .values({ hostId: h.hostId, baseUrl: h.baseUrl, keyId: h.keyId, secretSealed: sealed, registeredAt: now })
      .onConflictDoUpdate({ target: fleetHosts.hostId, set: { baseUrl: h.baseUrl, keyId: h.keyId, secretSealed: sealed } });
    this.agents.delete(h.hostId);
  }

  /** Forgets a host; refused while machines live on it. */
  async removeHost(hostId: string): Promise<{ removed: boolean; machines: number }> {
    const machines = await this.opts.db.select().from(fleetMachines).where(eq(fleetMachines.hostId, hostId));
    if (machines.length) return { removed: false, machines: machines.length };
    const gone = await this.opts.db.delete(fleetHosts).where(eq(fleetHosts.hostId, hostId)).returning();
    this.agents.delete(hostId);
    return { removed: gone.length > 0, machines: 0 };
  }

  /** The registered hosts as the operator sees them (no secrets). */
  async hosts(): Promise<FleetHostView[]> {
    const rows = await this.opts.db.select().from(fleetHosts).orderBy(asc(fleetHosts.hostId));
    return rows.map(hostView);
  }

  /**
   * What a healthy host offers (its agent's last report); null: not registered, lost, or unhealthy —
   * nothing on it is sold; 'catalogue': its agent reports no hardware (a simulated host).
   */
  async offerOf(hostId: string): Promise<HostOffer | 'catalogue' | null> {
    const [row] = await this.opts.db.select().from(fleetHosts).where(eq(fleetHosts.hostId, hostId));
    if (!row || row.status !== 'up' || !row.healthy) return null;
    return reportOf(row)?.capacity ?? 'catalogue';
  }

  // --- operations --------------------------------------------------------------------------------

  async submit(opId: string, instanceId: string, op: InstanceOp): Promise<void> {
    if (op.kind === 'create') {
      const hostId = op.params.hostId ?? (await this.anyHealthyHost());
      const { row, agent } = await this.hostAgent(hostId);
      const refused = await this.refusedCreate(row, opId, instanceId);
      if (refused) return;
      await this.place(instanceId, hostId, false);
      return agent.submit(opId, instanceId, op);
    }
    const hostId = await this.hostOf(instanceId);
    if (!hostId) throw new Error(`fleet: 机器 ${instanceId} 不在任何已登记的主机上`);
    if (op.kind === 'migrate' && op.params.targetHostId !== hostId) return this.migrateAcross(opId, instanceId, hostId, op.params.targetHostId);
    return (await this.agentOf(hostId)).submit(opId, instanceId, op);
  }

  /**
   * A machine is never created on a host that is lost or whose agent reports it unhealthy: the create
   * fails at once (the order is refunded) instead of waiting for a host that cannot run it.
   */
  private async refusedCreate(row: HostRow, opId: string, instanceId: string): Promise<boolean> {
    const why = row.status === 'lost' ? `主机 ${row.hostId} 失联` : row.lastSeenAt && !row.healthy ? (row.lastError ?? `主机 ${row.hostId} 不健康`) : null;
    if (!why) return false;
    const [known] = await this.opts.db
      .select({ seq: fleetEvents.seq })
      .from(fleetEvents)
      .where(and(eq(fleetEvents.opId, opId), eq(fleetEvents.kind, 'create')));
    if (!known)
      await this.opts.db.insert(fleetEvents).values({
        hostId: row.hostId,
        opId,
        instanceId,
        kind: 'create',
        ok: false,
        error: `所选主机暂不可用（${why}），请选择其他主机`,
        data: {},
        at: this.opts.clock.now(),
      });
    return true;
  }

  async status(instanceId: string): Promise<MachineStatus | null> {
    const hostId = await this.hostOf(instanceId);
    if (!hostId) return null;
    const { row, agent } = await this.hostAgent(hostId);
    if (row.status === 'lost') return { power: 'stopped', gpu: false, lost: true, hostId, pendingOpId: null };
    return agent.status(instanceId);
  }

  async diskUsage(instanceIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [hostId, ids] of await this.byHost(instanceIds)) {
      const usage = await this.reachable(hostId, (a) => a.diskUsage(ids));
      for (const [id, gb] of usage ?? []) out.set(id, gb);
    }
    return out;
  }

  async sample(instanceIds?: readonly string[]): Promise<Map<string, MachineSample>> {
    const out = new Map<string, MachineSample>();
    const groups = instanceIds ? await this.byHost([...instanceIds]) : new Map((await this.upHosts()).map((h) => [h.hostId, undefined]));
    for (const [hostId, ids] of groups) {
      const samples = await this.reachable(hostId, (a) => a.sample(ids));
      for (const [id, s] of samples ?? []) out.set(id, s);
    }
    return out;
  }

  /** Polls the hosts (heartbeats, their new events, losses and returns), then reads the merged stream. */
  async events(afterSeq: number, limit: number): Promise<DriverEvent[]> {
    await this.poll();
    const rows = await this.opts.db.select().from(fleetEvents).where(gt(fleetEvents.seq, afterSeq)).orderBy(asc(fleetEvents.seq)).limit(limit);
    return rows.map((r) => this.withConsoleSsh(eventOfRow(r)));
  }

  private withConsoleSsh(e: DriverEvent): DriverEvent {
    return e.access && this.opts.sshGateway ? { ...e, access: this.opts.sshGateway() } : e;
  }

  // --- the synchronous calls: the host's agent, from what it read last ----------------------------

  runningIds(): string[] {
    const ids = new Set<string>();
    for (const { row, agent } of this.agents.values()) {
      if (row.status !== 'up') continue;
      for (const id of agent.runningIds?.() ?? reportOf(row)?.running ?? []) ids.add(id);
    }
    return [...ids];
  }

  serviceMissing(instanceId: string, service: MachineService | 'sftp'): string | null {
    return this.cachedAgent(instanceId)?.serviceMissing?.(instanceId, service) ?? null;
  }

  shell(instanceId: string, command?: string[]): ShellCommand | null {
    return this.cachedAgent(instanceId)?.shell?.(instanceId, command) ?? null;
  }

  socketOf(instanceId: string, service: MachineService): { path: string; close(): void } | null {
    return this.cachedAgent(instanceId)?.socketOf?.(instanceId, service) ?? null;
  }

  app(instanceId: string): MachineApp | null {
    return this.cachedAgent(instanceId)?.app?.(instanceId) ?? null;
  }

  /** What every host's machines offer (the hosts run one agent version: the first host's says). */
  get services(): readonly MachineService[] {
    return this.firstAgent()?.services ?? ['jupyter', 'service', 'desktop'];
  }

  /** The shared 文件存储 path every host mounts (the agents' FILESTORE_ROOT) and the console reads. */
  get fileStore(): FileStoreMount | undefined {
    return this.opts.agentOptions?.fileStore;
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([...this.migrations.values()]);
    await Promise.all([...this.agents.values()].map(({ agent }) => agent.shutdown?.()));
  }

  // --- polling -----------------------------------------------------------------------------------

  /** One poll at a time in this process (across replicas: only the reconcile lease holder reads events). */
  poll(): Promise<void> {
    this.polling ??= this.pollHosts().finally(() => (this.polling = null));
    return this.polling;
  }

  private async pollHosts() {
    const rows = await this.opts.db.select().from(fleetHosts).orderBy(asc(fleetHosts.hostId));
    // All at once: a host that does not answer costs its heartbeat's timeout once, not once per host before it.
    await Promise.all(rows.map((row) => this.pollHost(row).catch((e: unknown) => this.opts.log?.(`fleet: 主机 ${row.hostId}：${(e as Error).message}`))));
  }

  private async pollHost(row: HostRow) {
    const { agent } = await this.hostAgent(row.hostId, row);
    let report: HostReport;
    try {
      report = await readHostReport({ ...(await this.agentLogin(row)), timeoutMs: this.opts.heartbeatTimeoutMs ?? 3_000 });
      if (report.hostId !== row.hostId) throw new Error(`代理报告自己是主机 ${report.hostId}，不是 ${row.hostId}（COMPUTE_AGENT_HOST_ID 配置有误）`);
    } catch (e) {
      return this.missedHeartbeat(row, (e as Error).message);
    }
    const now = this.opts.clock.now();
    const healthy = reportIsHealthy(report);
    const [fresh] = await this.opts.db
      .update(fleetHosts)
      .set({ lastSeenAt: now, report, healthy, lastError: healthy ? null : healthProblem(report) })
      .where(eq(fleetHosts.hostId, row.hostId))
      .returning();
    this.remember(fresh!, agent);
    if (row.status === 'lost') await this.recover(row, agent);
    await this.copyEvents(row.hostId, agent);
  }

  /** A heartbeat that failed: past the grace, the host's machines are lost (once). */
  private async missedHeartbeat(row: HostRow, why: string) {
    const now = this.opts.clock.now();
    const silentSince = row.lastSeenAt ?? row.registeredAt;
    await this.opts.db.update(fleetHosts).set({ lastError: why }).where(eq(fleetHosts.hostId, row.hostId));
    if (row.status === 'lost' || now.getTime() - silentSince.getTime() < this.opts.graceMs) return;
    const error = `主机异常：主机 ${row.hostId} 失联（${why}）`;
    await this.opts.db.transaction(async (tx) => {
      const turned = await tx
        .update(fleetHosts)
        .set({ status: 'lost', lostAt: now })
        .where(and(eq(fleetHosts.hostId, row.hostId), eq(fleetHosts.status, 'up')))
        .returning();
      if (!turned.length) return;
      const machines = await tx.select().from(fleetMachines).where(eq(fleetMachines.hostId, row.hostId));
      if (machines.length)
        await tx
          .insert(fleetEvents)
          .values(machines.map((m) => ({ hostId: row.hostId, opId: null, instanceId: m.instanceId, kind: 'lost', ok: false, error, data: {}, at: now })));
    });
    this.agents.delete(row.hostId);
    this.opts.log?.(`fleet: ${error}，其上的实例已标记为主机异常`);
  }

  /** The host answers again: each machine is found as it really is. */
  private async recover(row: HostRow, agent: AgentComputeDriver) {
    const machines = await this.opts.db.select().from(fleetMachines).where(eq(fleetMachines.hostId, row.hostId));
    const found: (typeof fleetEvents.$inferInsert)[] = [];
    for (const m of machines) {
      const status = await agent.status(m.instanceId);
      if (!status || status.power === 'creating') continue;
      found.push({
        hostId: row.hostId,
        opId: null,
        instanceId: m.instanceId,
        kind: 'found',
        ok: true,
        error: null,
        data: { power: status.power },
        at: this.opts.clock.now(),
      });
    }
    await this.opts.db.transaction(async (tx) => {
      const turned = await tx
        .update(fleetHosts)
        .set({ status: 'up', lostAt: null })
        .where(and(eq(fleetHosts.hostId, row.hostId), eq(fleetHosts.status, 'lost')))
        .returning();
      if (turned.length && found.length) await tx.insert(fleetEvents).values(found);
    });
    this.opts.log?.(`fleet: 主机 ${row.hostId} 恢复连接，${found.length} 台机器已按实际状态恢复`);
  }

  /** Copies the agent's new events into the merged stream (a migration's own steps stay the fleet's business). */
  private async copyEvents(hostId: string, agent: AgentComputeDriver) {
    for (;;) {
      const [row] = await this.opts.db.select({ agentSeq: fleetHosts.agentSeq }).from(fleetHosts).where(eq(fleetHosts.hostId, hostId));
      const events = await agent.events(row!.agentSeq, AGENT_PAGE);
      if (!events.length) return;
      const last = events[events.length - 1]!.seq;
      const kept = events.filter((e) => !isMigrationStep(e.opId));
      await this.opts.db.transaction(async (tx) => {
        if (kept.length)
          await tx
            .insert(fleetEvents)
            .values(kept.map((e) => rowOfEvent(hostId, e)))
            .onConflictDoNothing();
        await tx
          .update(fleetHosts)
          .set({ agentSeq: sql`greatest(${fleetHosts.agentSeq}, ${last})` })
          .where(eq(fleetHosts.hostId, hostId));
        const gone = kept.filter((e) => e.kind === 'destroy' && e.ok).map((e) => e.instanceId);
        if (gone.length) await tx.delete(fleetMachines).where(and(inArray(fleetMachines.instanceId, gone), eq(fleetMachines.hostId, hostId)));
      });
      for (const e of kept) if (e.kind === 'destroy' && e.ok) this.placement.delete(e.instanceId);
      if (events.length < AGENT_PAGE) return;
    }
  }

  // --- migration between hosts -------------------------------------------------------------------

  /** Starts (or joins) the move; its outcome arrives as the fleet's `migrate` event. */
  private async migrateAcross(opId: string, instanceId: string, sourceHostId: string, targetHostId: string) {
    if (this.migrations.has(opId)) return;
    const source = await this.agentOf(sourceHostId);
    const target = await this.agentOf(targetHostId);
    if (!hasMigration(source) || !hasMigration(target)) throw new Error('fleet: 主机的代理不支持跨主机迁移（请升级算力代理）');
    const run = migrateAcrossHosts(
      { opId, instanceId, source, target, targetHostId },
      { report: (outcome) => this.reportMigration(opId, instanceId, sourceHostId, targetHostId, outcome), log: this.opts.log },
    )
      .then(() => undefined)
      .catch((e: unknown) => this.opts.log?.(`fleet: 迁移 ${opId} 中断：${String(e)}（重新提交后继续）`))
      .finally(() => this.migrations.delete(opId));
    this.migrations.set(opId, run);
  }

  private async reportMigration(opId: string, instanceId: string, sourceHostId: string, targetHostId: string, outcome: MigrateOutcome) {
    const now = this.opts.clock.now();
    await this.opts.db.transaction(async (tx) => {
      const [known] = await tx
        .select({ seq: fleetEvents.seq })
        .from(fleetEvents)
        .where(and(eq(fleetEvents.opId, opId), eq(fleetEvents.kind, 'migrate')));
      if (known) return;
      if (outcome.ok) await tx.update(fleetMachines).set({ hostId: targetHostId, updatedAt: now }).where(eq(fleetMachines.instanceId, instanceId));
      await tx.insert(fleetEvents).values({
        hostId: outcome.ok ? targetHostId : sourceHostId,
        opId,
        instanceId,
        kind: 'migrate',
        ok: outcome.ok,
        error: outcome.error,
        data: outcome.access ? { access: outcome.access } : {},
        at: now,
      });
    });
    if (outcome.ok) this.placement.set(instanceId, targetHostId);
  }

  // --- hosts and their agents --------------------------------------------------------------------

  private async place(instanceId: string, hostId: string, move: boolean) {
    const now = this.opts.clock.now();
    const q = this.opts.db.insert(fleetMachines).values({ instanceId, hostId, updatedAt: now });
    await (move ? q.onConflictDoUpdate({ target: fleetMachines.instanceId, set: { hostId, updatedAt: now } }) : q.onConflictDoNothing());
    this.placement.set(instanceId, (await this.hostOf(instanceId, true))!);
  }

  private async hostOf(instanceId: string, fresh = false): Promise<string | null> {
    if (!fresh && this.placement.has(instanceId)) return this.placement.get(instanceId)!;
    const [m] = await this.opts.db.select().from(fleetMachines).where(eq(fleetMachines.instanceId, instanceId));
    if (m) this.placement.set(instanceId, m.hostId);
    return m?.hostId ?? null;
  }

  /** Where a machine without a host of the catalogue (a CPU machine) goes: the first healthy host. */
  private async anyHealthyHost(): Promise<string> {
    const up = (await this.upHosts()).filter((h) => h.healthy);
    if (!up.length) throw new Error('fleet: 没有可用的主机');
    return up[0]!.hostId;
  }

  private upHosts() {
    return this.opts.db.select().from(fleetHosts).where(eq(fleetHosts.status, 'up')).orderBy(asc(fleetHosts.hostId));
  }

  private async byHost(instanceIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const id of new Set(instanceIds)) {
      const hostId = await this.hostOf(id);
      if (!hostId) continue;
      out.set(hostId, [...(out.get(hostId) ?? []), id]);
    }
    return out;
  }

  /** `call` on the host's agent where it is up; null where it is lost or does not answer (its machines are left out). */
  private async reachable<T>(hostId: string, call: (a: AgentComputeDriver) => Promise<T>): Promise<T | null> {
    try {
      const { row, agent } = await this.hostAgent(hostId);
      return row.status === 'up' ? await call(agent) : null;
    } catch (e) {
      this.opts.log?.(`fleet: 主机 ${hostId}：${(e as Error).message}`);
      return null;
    }
  }

  private async agentOf(hostId: string): Promise<AgentComputeDriver> {
    return (await this.hostAgent(hostId)).agent;
  }

  private async hostAgent(hostId: string, given?: HostRow): Promise<HostAgent> {
    const [row] = given ? [given] : await this.opts.db.select().from(fleetHosts).where(eq(fleetHosts.hostId, hostId));
    if (!row) throw new Error(`fleet: 主机 ${hostId} 未登记（npm run operator -- host add）`);
    const known = this.agents.get(hostId);
    if (known && known.row.baseUrl === row.baseUrl && known.row.secretSealed === row.secretSealed && known.row.keyId === row.keyId)
      return this.remember(row, known.agent);
    await known?.agent.shutdown?.();
    return this.remember(row, new AgentComputeDriver({ ...this.opts.agentOptions, ...(await this.agentLogin(row)) }));
  }

  private remember(row: HostRow, agent: AgentComputeDriver): HostAgent {
    const h = { row, agent };
    this.agents.set(row.hostId, h);
    return h;
  }

  private async agentLogin(row: HostRow) {
    return { baseUrl: row.baseUrl, keyId: row.keyId, secret: openSecret(await this.opts.secretKey(), row.secretSealed) };
  }

  private cachedAgent(instanceId: string): AgentComputeDriver | null {
    const hostId = this.placement.get(instanceId);
    const h = hostId ? this.agents.get(hostId) : undefined;
    return h && h.row.status === 'up' ? h.agent : null;
  }

  private firstAgent(): AgentComputeDriver | null {
    return this.agents.values().next().value?.agent ?? null;
  }
}

/** A registered host as `operator host list` shows it. */
export interface FleetHostView {
  hostId: string;
  baseUrl: string;
  keyId: string;
  status: 'up' | 'lost';
  healthy: boolean;
  lastSeenAt: Date | null;
  lastError: string | null;
  report: HostReport | null;
}

function hostView(r: HostRow): FleetHostView {
  return {
    hostId: r.hostId,
    baseUrl: r.baseUrl,
    keyId: r.keyId,
    status: r.status,
    healthy: r.healthy,
    lastSeenAt: r.lastSeenAt,
    lastError: r.lastError,
    report: reportOf(r),
  };
}

function reportOf(r: HostRow): HostReport | null {
  const parsed = hostReportSchema.safeParse(r.report);
  return parsed.success ? parsed.data : null;
}

function healthProblem(r: HostReport): string {
  const problems = [
    !r.health.sandboxes.ok && r.health.sandboxes.why,
    !r.health.gpus.ok && r.health.gpus.why,
    r.health.diskFreeGb !== null && r.health.diskFreeGb < 1 && '磁盘已满',
  ].filter(Boolean);
  return `主机不健康：${problems.join('；')}`;
}

function rowOfEvent(hostId: string, e: DriverEvent): typeof fleetEvents.$inferInsert {
  const { seq, opId, instanceId, kind, ok, error, at, ...data } = e;
  return { hostId, hostSeq: seq, opId, instanceId, kind, ok, error, data, at };
}

function hasMigration(a: AgentComputeDriver): a is AgentComputeDriver & Required<Pick<ComputeDriver, 'submitMigration' | 'operation'>> {
  const d = a as ComputeDriver;
  return typeof d.submitMigration === 'function' && typeof d.operation === 'function';
}
