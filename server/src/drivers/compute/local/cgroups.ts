/**
 * The local machine's size as limits the kernel enforces: a control group per instance with its
 * memory (no swap beyond it), its CPU cores as a CFS quota, and a ceiling on processes. cgroup v1
 * (one hierarchy per controller, under this process's own group) or v2 (one hierarchy, a
 * `console-compute` group at its root with the controllers delegated) — whichever this host mounts.
 * Where the host has the cpuset controller too, a machine's processes are also held to as many of
 * the host's CPUs as it has cores, so that `nproc` and what programs size their threads by (their
 * CPU affinity) say the plan's cores, as in a VM.
 * Every process of the machine joins the group before it runs anything (sandbox.ts wraps bwrap and
 * each nsenter in `joinAndExec`), so nothing in the machine escapes its size. Without root, or
 * without the controllers, the machine runs unlimited and the driver says so in its log.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MachineLimits {
  memoryBytes: number;
  cpus: number;
  pids: number;
}

/** A machine's processes at most (a fork bomb inside stops there). */
export const PIDS_PER_MACHINE = 4096;
const CPU_PERIOD_US = 100_000;
const CONTROLLERS = ['memory', 'cpu', 'pids'] as const;
const GROUP = 'console-compute';

export interface Cgroups {
  readonly version: 'v1' | 'v2' | null;
  /** Why limits are or are not enforced, for the log. */
  readonly why: string;
  /** Makes the instance's group with its limits: the `cgroup.procs` files a process joins by writing its pid to. */
  make(instanceId: string, limits: MachineLimits): string[];
  /** Removes the instance's group once its processes have ended. */
  remove(instanceId: string): Promise<void>;
  /**
   * Ends whatever is left in these machines' groups and removes them: at the driver's start, a
   * group of one of its machines is a leftover of the server that ran it before, and a machine
   * whose root cut it loose from its sandbox must not run on untracked and unbilled.
   */
  sweep(instanceIds: readonly string[]): Promise<void>;
}

/** The cgroups of this host as this process may use them (taken once, at the driver's start). */
export function detectCgroups(): Cgroups {
  if (process.getuid?.() !== 0) return noCgroups('服务器不以 root 运行，无法创建 cgroup');
  try {
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
    const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const v1 = v1Parents(mounts, own);
    if (v1) return groups('v1', { ...v1, ...v1Cpuset(mounts, own) });
    const v2 = v2Parent(mounts);
    if (v2) return groups('v2', { unified: v2 });
    return noCgroups('本机没有可用的 memory、cpu、pids 控制器');
  } catch (e) {
    return noCgroups(`cgroup 不可用：${(e as Error).message}`);
  }
}

/** No limits, for the reason given. */
export function noCgroups(why: string): Cgroups {
  return { version: null, why, make: () => [], remove: async () => {}, sweep: async () => {} };
}

/** v1: each controller's hierarchy, at this process's own group in it, with a group for the machines. */
function v1Parents(mounts: string[], own: string[]): Record<string, string> | null {
  const parents: Record<string, string> = {};
  for (const controller of CONTROLLERS) {
    const mount = mounts.map(parseMount).find((m) => m?.type === 'cgroup' && m.options.includes(controller));
    const mine = own.map((l) => l.split(':')).find((f) => f.length >= 3 && f[1]!.split(',').includes(controller));
    if (!mount || !mine) return null;
    const parent = path.join(mount.point, mine.slice(2).join(':'), GROUP);
    try {
      mkdirSync(parent, { recursive: true });
    } catch {
      return null;
    }
    parents[controller] = parent;
  }
  return parents;
}

/**
 * v1's cpuset hierarchy, when there is one: a group for the machines with all of its parent's CPUs
 * and memory nodes (a new cpuset group has none, and nothing can join it until it has).
 */
function v1Cpuset(mounts: string[], own: string[]): { cpuset?: string } {
  const mount = mounts.map(parseMount).find((m) => m?.type === 'cgroup' && m.options.includes('cpuset'));
  const mine = own.map((l) => l.split(':')).find((f) => f.length >= 3 && f[1]!.split(',').includes('cpuset'));
  if (!mount || !mine) return {};
  const above = path.join(mount.point, mine.slice(2).join(':'));
  const parent = path.join(above, GROUP);
  try {
    mkdirSync(parent, { recursive: true });
    for (const file of ['cpuset.mems', 'cpuset.cpus']) {
      if (!readFileSync(path.join(parent, file), 'utf8').trim()) writeFileSync(path.join(parent, file), readFileSync(path.join(above, file), 'utf8').trim());
    }
  } catch {
    return {};
  }
  return { cpuset: parent };
}

/**
 * The host CPUs a machine of `cpus` cores is held to: that many (at least one, at most all of
 * `available`), consecutive from a place chosen by its group's name, so that machines spread over the host.
 */
export function cpusFor(available: readonly number[], cpus: number, name: string): number[] {
  const count = Math.min(available.length, Math.max(1, Math.ceil(cpus)));
  let start = 0;
  for (const c of name) start = (start * 31 + c.charCodeAt(0)) % 1_000_003;
  return Array.from({ length: count }, (_, i) => available[(start + i) % available.length]!).sort((a, b) => a - b);
}

/** A cpuset list ("0-3,8") as numbers. */
export function parseCpuList(list: string): number[] {
  return list
    .trim()
    .split(',')
    .filter(Boolean)
    .flatMap((part) => {
      const [a, b] = part.split('-').map(Number);
      return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
    });
}

