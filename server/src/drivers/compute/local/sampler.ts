/**
 * What a local machine is doing, read from the host the way AutoPanel reads a container: CPU time and
 * memory from its control group (cgroups.ts made it), network bytes from its own network namespace
 * (/proc/<its init>/net/dev, read from the host), disks from their file systems, GPUs from the host's
 * driver where a reader of them is given. Rates (CPU, network) are differences between two calls, so
 * the sampler keeps each machine's last counters; the first call after a start has none.
 *
 * cgroup v2 gives CPU time as cpu.stat usage_usec; v1 as cpuacct.usage where cpuacct shares the cpu
 * hierarchy. Where it does not (cpuacct mounted apart, as on some hosts), the machine's CPU time is
 * the sum of its processes' (/proc/<pid>/stat of every pid in its group, their reaped children
 * included), counted per process so that a process that ends takes nothing away from the next
 * sample; what a process did between its last sample and its end is not seen there, so short
 * commands count less than they took (a training job or a notebook kernel, which run on, count whole).
 */
import { existsSync, readFileSync } from 'node:fs';
import { lstat, readdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { MachineSample, MachineSpec } from '../types.js';
import { mountedDevice, usedBytes } from './disk.js';
import type { RunningSandbox, SandboxPaths } from './sandbox.js';
import type { localMachines } from './schema.js';

/** A running machine as the sampler needs it. */
export interface SampledMachine {
  instanceId: string;
  /** The host pid of the sandbox's init: its network namespace is the machine's. */
  initPid: number;
  /** The machine's control group folders (v1: one per controller; v2: one); none: it runs without limits. */
  cgroupDirs: readonly string[];
  /** The plan's cores and memory (what CPU % is a share of, and the memory limit where no group enforces one). */
  cpus: number;
  memoryBytes: number;
  data: { folder: string; sizeBytes: number };
  system: { folder: string; sizeBytes: number };
  /** The cards it holds now (0: none, or started in no-card mode). */
  gpuCount: number;
}

/** The host's cards by minor number (/dev/nvidia<minor>) and which of them each machine holds (local/gpus.ts). */
export interface GpuReader {
  read(): Promise<Map<number, { utilisation: number; memoryUsedMb: number; memoryTotalMb?: number | null }>>;
  held(instanceIds: readonly string[]): Promise<Map<string, number[]>>;
}

type CardFigures = Awaited<ReturnType<GpuReader['read']>>;
/** What the cards were doing, and which each machine holds; null where they could not be read. */
type Cards = { figures: CardFigures; held: Map<string, number[]> } | null;

interface Counters {
  atMs: number;
  /** The group's CPU time in µs, where the group gives it. */
  cpuUsec: number | null;
  /** Else each process's CPU time in clock ticks. */
  perPid: Map<number, number> | null;
  net: { rx: number; tx: number } | null;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;
/** How long a walked (not mounted) disk's size is reused: walking a system layer is not a 15-second job. */
const WALK_REUSE_MS = 5 * 60_000;
/** A v1 memory limit at or above this means none (the kernel's "unlimited" is near 2^63). */
const NO_LIMIT = 2 ** 60;
/** Counters older than this are not a previous sample (the machine stopped, or was not sampled): they are forgotten. */
const STALE_MS = 2 * 60_000;
const GB = 1024 ** 3;

/** A running machine of the driver's table as the sampler needs it; none when its sandbox is gone. */
export function sampledMachine(m: typeof localMachines.$inferSelect, sandbox: RunningSandbox | undefined, paths: SandboxPaths): SampledMachine[] {
  if (!sandbox) return [];
  const spec = m.spec as MachineSpec;
  return [
    {
      instanceId: m.instanceId,
      initPid: sandbox.initPid,
      cgroupDirs: sandbox.cgroupProcs.map((procs) => path.dirname(procs)),
      cpus: spec.cpu,
      memoryBytes: spec.memoryGb * GB,
      data: { folder: paths.data, sizeBytes: m.diskGb * GB },
      system: { folder: paths.system, sizeBytes: (spec.systemDiskGb ?? 30) * GB },
      gpuCount: m.gpu ? spec.gpuCount : 0,
    },
  ];
}

export const GPU_NOT_READ = '本机的 nvidia-smi 没有给出该实例显卡的数据，只显示 CPU、内存、磁盘与网络';
export const NO_CARDS_HELD = '该实例运行时没有分到本机的显卡（本机没有可用的 NVIDIA GPU），没有 GPU 数据';

export class MachineSampler {
  private readonly last = new Map<string, Counters>();
  private readonly walked = new Map<string, { atMs: number; bytes: number }>();

  constructor(private readonly gpus: GpuReader | null = null) {}

  /** One sample of each machine. */
  async sample(machines: readonly SampledMachine[], nowMs = Date.now()): Promise<Map<string, MachineSample>> {
    for (const [id, c] of this.last) if (nowMs - c.atMs > STALE_MS) this.last.delete(id);
    const cards = await this.readCards(machines.filter((m) => m.gpuCount > 0).map((m) => m.instanceId));
    const out = new Map<string, MachineSample>();
    for (const m of machines) out.set(m.instanceId, await this.sampleOne(m, nowMs, cards));
    return out;
  }

  private async readCards(ids: string[]): Promise<Cards> {
    if (!this.gpus || !ids.length) return null;
    try {
      const [figures, held] = await Promise.all([this.gpus.read(), this.gpus.held(ids)]);
      return { figures, held };
    } catch {
      return null;
    }
  }

  private async sampleOne(m: SampledMachine, nowMs: number, cards: Cards): Promise<MachineSample> {
    const prev = this.last.get(m.instanceId);
    const cpuUsec = groupCpuUsec(m.cgroupDirs);
    const perPid = cpuUsec === null ? processTicks(m.cgroupDirs) : null;
    const net = netBytes(m.initPid);
    this.last.set(m.instanceId, { atMs: nowMs, cpuUsec, perPid, net });
    const elapsedS = prev ? (nowMs - prev.atMs) / 1000 : 0;
    const memory = groupMemory(m.cgroupDirs);
    const [data, system] = await Promise.all([this.disk(m.data, nowMs), this.disk(m.system, nowMs)]);
    return {
      cpuPercent: prev && elapsedS > 0 ? cpuPercent(prev, cpuUsec, perPid, elapsedS, m.cpus) : null,
      memoryUsedBytes: memory.used,
      memoryLimitBytes: memory.limit ?? m.memoryBytes,
      dataDiskUsedBytes: data.used,
      dataDiskSizeBytes: data.size,
      systemDiskUsedBytes: system.used,
      systemDiskSizeBytes: system.size,
      netRxBytesPerSec: prev?.net && net && elapsedS > 0 ? rate(net.rx - prev.net.rx, elapsedS) : null,
      netTxBytesPerSec: prev?.net && net && elapsedS > 0 ? rate(net.tx - prev.net.tx, elapsedS) : null,
      ...this.cardsOf(m, cards),
      simulated: false,
    };
  }

  private cardsOf(m: SampledMachine, cards: Cards): Pick<MachineSample, 'gpus' | 'gpuUnavailable'> {
    if (m.gpuCount === 0) return { gpus: [], gpuUnavailable: null };
    if (!cards) return { gpus: [], gpuUnavailable: GPU_NOT_READ };
    const minors = cards.held.get(m.instanceId) ?? [];
    if (!minors.length) return { gpus: [], gpuUnavailable: NO_CARDS_HELD };
    const gpus = [...minors]
      .sort((a, b) => a - b)
      .flatMap((minor) => {
        const c = cards.figures.get(minor);
        return c ? [{ utilisation: c.utilisation, memoryUsedMb: c.memoryUsedMb, memoryTotalMb: c.memoryTotalMb ?? null }] : [];
      });
    return gpus.length === minors.length ? { gpus, gpuUnavailable: null } : { gpus: [], gpuUnavailable: GPU_NOT_READ };
  }

  /** Used and total bytes of a disk: its file system's where it is one of its own, else a (reused) walk and the plan's size. */
  private async disk(d: { folder: string; sizeBytes: number }, nowMs: number): Promise<{ used: number | null; size: number }> {
    try {
      if (mountedDevice(d.folder)) {
        const s = await statfs(d.folder);
        return { used: await usedBytes(d.folder), size: s.blocks * s.bsize };
      }
      const cached = this.walked.get(d.folder);
      if (cached && nowMs - cached.atMs < WALK_REUSE_MS) return { used: cached.bytes, size: d.sizeBytes };
      const bytes = await bytesUnder(d.folder);
      this.walked.set(d.folder, { atMs: nowMs, bytes });
      return { used: bytes, size: d.sizeBytes };
    } catch {
      return { used: null, size: d.sizeBytes };
    }
  }
}

function rate(delta: number, seconds: number): number | null {
  // A counter that went back (the interface was recreated) says nothing of this interval.
  return delta >= 0 ? Math.round(delta / seconds) : null;
}

function cpuPercent(prev: Counters, cpuUsec: number | null, perPid: Map<number, number> | null, elapsedS: number, cpus: number): number | null {
  let usedUsec: number;
  if (cpuUsec !== null && prev.cpuUsec !== null) usedUsec = cpuUsec - prev.cpuUsec;
  else if (perPid && prev.perPid) usedUsec = ticksSince(prev.perPid, perPid) * (1e6 / USER_HZ);
  else return null;
  const share = (100 * usedUsec) / (elapsedS * 1e6 * Math.max(cpus, 0.01));
  return Math.round(Math.min(100, Math.max(0, share)) * 10) / 10;
}

/** CPU ticks spent since `prev` by the processes there now (one that started since counts whole). */
function ticksSince(prev: Map<number, number>, now: Map<number, number>): number {
  let sum = 0;
  for (const [pid, ticks] of now) sum += Math.max(0, ticks - (prev.get(pid) ?? 0));
  return sum;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** A `key value` line of a cgroup stat file. */
function statField(text: string | null, key: string): number | null {
  const m = text?.match(new RegExp(`^${key} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : null;
}

/** The group's CPU time in µs: v2 cpu.stat, or v1 cpuacct.usage (ns) where cpuacct shares the cpu hierarchy. */
export function groupCpuUsec(dirs: readonly string[]): number | null {
  for (const dir of dirs) {
    const v2 = statField(readText(path.join(dir, 'cpu.stat')), 'usage_usec');
    if (v2 !== null) return v2;
    const v1 = readText(path.join(dir, 'cpuacct.usage'));
    if (v1 !== null && /^\d+\s*$/.test(v1)) return Number(v1) / 1000;
  }
  return null;
}

/** Each process of the group and its CPU ticks, its reaped children's included; null when the group lists none. */
function processTicks(dirs: readonly string[]): Map<number, number> | null {
  const procs = dirs.map((d) => readText(path.join(d, 'cgroup.procs'))).find((t) => t !== null);
  if (!procs) return null;
  const out = new Map<number, number>();
  for (const pid of procs.split('\n').filter(Boolean).map(Number)) {
    const stat = readText(`/proc/${pid}/stat`);
    if (!stat) continue;
    // After the command name (which may hold spaces and parentheses): state is field 3, utime…cstime fields 14–17.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(pid, Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
  }
  return out;
}

/**
 * Memory in use as `docker stats` counts it (the group's charge less the page cache it may drop at
 * once) and the group's limit (null: none).
 */
export function groupMemory(dirs: readonly string[]): { used: number | null; limit: number | null } {
  for (const dir of dirs) {
    const v2 = readText(path.join(dir, 'memory.current'));
    if (v2 !== null) {
      const inactive = statField(readText(path.join(dir, 'memory.stat')), 'inactive_file') ?? 0;
      const max = readText(path.join(dir, 'memory.max'))?.trim();
      return { used: Math.max(0, Number(v2) - inactive), limit: max && max !== 'max' ? Number(max) : null };
    }
    const v1 = readText(path.join(dir, 'memory.usage_in_bytes'));
    if (v1 !== null) {
      const inactive = statField(readText(path.join(dir, 'memory.stat')), 'total_inactive_file') ?? 0;
      const limit = Number(readText(path.join(dir, 'memory.limit_in_bytes')) ?? NaN);
      return { used: Math.max(0, Number(v1) - inactive), limit: Number.isFinite(limit) && limit < NO_LIMIT ? limit : null };
    }
  }
  return { used: null, limit: null };
}

/** Bytes through the machine's own interfaces (its loopback left out), from its network namespace; null where it cannot be read. */
export function netBytes(initPid: number): { rx: number; tx: number } | null {
  const text = readText(`/proc/${initPid}/net/dev`);
  if (!text) return null;
  let rx = 0;
  let tx = 0;
  for (const line of text.split('\n').slice(2)) {
    const [name, rest] = line.split(':');
    if (!rest || name!.trim() === 'lo') continue;
    const f = rest.trim().split(/\s+/).map(Number);
    rx += f[0] ?? 0;
    tx += f[8] ?? 0;
  }
  return { rx, tx };
}

/** What a folder's files take, walked (links not followed); 0 where it is gone. */
async function bytesUnder(dir: string): Promise<number> {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) total += await bytesUnder(full);
    else total += (await lstat(full).catch(() => ({ size: 0 }))).size;
  }
  return total;
}
