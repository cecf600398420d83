/**
 * The host's NVIDIA cards (issue 30 §2): what the local driver has to sell, and what a machine sees
 * of them. Cards are found in the driver's /proc files (`/proc/driver/nvidia/gpus/<bus>/information`:
 * model, UUID, minor number, bus) and, where the host has `nvidia-smi`, their memory from it.
 *
 * A machine with cards gets exactly its own: its `/dev/nvidiaN`, the devices every CUDA program needs
 * (`nvidiactl`, `nvidia-uvm`, `nvidia-uvm-tools`, `nvidia-modeset`), its cards' entries of
 * /proc/driver/nvidia/gpus and nothing else of that folder, and the host driver's user-space
 * libraries and `nvidia-smi`, read-only in a folder of their own (GPU_DIR). The machine's /usr is
 * its image's and read-only, so the libraries cannot be bound at their host paths (bubblewrap cannot
 * make a mount point in a read-only tree, and an ld.so.conf.d entry cannot be added to it):
 * processes of a GPU machine find them through LD_LIBRARY_PATH and PATH (gpuEnv), set after they have
 * dropped the machine's capabilities (sandbox.ts commandIn). GPU_DIR is a read-only tmpfs holding
 * only the host's files, so the machine's root can neither add a library there nor change one.
 *
 * Which machine holds which card is a table with the card as its key (local_gpu_claims): two
 * machines never hold one card. A machine holds its cards while it runs (AutoDL's rule): a stopped
 * machine's card can be taken by another, and its next start needs free cards or fails saying so.
 * As a card is given, any process of another machine still holding it open (a descriptor passed over
 * a socket) is ended (endStrayHolders). A machine cannot make a device file it was not given: no
 * mknod in its user namespace, no nvidia-modprobe inside.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { and, eq, inArray, notInArray, sql } from 'drizzle-orm';
import type { Clock } from '../../../clock.js';
import type { Db } from '../../../db/client.js';
import { localGpuClaims } from './schema.js';

export interface HostGpu {
  /** The card's device minor: its device is /dev/nvidia<minor>. */
  minor: number;
  /** The model as the driver names it ("NVIDIA H200", "NVIDIA GeForce RTX 4090"). */
  model: string;
  /** Its memory in MiB (nvidia-smi's memory.total); 0 where the host has no nvidia-smi to say. */
  memoryMb: number;
  uuid: string;
  /** Its PCI address, the name of its folder in /proc/driver/nvidia/gpus ("0000:19:00.0"). */
  busId: string;
}

/** Where a GPU machine finds the host driver's files: libraries in lib/, nvidia-smi in bin/. */
export const GPU_DIR = '/run/nvidia';
const GPU_LIB_DIR = `${GPU_DIR}/lib`;
const GPU_BIN_DIR = `${GPU_DIR}/bin`;
/** The folder of the cards' /proc entries, inside a machine as on the host. */
const PROC_GPUS = '/proc/driver/nvidia/gpus';
/** Devices every CUDA program opens besides its cards', where the host has them. */
const SHARED_DEVICES = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia-modeset'];
/** The programs of the driver a user runs inside (the rest — persistenced, modprobe, debugdump — are the host's business). */
const DRIVER_PROGRAMS = ['nvidia-smi'];
/** Where the host keeps nvidia-smi (Debian: /usr/bin; NVIDIA's installer: /usr/bin or /usr/local/bin). */
const PROGRAM_DIRS = ['/usr/bin', '/usr/local/bin', '/bin', '/usr/sbin', '/sbin'];
/** The driver's user-space libraries for compute and nvidia-smi (libcuda, libnvidia-ml, the PTX JIT…). */
const DRIVER_LIBRARY = /^lib(cuda|cudadebugger|nvcuvid|nvidia-[\w.-]+?)\.so(\.\d+)*$/;
const SMI_TIMEOUT_MS = 10_000;

/**
 * The host's cards under `root` (a fake tree in tests), in minor order; [] without the NVIDIA driver.
 * `smi` is nvidia-smi's answer to QUERY (null: no nvidia-smi), asked first: it also makes the
 * cards' device files where they are missing. A card whose device file is missing anyway, or that
 * the driver excludes, is not one the machines can be given, so it is left out.
 */
