/**
 * The simulated fleet, the default compute driver: machines on the catalogue's hosts whose
 * operations take real (configurable) time and can fail. Its state lives in its own sim_* tables,
 * as a real backend's lives in the backend, so it survives a restart of the console and is shared
 * by every server process. Time comes from the injected clock: an operation is done once the clock
 * has passed its due time, and its event carries that time, so tests move the clock instead of
 * sleeping.
 */
import { createHash } from 'node:crypto';
import { and, asc, eq, gt, inArray, lte, ne, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { simEvents, simFaults, simLostHosts, simMachines, simOperations } from './simulated-schema.js';
import { eventOfRow, OperationCalls, opOfRow, stateRefusal } from './operations.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { simulatedComputeRoutes } from './simulated-routes.js';
import {
  bootOpId,
  type ComputeDriver,
  type DriverEvent,
  type DriverRoutesDeps,
  type DriverOp,
  type EventKind,
  type InstanceOp,
  type MachineSample,
  type MachineSpec,
  type MachineStatus,
  type RemovedImage,
  type SavedImageInfo,
} from './types.js';

export type SimDelays = Record<DriverOp['kind'], number>;

/** Roughly what a real GPU cloud takes, in milliseconds. */
export const DEFAULT_SIM_DELAYS: SimDelays = {
  create: 4000,
  boot: 3000,
  start: 3000,
  stop: 2000,
  restart: 4000,
  destroy: 2000,
  resizeDisk: 3000,
  migrate: 8000,
  saveImage: 6000,
  changeBandwidth: 2000,
};

/** "create=4000,boot=3000" → delays, the rest default; a bad entry is an error at start. */
export function parseSimDelays(raw: string | undefined): SimDelays {
  const out = { ...DEFAULT_SIM_DELAYS };
  if (!raw) return out;
  for (const part of raw.split(',')) {
    const [k, v] = part.split('=').map((s) => s.trim());
    if (!k || !(k in out) || !/^\d+$/.test(v ?? '')) throw new Error(`COMPUTE_SIM_DELAYS：无法理解 “${part}”，应为 create=4000,boot=3000 这样的形式`);
    out[k as keyof SimDelays] = Number(v);
  }
  return out;
}

type OpRow = typeof simOperations.$inferSelect;
type MachineRow = typeof simMachines.$inferSelect;

export class SimulatedComputeDriver extends OperationCalls implements ComputeDriver {
  readonly name = 'simulated';
  /** Loads set by setLoad, in this process only (a demonstration aid, like the rest of the made-up figures). */
  private readonly loads = new Map<string, SimLoad>();

  constructor(
    private db: Db,
    private clock: Clock,
    private delays: SimDelays = DEFAULT_SIM_DELAYS,
    private domain = 'gpu.local',
  ) {
    super();
  }

  /** Its machines' JupyterLab and application pages (how an instance is reached here), and the fleet's control panel. */
  routes(deps: DriverRoutesDeps): RoutesPlugin {
    return async (app) => simulatedComputeRoutes(app, this, deps.accessOf, { controlPanel: deps.controlPanel });
  }

  async status(instanceId: string): Promise<MachineStatus | null> {
    await this.advance();
    const [m] = await this.db.select().from(simMachines).where(eq(simMachines.instanceId, instanceId));
    const [pending] = await this.db
      .select({ opId: simOperations.opId })
      .from(simOperations)
      .where(and(eq(simOperations.instanceId, instanceId), eq(simOperations.state, 'pending')))
      .limit(1);
    if (!m) return pending ? { power: 'creating', gpu: false, lost: false, hostId: null, pendingOpId: pending.opId } : null;
    const lost = m.hostId ? (await this.db.select().from(simLostHosts).where(eq(simLostHosts.hostId, m.hostId))).length > 0 : false;
    return { power: m.power, gpu: m.gpu, lost, hostId: m.hostId, pendingOpId: pending?.opId ?? null };
  }

  /** The simulated machine itself (disk size, bandwidth limit…), as a host would show it; null when unknown. */
  async machine(instanceId: string): Promise<MachineRow | null> {
    const [m] = await this.db.select().from(simMachines).where(eq(simMachines.instanceId, instanceId));
    return m ?? null;
  }

  async events(afterSeq: number, limit: number): Promise<DriverEvent[]> {
    await this.advance();
    const rows = await this.db.select().from(simEvents).where(gt(simEvents.seq, afterSeq)).orderBy(asc(simEvents.seq)).limit(limit);
    return rows.map(eventOfRow);
  }

  /**
   * Used space is simulated: each machine has filled a fixed share (5–70 %, by its id) of the disk
   * it was created with; an expansion adds free space, not data.
   */
  async diskUsage(instanceIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (!instanceIds.length) return out;
    const rows = await this.db
      .select()
      .from(simMachines)
      .where(and(inArray(simMachines.instanceId, instanceIds), ne(simMachines.power, 'destroyed')));
    for (const m of rows) {
      const created = (m.spec as Partial<MachineSpec>).dataDiskGb ?? m.diskGb;
      out.set(m.instanceId, Math.min(m.diskGb, Math.floor((created * (5 + (hashOf(m.instanceId) % 66))) / 100)));
    }
    return out;
  }

  /**
   * Made-up figures of the running machines (模拟): CPU, memory and network that drift by the minute, disks
   * as diskUsage says, and cards that alternate between a job (≈ 70–95 %) and a pause (≈ 1 %) shorter
   * than any idle window, so that 空闲自动关机 acts only on a load set to idle (setLoad).
   */
  async sample(instanceIds?: readonly string[]): Promise<Map<string, MachineSample>> {
    const out = new Map<string, MachineSample>();
    if (instanceIds && !instanceIds.length) return out;
    const running = and(eq(simMachines.power, 'running'), instanceIds ? inArray(simMachines.instanceId, [...instanceIds]) : undefined);
    const rows = await this.db.select().from(simMachines).where(running);
    const used = await this.diskUsage(rows.map((m) => m.instanceId));
    const t = this.clock.now().getTime() / 1000;
    for (const m of rows) out.set(m.instanceId, simSample(m, t, used.get(m.instanceId) ?? 0, this.loads.get(m.instanceId)));
    return out;
  }

  /** Holds a machine's made-up CPU and GPU utilisation at these values (tests); null: back to the drift. */
  setLoad(instanceId: string, load: SimLoad | null): void {
    if (load) this.loads.set(instanceId, load);
    else this.loads.delete(instanceId);
  }

  // --- what an operator or a test can do to the fleet (GET/POST /dev/compute) ---

  /** The next `count` operations of `kind` (on `hostId`, if given) fail with `message`. */
  async injectFault(f: { kind: DriverOp['kind']; hostId?: string; count?: number; message?: string }) {
    await this.db.insert(simFaults).values({ kind: f.kind, hostId: f.hostId ?? null, remaining: f.count ?? 1, message: f.message ?? '模拟故障' });
  }

  /** The host stops answering: its machines are reported lost and their operations fail. */
  async loseHost(hostId: string) {
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await lockEventStream(tx);
      const inserted = await tx.insert(simLostHosts).values({ hostId, lostAt: now }).onConflictDoNothing().returning();
      if (!inserted.length) return;
      const machines = await tx
        .select()
        .from(simMachines)
        .where(and(eq(simMachines.hostId, hostId), ne(simMachines.power, 'destroyed')));
      for (const m of machines) await this.event(tx, { opId: null, instanceId: m.instanceId, kind: 'lost', ok: false, error: `主机 ${hostId} 失联`, at: now });
    });
  }

  /** The host answers again: its machines are reported as they are. */
  async restoreHost(hostId: string) {
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await lockEventStream(tx);
      const removed = await tx.delete(simLostHosts).where(eq(simLostHosts.hostId, hostId)).returning();
      if (!removed.length) return;
      const machines = await tx
        .select()
        .from(simMachines)
        .where(and(eq(simMachines.hostId, hostId), ne(simMachines.power, 'destroyed')));
      for (const m of machines)
        await this.event(tx, { opId: null, instanceId: m.instanceId, kind: 'found', ok: true, error: null, at: now, data: { power: m.power } });
    });
  }

  async overview() {
    const machines = await this.db.select().from(simMachines).where(ne(simMachines.power, 'destroyed'));
    const pending = await this.db.select().from(simOperations).where(eq(simOperations.state, 'pending'));
    const faults = await this.db.select().from(simFaults).where(gt(simFaults.remaining, 0));
    const lostHosts = await this.db.select().from(simLostHosts);
    return { delays: this.delays, machines, pending, faults, lostHosts };
  }

  // --- the fleet at work ---------------------------------------------------------

  submit(opId: string, instanceId: string, op: InstanceOp): Promise<void> {
    return this.schedule(opId, instanceId, op);
  }

  /** Records an operation, due after its kind's delay (or at `dueAt`). */
  private async schedule(opId: string, instanceId: string, op: DriverOp, dueAt?: Date, tx: Tx | Db = this.db) {
    const now = this.clock.now();
    await tx
      .insert(simOperations)
      .values({
        opId,
        instanceId,
        kind: op.kind,
        params: op.params,
        dueAt: dueAt ?? new Date(now.getTime() + this.delays[op.kind]),
        state: 'pending',
        createdAt: now,
      })
      .onConflictDoNothing();
  }

  /** Finishes every operation whose time has come, oldest first; several processes may call it at once. */
  private async advance() {
    const now = this.clock.now();
    for (;;) {
      const done = await this.db.transaction(async (tx) => {
        await lockEventStream(tx);
        const due = await tx
          .select()
          .from(simOperations)
          .where(and(eq(simOperations.state, 'pending'), lte(simOperations.dueAt, now)))
          .orderBy(asc(simOperations.dueAt), asc(simOperations.createdAt))
          .limit(100)
          .for('update', { skipLocked: true });
        for (const op of due) await this.finish(tx, op);
        return due.length;
      });
      if (done < 100) return;
    }
  }

  private async finish(tx: Tx, op: OpRow) {
    const [machine] = await tx.select().from(simMachines).where(eq(simMachines.instanceId, op.instanceId)).for('update');
    const todo = opOfRow(op);
    const hostId = todo.kind === 'create' ? todo.params.hostId : (machine?.hostId ?? null);
    const why = (await this.refusal(tx, todo, machine, hostId)) ?? (await this.takeFault(tx, todo.kind, hostId));
    if (why) {
      await tx.update(simOperations).set({ state: 'failed', error: why }).where(eq(simOperations.opId, op.opId));
      // A machine whose creation failed is left with nothing on the host.
      if (todo.kind === 'boot' && machine)
        await tx.update(simMachines).set({ power: 'destroyed', updatedAt: op.dueAt }).where(eq(simMachines.instanceId, op.instanceId));
      await this.event(tx, { opId: op.opId, instanceId: op.instanceId, kind: todo.kind, ok: false, error: why, at: op.dueAt });
      return;
    }
    let data: object = {};
    const set = (v: Partial<MachineRow>) =>
      tx
        .update(simMachines)
        .set({ ...v, updatedAt: op.dueAt })
        .where(eq(simMachines.instanceId, op.instanceId));
    switch (todo.kind) {
      case 'create': {
        const spec = todo.params;
        const sshPort = portFor(op.instanceId);
        await tx.insert(simMachines).values({
          instanceId: op.instanceId,
          hostId: spec.hostId,
          power: 'creating',
          gpu: spec.gpuCount > 0,
          diskGb: spec.dataDiskGb,
          bandwidthMbps: spec.bandwidthMbps ?? 0,
          sshPort,
          spec,
          updatedAt: op.dueAt,
        });
        await this.schedule(bootOpId(op.opId), op.instanceId, { kind: 'boot', params: {} }, new Date(op.dueAt.getTime() + this.delays.boot), tx);
        data = { access: { sshHost: `connect.${spec.regionId}.${this.domain}`, sshPort } };
        break;
      }
      case 'boot':
      case 'restart':
        await set({ power: 'running' });
        break;
      case 'start':
        await set({ power: 'running', gpu: todo.params.gpu });
        break;
      case 'stop':
        await set({ power: 'stopped' });
        break;
      case 'destroy':
        await set({ power: 'destroyed' });
        break;
      case 'resizeDisk':
        await set({ diskGb: todo.params.dataDiskGb });
        break;
      case 'migrate':
        await set({ hostId: todo.params.targetHostId });
        break;
      case 'changeBandwidth':
        await set({ bandwidthMbps: todo.params.bandwidthMbps });
        break;
      case 'saveImage':
        data = { imageSizeGb: simImageSizeGb(op.instanceId) };
        break;
    }
    await tx.update(simOperations).set({ state: 'done' }).where(eq(simOperations.opId, op.opId));
    await this.event(tx, { opId: op.opId, instanceId: op.instanceId, kind: todo.kind, ok: true, error: null, at: op.dueAt, data });
  }

  /** What a real backend would refuse: an operation that does not fit the machine's state. */
  private async refusal(tx: Tx, op: DriverOp, m: MachineRow | undefined, hostId: string | null): Promise<string | null> {
    if (hostId && (await tx.select().from(simLostHosts).where(eq(simLostHosts.hostId, hostId))).length) return `主机 ${hostId} 失联，操作超时`;
    if (op.kind === 'create') return m ? '机器已存在' : null;
    if (!m || m.power === 'destroyed') return '机器不存在';
    return stateRefusal(op.kind, m.power);
  }

  private async takeFault(tx: Tx, kind: string, hostId: string | null): Promise<string | null> {
    const faults = await tx
      .select()
      .from(simFaults)
      .where(and(eq(simFaults.kind, kind), gt(simFaults.remaining, 0)))
      .orderBy(asc(simFaults.id))
      .for('update');
    const f = faults.find((x) => x.hostId === null || x.hostId === hostId);
    if (!f) return null;
    await tx
      .update(simFaults)
      .set({ remaining: sql`${simFaults.remaining} - 1` })
      .where(eq(simFaults.id, f.id));
    return f.message;
  }

  private async event(tx: Tx, e: { opId: string | null; instanceId: string; kind: EventKind; ok: boolean; error: string | null; at: Date; data?: object }) {
    await tx.insert(simEvents).values({ opId: e.opId, instanceId: e.instanceId, kind: e.kind, ok: e.ok, error: e.error, data: e.data ?? {}, at: e.at });
  }

  /**
   * A saved image as the simulation records it: the save that made it, the machine's base, and
   * made-up layers whose sizes add up to the size the save reported (labelled simulated).
   */
  async imageInfo(imageRef: string): Promise<SavedImageInfo | null> {
    const save = await this.savedImage(imageRef);
    if (!save) return null;
    const [m] = await this.db.select().from(simMachines).where(eq(simMachines.instanceId, save.instanceId));
    return simImageInfo(save.instanceId, (m?.spec as Partial<MachineSpec> | undefined)?.imageId ?? null, save.dueAt);
  }

  /** Forgets a saved image (its save is marked removed): its own layer is what a real host would free. */
  async removeImage(imageRef: string): Promise<RemovedImage> {
    const save = await this.savedImage(imageRef);
    if (!save) return { removed: false, freedBytes: null, freed: 'gc', simulated: true };
    await this.db
      .update(simOperations)
      .set({ params: { ...(save.params as object), removed: true } })
      .where(eq(simOperations.opId, save.opId));
    const info = simImageInfo(save.instanceId, null, save.dueAt);
    return { removed: true, freedBytes: info.layers.at(-1)!.sizeBytes, freed: 'gc', simulated: true };
  }

  private async savedImage(imageRef: string): Promise<OpRow | null> {
    const rows = await this.db
      .select()
      .from(simOperations)
      .where(and(eq(simOperations.kind, 'saveImage'), eq(simOperations.state, 'done'), sql`${simOperations.params}->>'imageRef' = ${imageRef}`));
    return rows.find((r) => !(r.params as { removed?: boolean }).removed) ?? null;
  }

  /** Pending operations of some instances (tests and the dev page). */
  async pendingOf(instanceIds: string[]) {
    if (!instanceIds.length) return [];
    return this.db
      .select()
      .from(simOperations)
      .where(and(inArray(simOperations.instanceId, instanceIds), eq(simOperations.state, 'pending')));
  }
}