/** v2: a group at the hierarchy's root with the three controllers handed down to the machines' groups. */
function v2Parent(mounts: string[]): string | null {
  const mount = mounts.map(parseMount).find((m) => m?.type === 'cgroup2');
  if (!mount) return null;
  const available = readFileSync(path.join(mount.point, 'cgroup.controllers'), 'utf8').split(/\s+/);
  if (!CONTROLLERS.every((c) => available.includes(c))) return null;
  const parent = path.join(mount.point, GROUP);
  try {
    mkdirSync(parent, { recursive: true });
    const enable = CONTROLLERS.map((c) => `+${c}`).join(' ');
    writeFileSync(path.join(mount.point, 'cgroup.subtree_control'), enable);
    writeFileSync(path.join(parent, 'cgroup.subtree_control'), enable);
    // cpuset where the host has it (optional: the machine's cores are its CFS quota either way).
    if (available.includes('cpuset')) {
      try {
        writeFileSync(path.join(mount.point, 'cgroup.subtree_control'), '+cpuset');
        writeFileSync(path.join(parent, 'cgroup.subtree_control'), '+cpuset');
      } catch {
        // not delegated here
      }
    }
  } catch {
    return null;
  }
  return parent;
}

function groups(version: 'v1' | 'v2', parents: Record<string, string>): Cgroups {
  const dirs = (id: string) => Object.values(parents).map((p) => path.join(p, id));
  return {
    version,
    why: `cgroup ${version}：内存、CPU、进程数按实例规格限制`,
    make(instanceId, limits) {
      const dir = (controller: string) => path.join(parents[version === 'v1' ? controller : 'unified']!, instanceId);
      for (const d of dirs(instanceId)) mkdirSync(d, { recursive: true });
      if (version === 'v1') {
        writeFileSync(path.join(dir('memory'), 'memory.limit_in_bytes'), String(limits.memoryBytes));
        // With swap accounting the limit covers swap too; without, the host has none to give (checked by the test).
        const memsw = path.join(dir('memory'), 'memory.memsw.limit_in_bytes');
        if (existsSync(memsw)) writeFileSync(memsw, String(limits.memoryBytes));
        writeFileSync(path.join(dir('cpu'), 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
        writeFileSync(path.join(dir('cpu'), 'cpu.cfs_quota_us'), String(Math.round(limits.cpus * CPU_PERIOD_US)));
        writeFileSync(path.join(dir('pids'), 'pids.max'), String(limits.pids));
        if (parents.cpuset) {
          writeFileSync(path.join(dir('cpuset'), 'cpuset.mems'), readFileSync(path.join(parents.cpuset, 'cpuset.mems'), 'utf8').trim());
          const available = parseCpuList(readFileSync(path.join(parents.cpuset, 'cpuset.cpus'), 'utf8'));
          writeFileSync(path.join(dir('cpuset'), 'cpuset.cpus'), cpusFor(available, limits.cpus, instanceId).join(','));
        }
      } else {
        const d = dir('unified');
        writeFileSync(path.join(d, 'memory.max'), String(limits.memoryBytes));
        if (existsSync(path.join(d, 'memory.swap.max'))) writeFileSync(path.join(d, 'memory.swap.max'), '0');
        writeFileSync(path.join(d, 'cpu.max'), `${Math.round(limits.cpus * CPU_PERIOD_US)} ${CPU_PERIOD_US}`);
        writeFileSync(path.join(d, 'pids.max'), String(limits.pids));
        if (existsSync(path.join(d, 'cpuset.cpus'))) {
          const available = parseCpuList(readFileSync(path.join(parents.unified!, 'cpuset.cpus.effective'), 'utf8'));
          writeFileSync(path.join(d, 'cpuset.cpus'), cpusFor(available, limits.cpus, instanceId).join(','));
        }
      }
      return dirs(instanceId).map((d) => path.join(d, 'cgroup.procs'));
    },
    async sweep(instanceIds) {
      const ids = new Set(instanceIds);
      const groupsThere = Object.values(parents).flatMap((p) =>
        readdirSync(p, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name),
      );
      // Group names are `<instanceId>-<run>`.
      const names = new Set(groupsThere.filter((n) => ids.has(n.slice(0, n.lastIndexOf('-')))));
      for (const name of names) {
        for (const d of dirs(name)) endProcesses(path.join(d, 'cgroup.procs'));
        await this.remove(name);
      }
    },
    async remove(instanceId) {
      for (const d of dirs(instanceId)) {
        // The machine's last processes may still be on their way out; any left behind are ended.
        for (let i = 0; i < 100 && existsSync(d); i++) {
          try {
            rmdirSync(d);
          } catch {
            if (i % 20 === 19) endProcesses(path.join(d, 'cgroup.procs'));
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        if (existsSync(d)) throw new Error(`cgroup ${d} 无法删除`);
      }
    },
  };
}

function endProcesses(procs: string) {
  let pids: string[] = [];
  try {
    pids = readFileSync(procs, 'utf8').split('\n').filter(Boolean);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

function parseMount(line: string): { point: string; type: string; options: string[] } | null {
  const [left, right] = line.split(' - ');
  if (!left || !right) return null;
  const [type, , options = ''] = right.split(' ');
  return { point: left.split(' ')[4]!, type: type!, options: options.split(',') };
}