export function discoverGpus(root = '/', smi: () => string | null = () => runSmi(SMI_QUERY)): HostGpu[] {
  const memory = memoryByCard(smi());
  const dir = path.join(root, PROC_GPUS);
  const folders = existsSync(dir) ? readdirSync(dir) : [];
  const cards: HostGpu[] = [];
  for (const busId of folders) {
    const info = readInformation(path.join(dir, busId, 'information'));
    const minorText = info.get('Device Minor') ?? '';
    if (!/^\d+$/.test(minorText) || info.get('GPU Excluded') === 'Yes') continue;
    const minor = Number(minorText);
    if (!existsSync(path.join(root, 'dev', `nvidia${minor}`))) continue;
    const uuid = info.get('GPU UUID') ?? '';
    cards.push({
      minor,
      model: info.get('Model') ?? 'NVIDIA GPU',
      memoryMb: memory.get(uuid) ?? memory.get(normalBusId(busId)) ?? 0,
      uuid,
      busId,
    });
  }
  return cards.sort((a, b) => a.minor - b.minor);
}

/** The `Key: value` lines of a card's information file (an unreadable one: none). */
function readInformation(file: string): Map<string, string> {
  const out = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const m = /^([^:]+):\s*(.*?)\s*$/.exec(line);
    if (m) out.set(m[1]!.trim(), m[2]!);
  }
  return out;
}

/** A PCI address as /proc names it: nvidia-smi writes an 8-digit domain ("00000000:19:00.0"), /proc a 4-digit one. */
export function normalBusId(id: string): string {
  const m = /^([0-9a-f]+):([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])$/i.exec(id.trim());
  if (!m) return id.trim().toLowerCase();
  return `${m[1]!.slice(-4).padStart(4, '0')}:${m[2]}`.toLowerCase();
}

const SMI_QUERY = ['--query-gpu=index,name,memory.total,uuid,pci.bus_id,minor_number', '--format=csv,noheader,nounits'];

/** Each card's memory (MiB) from nvidia-smi's CSV answer to SMI_QUERY, by UUID and by bus address. */
export function memoryByCard(csv: string | null): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (csv ?? '').split('\n')) {
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length < 6) continue;
    const [, , memory, uuid, bus] = fields;
    const mb = Number(memory);
    if (!Number.isFinite(mb)) continue;
    out.set(uuid!, mb);
    out.set(normalBusId(bus!), mb);
  }
  return out;
}