/**
 * Writers of sim_events take turns, so events commit in the order of their seq and a reader that
 * has seen seq n has seen everything before it.
 */
async function lockEventStream(tx: Tx) {
  await tx.execute(sql`select pg_advisory_xact_lock(724002)`);
}

function hashOf(instanceId: string): number {
  return createHash('sha256').update(instanceId).digest().readUInt32BE(0);
}

/** Utilisation (0–100) a simulated machine is held at instead of its drift. */
export interface SimLoad {
  cpuPercent?: number;
  gpuPercent?: number;
}

const GB = 1024 ** 3;
/** A simulated card's memory: an RTX 4090's, the fleet's most common card. */
const SIM_GPU_MEMORY_MB = 24_564;

/** One made-up sample of a running machine at `t` (seconds): smooth waves with a phase of its own. */
function simSample(m: MachineRow, t: number, usedDataGb: number, load: SimLoad | undefined): MachineSample {
  const spec = m.spec as Partial<MachineSpec>;
  const phase = (hashOf(m.instanceId) % 628) / 100;
  const wave = (periodS: number, shift = 0) => Math.sin((2 * Math.PI * t) / periodS + phase + shift);
  const memoryLimitBytes = (spec.memoryGb ?? 16) * GB;
  const systemDiskSizeBytes = (spec.systemDiskGb ?? 30) * GB;
  // Cards work 40 minutes of each hour: a pause is always shorter than the shortest idle window.
  const working = (t / 60 + phase * 10) % 60 < 40;
  const cards = m.gpu ? (spec.gpuCount ?? 0) : 0;
  const round1 = (x: number) => Math.round(x * 10) / 10;
  return {
    cpuPercent: round1(load?.cpuPercent ?? Math.min(99, Math.max(1, 28 + 18 * wave(1800) + 7 * wave(130, 1)))),
    memoryUsedBytes: Math.round(memoryLimitBytes * (0.35 + 0.1 * wave(3600, 2))),
    memoryLimitBytes,
    dataDiskUsedBytes: usedDataGb * GB,
    dataDiskSizeBytes: m.diskGb * GB,
    systemDiskUsedBytes: Math.round(systemDiskSizeBytes * 0.42),
    systemDiskSizeBytes,
    netRxBytesPerSec: Math.round(400_000 * (1.1 + wave(600, 3))),
    netTxBytesPerSec: Math.round(60_000 * (1.1 + wave(900, 4))),
    gpus: Array.from({ length: cards }, (_, i) => {
      const util = load?.gpuPercent ?? (working ? 82 + 12 * wave(300, i) : 1);
      return { utilisation: round1(util), memoryUsedMb: Math.round(util > 5 ? SIM_GPU_MEMORY_MB * 0.7 : 900), memoryTotalMb: SIM_GPU_MEMORY_MB };
    }),
    gpuUnavailable: null,
    simulated: true,
  };
}

/** A stable SSH port per machine, as a NAT gateway in front of a host would give. */
function portFor(instanceId: string): number {
  return 20000 + (hashOf(instanceId) % 40000);
}

/**
 * The made-up layers of a saved image: three of its base and the machine's changes, compressed
 * adding up to the size its save reported, unpacked about 2.4 times that (a Python tree's ratio).
 */
function simImageInfo(instanceId: string, baseImageId: string | null, at: Date): SavedImageInfo {
  const total = simImageSizeGb(instanceId) * GB;
  const digest = (what: string) => `sha256:${createHash('sha256').update(`sim:${instanceId}:${what}`).digest('hex')}`;
  const baseShares = [0.38, 0.17, 0.09];
  const baseLayers = baseShares.map((share, i) => ({ digest: digest(`base:${baseImageId}:${i}`), sizeBytes: Math.round(total * share) }));
  const own = total - baseLayers.reduce((sum, l) => sum + l.sizeBytes, 0);
  return {
    sizeBytes: total,
    unpackedBytes: Math.round(total * 2.4),
    base: { ref: null, digest: digest(`base:${baseImageId}`) },
    layers: [...baseLayers, { digest: digest('own'), sizeBytes: own }],
    createdAt: at.toISOString(),
    simulated: true,
  };
}

/** What saving a machine's system disk gives: 8–27 GB, stable per machine. */
function simImageSizeGb(instanceId: string): number {
  return 8 + (hashOf(`image:${instanceId}`) % 20);
}