/** nvidia-smi's output for `args`, or null where the host has none or it fails. */
function runSmi(args: string[]): string | null {
  const smi = hostProgram('/', 'nvidia-smi');
  if (!smi) return null;
  const run = spawnSync(smi, args, { encoding: 'utf8', timeout: SMI_TIMEOUT_MS, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  return run.status === 0 ? run.stdout : null;
}

/** A program of the host's by name under `root` (its real file), or null. */
function hostProgram(root: string, name: string): string | null {
  for (const dir of PROGRAM_DIRS) {
    const file = realFile(path.join(root, dir, name));
    if (file) return file;
  }
  return null;
}

/** The file a path leads to, links followed, if it is a regular file. */
function realFile(file: string): string | null {
  try {
    const real = realpathSync(file);
    return statSync(real).isFile() ? real : null;
  } catch {
    return null;
  }
}

let cached: HostGpu[] | null = null;

/** This host's cards, found once per process (the honest market's inventory: catalogue/host offer). */
export function hostGpus(): HostGpu[] {
  cached ??= discoverGpus();
  return cached;
}

/** A host file and where a machine sees it. */
export interface Bind {
  from: string;
  to: string;
}

/**
 * The driver's user-space libraries in `ldconfig -p`'s listing of this architecture, each as the
 * name the loader looks for (libcuda.so.1) and the host file it is (links followed); a name listed
 * twice keeps its first entry, as the loader would.
 */
export function driverLibraries(ldconfig: string, arch: string = process.arch): Bind[] {
  const abi = LDCONFIG_ABI[arch];
  const out = new Map<string, string>();
  for (const line of ldconfig.split('\n')) {
    const m = /^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$/.exec(line);
    if (!m) continue;
    const [, name, flags, file] = m;
    if (!DRIVER_LIBRARY.test(name!) || out.has(name!)) continue;
    const flagList = flags!.split(',').map((f) => f.trim());
    if (abi ? !flagList.includes(abi) : flagList.some((f) => Object.values(LDCONFIG_ABI).includes(f))) continue;
    const real = realFile(file!);
    if (real) out.set(name!, real);
  }
  return [...out].map(([name, from]) => ({ from, to: `${GPU_LIB_DIR}/${name}` }));
}

/** How ldconfig names the word size of a library built for Node's architecture (i386 ones say nothing). */
const LDCONFIG_ABI: Record<string, string> = { x64: 'x86-64', arm64: 'AArch64' };

/** The host driver's files a GPU machine gets: its libraries (from `ldconfig -p`) and nvidia-smi, under GPU_DIR. */
export function driverFiles(root = '/', ldconfig: string | null = runLdconfig()): Bind[] {
  const programs = DRIVER_PROGRAMS.flatMap((name) => {
    const from = hostProgram(root, name);
    return from ? [{ from, to: `${GPU_BIN_DIR}/${name}` }] : [];
  });
  return [...driverLibraries(ldconfig ?? ''), ...programs];
}

function runLdconfig(): string | null {
  for (const ldconfig of ['/usr/sbin/ldconfig', '/sbin/ldconfig']) {
    if (!existsSync(ldconfig)) continue;
    const run = spawnSync(ldconfig, ['-p'], { encoding: 'utf8', timeout: SMI_TIMEOUT_MS, maxBuffer: 16 * 1024 ** 2 });
    if (run.status === 0) return run.stdout;
  }
  return null;
}

/** The cards of a host and the driver's files, as the local driver uses them (tests: a fake tree). */
export interface GpuHost {
  /** Where the host's /dev and /proc are ('/': this host). */
  readonly root: string;
  cards(): readonly HostGpu[];
  files(): readonly Bind[];
}

/** This host's cards and driver files, found once. */
export function localGpuHost(): GpuHost {
  let files: Bind[] | null = null;
  return {
    root: '/',
    cards: hostGpus,
    files: () => (files ??= hostGpus().length ? driverFiles() : []),
  };
}

/** What a machine with cards sees of them (sandbox.ts binds it). */
export interface GpuView {
  /** Host device files, each bound at /dev/<its name>: the machine's cards and the shared devices. */
  devices: string[];
  /** The driver's libraries and programs, read-only under GPU_DIR. */
  files: readonly Bind[];
  /** Its cards' folders of /proc/driver/nvidia/gpus; null where the machine's /proc has no such folder. */
  procGpus: string[] | null;
}

/** The device files of `cards` on `host`. */
export function cardDevices(host: GpuHost, cards: readonly HostGpu[]): string[] {
  return cards.map((c) => path.join(host.root, 'dev', `nvidia${c.minor}`));
}

/** What a machine holding `cards` of `host` sees. */
export function gpuView(host: GpuHost, cards: readonly HostGpu[]): GpuView {
  const dev = path.join(host.root, 'dev');
  const shared = SHARED_DEVICES.filter((name) => existsSync(path.join(dev, name)));
  // The machine's /proc is this host's kernel's: its folder is there only where the driver is loaded here.
  const procGpus = host.root === '/' && existsSync(PROC_GPUS) ? cards.map((c) => `${PROC_GPUS}/${c.busId}`) : null;
  return {
    devices: [...cardDevices(host, cards), ...shared.map((name) => path.join(dev, name))],
    files: host.files(),
    procGpus,
  };
}

/**
 * Run inside a GPU machine (as its root) as it starts: login shells find nvidia-smi too (Debian's
 * /etc/profile sets root's PATH anew, without GPU_DIR's bin). Written from inside, never from the
 * host: the machine's /etc is its root's, links included.
 */
export const GPU_PROFILE_SCRIPT = `mkdir -p /etc/profile.d && cat > /etc/profile.d/nvidia-host.sh <<'EOF'
# The host's NVIDIA driver programs (nvidia-smi) for login shells; the console writes this at each start with GPUs.
[ -d ${GPU_BIN_DIR} ] && case ":$PATH:" in *:${GPU_BIN_DIR}:*) ;; *) PATH="$PATH:${GPU_BIN_DIR}" ;; esac
EOF`;

/**
 * The environment of a GPU machine's processes: `base` (its image's Env, none for the host's system)
 * with the driver's libraries and nvidia-smi found in GPU_DIR after the image's own folders (an
 * image's CUDA under /usr/local/cuda keeps coming first), `defaultPath` where the image sets no PATH.
 */
export function gpuEnv(base: Readonly<Record<string, string>>, defaultPath: string): Record<string, string> {
  return { ...base, LD_LIBRARY_PATH: appendFolder(base.LD_LIBRARY_PATH, GPU_LIB_DIR), PATH: appendFolder(base.PATH ?? defaultPath, GPU_BIN_DIR) };
}

/** A colon-separated list of folders with `folder` at its end (once); empty or absent: `folder` alone. */
function appendFolder(list: string | undefined, folder: string): string {
  if (!list) return folder;
  return list.split(':').includes(folder) ? list : `${list}:${folder}`;
}

/**
 * bubblewrap's arguments for a machine's cards (after its /dev, /proc and /run exist): the device
 * files (host paths, each at /dev/<its name>), GPU_DIR as a tmpfs with the driver's files bound in and then made read-only, and /proc's folder of
 * cards replaced by one with the machine's cards only.
 */
export function gpuArgs(devices: readonly string[], view: Omit<GpuView, 'devices'> | null | undefined): string[] {
  const args = devices.flatMap((dev) => ['--dev-bind', dev, `/dev/${path.basename(dev)}`]);
  if (!view) return args;
  // Its folders readable by every user of the machine (bubblewrap would make them its root's alone).
  args.push('--tmpfs', GPU_DIR, '--perms', '0755', '--dir', GPU_LIB_DIR, '--perms', '0755', '--dir', GPU_BIN_DIR);
  for (const f of view.files) args.push('--ro-bind', f.from, f.to);
  args.push('--remount-ro', GPU_DIR);
  if (view.procGpus) {
    args.push('--tmpfs', PROC_GPUS);
    for (const folder of view.procGpus) args.push('--ro-bind', folder, folder);
    args.push('--remount-ro', PROC_GPUS);
  }
  return args;
}

/**
 * Ends the processes inside machines (a PID namespace other than this server's) that hold one of
 * these device files open; the number ended. Called as the cards are given to a machine: nobody in
 * another machine holds them rightly then, but a machine that held a card could have passed its
 * descriptor to another over a socket (one in their account's 文件存储), which would keep it after the
 * card went to someone else. The host's own processes (nvidia-smi, nvidia-persistenced) are left alone.
 * A descriptor passed on while a pass runs is caught by the next one.
 */
export function endStrayHolders(devices: readonly string[]): number {
  const wanted = new Set(devices.flatMap((d) => statKey(d) ?? []));
  if (!wanted.size) return 0;
  const own = readlinkSync('/proc/self/ns/pid');
  // Processes, not kills: one killed in a pass may still hold its files in the next (SIGKILL is not instant).
  const ended = new Set<string>();
  for (let pass = 0; pass < 5; pass++) {
    const stray = readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && holdsAny(pid, own, wanted));
    if (!stray.length) break;
    for (const pid of stray) {
      try {
        process.kill(Number(pid), 'SIGKILL');
        ended.add(pid);
      } catch {
        // gone already
      }
    }
  }
  return ended.size;
}

/** Whether a process outside this server's PID namespace has one of `wanted` open (unreadable: no). */
function holdsAny(pid: string, ownPidNamespace: string, wanted: ReadonlySet<string>): boolean {
  try {
    if (readlinkSync(`/proc/${pid}/ns/pid`) === ownPidNamespace) return false;
    return readdirSync(`/proc/${pid}/fd`).some((fd) => wanted.has(statKey(`/proc/${pid}/fd/${fd}`) ?? ''));
  } catch {
    return false;
  }
}

/** What a file is, whatever path reaches it: a device by its number, any other file by its inode. */
function statKey(file: string): string | null {
  let st: Stats;
  try {
    st = statSync(file);
  } catch {
    return null;
  }
  return st.isCharacterDevice() ? `c${st.rdev}` : `f${st.dev}:${st.ino}`;
}

/** Why a machine cannot start with its cards, in Chinese (a start's error, shown to its owner). */
export function notEnoughCards(need: number, free: number, total: number): string {
  if (total < need) return `本主机只有 ${total} 张 GPU，无法以 ${need} 卡开机；可以无卡模式开机`;
  return `本主机当前空闲 GPU 不足：需要 ${need} 张，空闲 ${free} 张（关机的实例不保留 GPU，其余卡已被运行中的实例占用）。请稍后再试，或以无卡模式开机`;
}

/**
 * Which machine holds which card (local_gpu_claims, the card its key): taken as a machine starts
 * with cards, given back as it stops. Claims are made one at a time (a transaction lock), and the
 * key refuses a second holder whatever happens.
 */
export class GpuClaims {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * Gives the machine `count` of `cards` (those it holds already first: a restart keeps its cards);
   * what it held beyond them is given back. Throws, in Chinese, when too few are free.
   */
  async claim(instanceId: string, count: number, cards: readonly HostGpu[]): Promise<HostGpu[]> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('local-gpu-claims', 0))`);
      const claims = await tx.select().from(localGpuClaims);
      const held = new Set(claims.filter((c) => c.instanceId === instanceId).map((c) => c.minor));
      const taken = new Set(claims.filter((c) => c.instanceId !== instanceId).map((c) => c.minor));
      const kept = cards.filter((c) => held.has(c.minor)).slice(0, count);
      const free = cards.filter((c) => !held.has(c.minor) && !taken.has(c.minor));
      if (kept.length + free.length < count) throw new Error(notEnoughCards(count, kept.length + free.length, cards.length));
      const fresh = free.slice(0, count - kept.length);
      const mine = [...kept, ...fresh].sort((a, b) => a.minor - b.minor);
      await tx.delete(localGpuClaims).where(
        and(
          eq(localGpuClaims.instanceId, instanceId),
          notInArray(
            localGpuClaims.minor,
            mine.map((c) => c.minor),
          ),
        ),
      );
      if (fresh.length) await tx.insert(localGpuClaims).values(fresh.map((c) => ({ minor: c.minor, instanceId, claimedAt: this.clock.now() })));
      return mine;
    });
  }

  /** Gives back the machine's cards. */
  async release(instanceId: string): Promise<void> {
    await this.db.delete(localGpuClaims).where(eq(localGpuClaims.instanceId, instanceId));
  }

  /** Gives back every card but those of `instanceIds` (at start: only the machines that run again keep theirs). */
  async releaseAllBut(instanceIds: readonly string[]): Promise<void> {
    const others = instanceIds.length ? notInArray(localGpuClaims.instanceId, [...instanceIds]) : undefined;
    await this.db.delete(localGpuClaims).where(others);
  }

  /** The minors each machine holds (of `instanceIds`; absent: every machine's), in order. */
  async held(instanceIds?: readonly string[]): Promise<Map<string, number[]>> {
    if (instanceIds && !instanceIds.length) return new Map();
    const rows = await this.db
      .select()
      .from(localGpuClaims)
      .where(instanceIds ? inArray(localGpuClaims.instanceId, [...instanceIds]) : undefined)
      .orderBy(localGpuClaims.minor);
    const out = new Map<string, number[]>();
    for (const r of rows) out.set(r.instanceId, [...(out.get(r.instanceId) ?? []), r.minor]);
    return out;
  }
}

export interface GpuSample {
  /** GPU utilisation, 0–100 %. */
  utilisation: number;
  memoryUsedMb: number;
  /** The card's memory (null where nvidia-smi cannot tell). */
  memoryTotalMb: number | null;
}

const exec = promisify(execFile);

/** What each card of this host is doing now, by minor (nvidia-smi); empty without nvidia-smi or when it fails. */
export async function sampleGpus(): Promise<Map<number, GpuSample>> {
  const smi = hostProgram('/', 'nvidia-smi');
  if (!smi) return new Map();
  try {
    const { stdout } = await exec(smi, ['--query-gpu=minor_number,utilization.gpu,memory.used,memory.total', '--format=csv,noheader,nounits'], {
      timeout: SMI_TIMEOUT_MS,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    return parseGpuSamples(stdout);
  } catch {
    return new Map();
  }
}

/**
 * nvidia-smi's `minor_number, utilization.gpu, memory.used, memory.total` lines; a card whose use it
 * cannot measure ("[N/A]") is left out, an unknown total is null.
 */
export function parseGpuSamples(csv: string): Map<number, GpuSample> {
  const out = new Map<number, GpuSample>();
  const isNumber = (f: string | undefined) => f !== undefined && /^\d+(\.\d+)?$/.test(f);
  for (const line of csv.split('\n')) {
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length !== 4 || !fields.slice(0, 3).every(isNumber)) continue;
    const [minor, utilisation, memory] = fields.slice(0, 3).map(Number);
    out.set(minor!, { utilisation: utilisation!, memoryUsedMb: memory!, memoryTotalMb: isNumber(fields[3]) ? Number(fields[3]) : null });
  }
  return out;
}
