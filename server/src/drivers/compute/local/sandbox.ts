/**
 * One instance of the `local` compute driver (issue 15) as a bubblewrap sandbox on this host: its
 * own PID, IPC, UTS, mount and network namespaces, a read-only `/usr` as the base — its OCI image's
 * (issue 30, machine-image.ts), or the host's own for an image without one — a writable system
 * layer (系统盘: /root, /home, /etc, /opt, /var, /srv; a new one seeded from the image's) and a data disk (数据盘, mounted at
 * /root/autodl-tmp as on AutoDL) under the instance's directory, and nothing else of the host's files.
 *
 * The sandbox runs a small init as its PID 1 while the instance is 运行中; a shell, a notebook or a
 * desktop later joins its namespaces (`exec`, through nsenter). Ending the init ends everything in
 * the sandbox; the two disks stay until `destroy`. `--die-with-parent` ends the sandbox with the
 * server's process, so a crashed server never leaves machines running unaccounted.
 *
 * The network is the sandbox's own: nothing listening on the host's loopback (the console's
 * PostgreSQL, Redis…) or in another instance is reachable from it. Where Debian's `slirp4netns` is
 * installed it gives the sandbox outgoing connections through user-space NAT (10.0.2.0/24, DNS at
 * 10.0.2.3, the host's loopback refused) behind a firewall that keeps the host's own addresses and
 * the private ranges out of reach (network-policy.ts); without it the sandbox has a loopback only.
 */
import { execFile, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  cpSync,
  existsSync,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { asHostUser, SETPRIV } from './host-uids.js';
import { BoundedText, keepTail } from './bounded-text.js';
import { makeDiskImage, mountDisk, mountedDevice } from './disk.js';
import { applyFirewall, networkPolicyWorks } from './network-policy.js';
import { LXCFS_PROC_FILES } from './host-view.js';
import { gpuArgs, gpuEnv, GPU_PROFILE_SCRIPT, type GpuView } from './gpus.js';

/** Where the data disk is mounted inside the sandbox. */
export const DATA_MOUNT = '/root/autodl-tmp';
/** The system layer's writable directories, bound over the same paths inside the sandbox. */
const SYSTEM_DIRS = ['root', 'home', 'etc', 'opt', 'var', 'srv'] as const;
/** Host files copied into a new system layer's /etc: what a shell and name lookups need, no host secrets. */
const ETC_FILES = ['bash.bashrc', 'profile', 'inputrc', 'nsswitch.conf', 'host.conf', 'resolv.conf', 'localtime', 'ld.so.cache', 'ld.so.conf', 'issue'];

export interface SandboxPaths {
  /** The instance's directory on its host. */
  root: string;
  system: string;
  /** The data disk's folder (the image's mount point where there is one). */
  data: string;
  /** The data disk's ext4 image (disk.ts), where disks are images. */
  dataImage: string;
  /** The system disk's ext4 image, mounted on `system` (its size the plan's 系统盘), where disks are images. */
  systemImage: string;
}

export function sandboxPaths(hostDir: string, instanceId: string): SandboxPaths {
  const root = path.join(hostDir, instanceId);
  return {
    root,
    system: path.join(root, 'system'),
    data: path.join(root, 'data'),
    dataImage: path.join(root, 'data.img'),
    systemImage: path.join(root, 'system.img'),
  };
}

/**
 * Lays out a new instance's disks: an empty data disk and a system layer with a minimal /etc of its
 * own, both owned by the machine's host uid (null: the server's own). With `systemGb` the system
 * layer is an ext4 image of that size (disk.ts), so the machine's writes outside its data disk stop
 * at the size bought.
 */
export async function layOut(
  paths: SandboxPaths,
  hostname: string,
  uid: number | null,
  systemGb: number | null = null,
  rootfs: string | null = null,
): Promise<void> {
  makeRoot(paths);
  if (systemGb) await makeSystemDisk(paths, systemGb);
  if (rootfs) await seedFromImage(paths, rootfs);
  else seedFromHost(paths);
  const etc = path.join(paths.system, 'etc');
  // An image's own accounts stay (its packages' system users); a machine without any gets root's.
  if (!rootfs || !lstatOrNull(path.join(etc, 'passwd'))?.isFile()) {
    await writeFresh(path.join(etc, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n', null);
    await writeFresh(path.join(etc, 'group'), 'root:x:0:\nnogroup:x:65534:\n', null);
  }
  // \h: the prompt names the machine it runs on, also in an instance made from a saved image.
  if (!rootfs || !lstatOrNull(path.join(paths.system, 'root', '.bashrc'))) {
    await writeFresh(path.join(paths.system, 'root', '.bashrc'), `[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc\nexport PS1='root@\\h:\\w# '\n`, null);
  }
  chmodSync(path.join(paths.system, 'root'), 0o700);
  await nameMachine(paths, hostname, null);
  await ownTree(paths.system, uid);
  await ownTree(paths.data, uid);
}

/** A system layer on the host's /usr: empty folders and the few host files of /etc a shell and name lookups need. */
function seedFromHost(paths: SandboxPaths): void {
  for (const dir of SYSTEM_DIRS) mkdirSync(path.join(paths.system, dir));
  const etc = path.join(paths.system, 'etc');
  for (const file of ETC_FILES) {
    const from = path.join('/etc', file);
    if (existsSync(from)) copyFileSync(from, path.join(etc, file));
  }
  // Debian's alternatives (awk, editor, pager…) are links through /etc/alternatives into /usr.
  if (existsSync('/etc/alternatives')) cpSync('/etc/alternatives', path.join(etc, 'alternatives'), { recursive: true, verbatimSymlinks: true });
}

/**
 * A system layer on an image's /usr: the image's own /etc, /root, /var… copied (links, modes and
 * times kept; layOut then hands the tree to the machine's uid). The image is the operator's, trusted
 * as its /usr is; a folder it lacks, or has as something else than a folder, is made empty.
 */
async function seedFromImage(paths: SandboxPaths, rootfs: string): Promise<void> {
  for (const dir of SYSTEM_DIRS) {
    const from = path.join(rootfs, dir);
    const to = path.join(paths.system, dir);
    if (lstatOrNull(from)?.isDirectory()) await exec('cp', ['-a', '--no-dereference', '--', from, to], { env: HOST_ENV });
    else mkdirSync(to);
  }
}

/**
 * Lays out a new instance from an image the user saved (packImage): its system layer unpacked, by a
 * throwaway sandbox running as the machine's uid that sees only the new layer — the archive is what
 * a machine's root made, links to anywhere included — then named anew. The archive is a plain tar
 * (`images/<ref>.tar`) or a gzip one (a saved layer of the image layout: machine-image.ts).
 */
export async function layOutFromImage(
  paths: SandboxPaths,
  hostname: string,
  uid: number | null,
  image: string,
  bwrap = 'bwrap',
  systemGb: number | null = null,
): Promise<void> {
  if (!existsSync(image)) throw new Error('镜像文件不存在，无法从该镜像创建实例');
  makeRoot(paths);
  if (systemGb) await makeSystemDisk(paths, systemGb);
  await ownTree(paths.system, uid);
  await ownTree(paths.data, uid);
  const archive = await open(image, 'r');
  try {
    const gzip = await isGzip(archive);
    const tar = throwaway(
      { rw: { '/s': paths.system } },
      ['tar', '-x', ...(gzip ? ['-z'] : []), '-f', '-', '-C', '/s', '--no-same-owner', '--delay-directory-restore'],
      uid,
      bwrap,
    );
    await finished(spawn(tar.file, tar.args, { stdio: [archive.fd, 'ignore', 'pipe'], env: tar.env }), '镜像解包失败');
  } finally {
    await archive.close();
  }
  // Bound over the machine's /root, /etc…: real folders, never a link the image planted.
  for (const dir of SYSTEM_DIRS) {
    const at = path.join(paths.system, dir);
    const st = lstatOrNull(at);
    if (st && !st.isDirectory()) throw new Error(`镜像内容无效：/${dir} 不是目录`);
    if (!st) {
      mkdirSync(at);
      await ownTree(at, uid);
    }
  }
  await nameMachine(paths, hostname, uid);
}

/** Whether the file starts as gzip does (1f 8b); read at its position 0, the descriptor's own offset untouched. */
async function isGzip(file: FileHandle): Promise<boolean> {
  const head = Buffer.alloc(2);
  const { bytesRead } = await file.read(head, 0, 2, 0);
  return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/**
 * The instance's own folder, new (what a try cut short left there is the caller's to remove): the
 * server's, walkable but not listable, so that the machine's uid reaches its two disks, which are its alone.
 */
function makeRoot(paths: SandboxPaths): void {
  mkdirSync(path.dirname(paths.root), { recursive: true, mode: 0o711 });
  mkdirSync(paths.root, { mode: 0o711 });
  chmodSync(paths.root, 0o711);
  mkdirSync(paths.system, { mode: 0o700 });
  mkdirSync(paths.data, { mode: 0o700 });
}

/**
 * The system layer as an ext4 image of `gb` GiB mounted on its folder, which stays the machine's
 * alone. Made the server's: the layout then hands the whole tree to the machine's uid (ownTree).
 */
async function makeSystemDisk(paths: SandboxPaths, gb: number): Promise<void> {
  await makeDiskImage(paths.systemImage, gb);
  await mountDisk(paths.systemImage, paths.system);
  chmodSync(paths.system, 0o700);
}

/** The machine's hostname in its /etc. */
async function nameMachine(paths: SandboxPaths, hostname: string, uid: number | null): Promise<void> {
  const etc = path.join(paths.system, 'etc');
  await writeFresh(path.join(etc, 'hostname'), `${hostname}\n`, uid);
  await writeFresh(path.join(etc, 'hosts'), `127.0.0.1\tlocalhost\n127.0.1.1\t${hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`, uid);
}

/**
 * Writes a file of a machine's system layer from the host: whatever the machine's root left under
 * that name (a link to a host file, a folder of any depth) is removed first, and the file is created
 * anew (never followed), owned by the machine's uid.
 */
export async function writeFresh(file: string, content: string, uid: number | null): Promise<void> {
  await clearEntry(file);
  const fd = openSync(file, 'wx', 0o644);
  try {
    writeSync(fd, content);
    if (uid != null) fchownSync(fd, uid, uid);
  } finally {
    closeSync(fd);
  }
}

/** Removes whatever is at `file` without following a link or entering another file system. */
async function clearEntry(file: string): Promise<void> {
  const st = lstatOrNull(file);
  if (!st) return;
  if (st.isDirectory()) await exec('rm', ['-rf', '--one-file-system', '--', file]);
  else unlinkSync(file);
}

const exec = promisify(execFile);

/**
 * Gives a tree to the machine's uid, or back to the server's where machines run as the server
 * (links themselves, never what they point at). Only the top folder is looked at: a tree already
 * its owner's is left alone.
 */
export async function ownTree(dir: string, uid: number | null): Promise<void> {
  const owner = uid ?? process.getuid?.();
  const group = uid ?? process.getgid?.();
  if (owner === undefined || group === undefined) return;
  const st = lstatSync(dir);
  if (st.uid === owner && st.gid === group && !st.isSymbolicLink()) return;
  await exec('chown', ['-R', '-P', `${owner}:${group}`, '--', dir]);
}

function lstatOrNull(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

/**
 * The command line of a throwaway sandbox: nothing of the host but the read-only /usr and the given
 * folders (destination → host path), no network, running `command` as the given host uid (its root
 * inside). 文件存储's operations and unpacking an image run in one.
 */
export function throwaway(
  binds: { rw?: Record<string, string>; ro?: Record<string, string> },
  command: string[],
  uid: number | null,
  bwrap = 'bwrap',
): { file: string; args: string[]; env: Record<string, string> } {
  const links = ['bin', 'lib', 'lib64'].filter((l) => existsSync(path.join('/usr', l))).flatMap((l) => ['--symlink', `usr/${l}`, `/${l}`]);
  return joinAndExec(
    [],
    [
      ...asHostUser(uid),
      bwrap,
      '--unshare-all',
      ...(uid == null ? [] : ['--uid', '0', '--gid', '0']),
      '--die-with-parent',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/bin',
      '--setenv',
      'LC_ALL',
      'C.UTF-8',
      '--ro-bind',
      '/usr',
      '/usr',
      ...links,
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...Object.entries(binds.rw ?? {}).flatMap(([dest, src]) => ['--bind', src, dest]),
      ...Object.entries(binds.ro ?? {}).flatMap(([dest, src]) => ['--ro-bind', src, dest]),
      ...command,
    ],
  );
}

/** Resolves when the process ends with exit code 0; rejects with `what` and its error output otherwise. */
function finished(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stderr = keepTail(child.stderr);
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${what}：${stderr.toString().trim().slice(-300) || `退出码 ${code}`}`))));
  });
}

/**
 * Deletes both disks. `rm` rather than Node's rmSync, which overflows its stack on the deep trees a
 * machine's root can leave; never into another file system (a data disk still mounted stays).
 */
export function removeDisks(paths: SandboxPaths): Promise<void> {
  return finished(spawn('rm', ['-rf', '--one-file-system', '--', paths.root], { stdio: ['ignore', 'ignore', 'pipe'], env: HOST_ENV }), '删除磁盘失败');
}

/**
 * Packs a machine's system layer into `file` (a saved image), in a throwaway sandbox as the
 * machine's uid that sees that layer only: what its root left there is read as the machine sees it.
 */
export async function packImage(paths: SandboxPaths, file: string, uid: number | null, bwrap = 'bwrap'): Promise<void> {
  const out = await open(file, 'wx', 0o600);
  try {
    const tar = throwaway({ ro: { '/s': paths.system } }, ['tar', '-c', '-f', '-', '-C', '/s', '--numeric-owner', '.'], uid, bwrap);
    await finished(spawn(tar.file, tar.args, { stdio: ['ignore', out.fd, 'pipe'], env: tar.env }), '保存镜像失败');
  } catch (e) {
    rmSync(file, { force: true });
    throw e;
  } finally {
    await out.close();
  }
}

export interface SandboxOptions {
  hostname: string;
  /** Device files of the cards assigned to the instance and those CUDA shares (host paths, each at /dev/<its name>); none in no-card mode. */
  gpuDevices: readonly string[];
  /** The host driver's files and the cards' /proc entries a machine with cards sees (gpus.ts); none in no-card mode. */
  gpu?: GpuView | null;
  env: Readonly<Record<string, string>>;
  /** The account's 文件存储, mounted at SHARED_MOUNT. */
  sharedDir?: string;
  /** The machine's control group (cgroups.ts): every process of the sandbox joins it first. */
  cgroupProcs?: readonly string[];
  /** The host uid the machine runs as (host-uids.ts); null: the server's own. */
  hostUid?: number | null;
  /** A host file bound read-only at /etc/resolv.conf (the NAT's name server), where the sandbox has one. */
  resolvConf?: string;
  /** Private ranges the machine may reach after all (SANDBOX_ALLOW_NETS; network-policy.ts). */
  allowNets?: readonly string[];
  /** The machine's memory: the size of its /tmp and /run (none: the kernel's default, half the host's). */
  memoryBytes?: number;
  /** The lxcfs mount whose /proc files say the machine's own memory, cores and uptime (host-view.ts); none: the host's show. */
  lxcfs?: string | null;
  /** The unpacked image the machine runs (machine-image.ts): its /usr, root links and loader cache; none: the host's. */
  rootfs?: string | null;
  /** Its image config's Env (LANG, TZ, PATH…), which every process joining it gets (machineEnv); none: the host's system. */
  imageEnv?: Readonly<Record<string, string>>;
}

/**
 * Files of the machine's /etc the host binds its own over, read-only. The dynamic loader's: a
 * process joining the machine (commandIn) runs setpriv with every capability of the machine's user
 * namespace until setpriv has dropped them, and a preload or a cache the machine's root planted
 * would run its code with them. And the name server the NAT answers on.
 */
const BOUND_ETC = ['ld.so.preload', 'ld.so.cache', 'resolv.conf'] as const;

/** Where the account's 文件存储 is mounted inside the sandbox. */
export const SHARED_MOUNT = '/root/shared';

/** bwrap's arguments for the instance: namespaces, the read-only base, the two disks. */
export function bwrapArgs(paths: SandboxPaths, opts: SandboxOptions): string[] {
  // A user namespace of its own: the machine's root has its capabilities there only, so it cannot
  // mount host devices, remount the read-only base or reach anything the binds do not show.
  const args = [
    '--unshare-user',
    '--uid',
    '0',
    '--gid',
    '0',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    // Its own cgroup root: /proc/self/cgroup shows `/`, never the host's hierarchy.
    '--unshare-cgroup',
    '--hostname',
    opts.hostname,
    '--die-with-parent',
    '--clearenv',
    // No user namespaces inside: one would hand its creator every capability over what it then makes.
    // It nests the sandbox's user namespace, which a server that is not root could then not join
    // (commandIn): there the machine's root is the server's own uid, with nothing more to gain.
    ...(process.getuid?.() === 0 ? ['--disable-userns'] : []),
    '--cap-drop',
    'ALL',
    ...MACHINE_CAPS.flatMap((c) => ['--cap-add', `CAP_${c.toUpperCase()}`]),
  ];
  args.push(...baseArgs(opts.rootfs ?? null));
  // /tmp and /run hold the machine's memory (tmpfs pages count against its control group): df says its size, not half the host's.
  const tmpfsSize = opts.memoryBytes ? ['--size', String(opts.memoryBytes)] : [];
  args.push('--proc', '/proc', '--dev', '/dev', ...tmpfsSize, '--tmpfs', '/tmp', ...tmpfsSize, '--tmpfs', '/run');
  for (const file of LXCFS_PROC_FILES) {
    const from = opts.lxcfs ? path.join(opts.lxcfs, 'proc', file) : null;
    if (from && existsSync(from)) args.push('--ro-bind', from, `/proc/${file}`);
  }
  for (const dir of SYSTEM_DIRS) args.push('--bind', path.join(paths.system, dir), `/${dir}`);
  args.push('--ro-bind', '/dev/null', '/etc/ld.so.preload');
  // The cache of the /usr the machine runs (the host's or its image's read-only one); without one an
  // empty one, never the machine's own copy.
  args.push('--ro-bind', loaderCache(opts.rootfs ?? null), '/etc/ld.so.cache');
  // Copied from a descriptor (startSandbox opens the file): mountinfo inside names no host path.
  if (opts.resolvConf) args.push('--ro-bind-data', String(RESOLV_FD), '/etc/resolv.conf');
  // Without a data disk of its own, /root/autodl-tmp is a folder of the system disk and counts against its size.
  if (dataDiskApart(paths)) args.push('--bind', paths.data, DATA_MOUNT);
  if (opts.sharedDir) args.push('--bind', opts.sharedDir, SHARED_MOUNT);
  args.push(...gpuArgs(opts.gpuDevices, opts.gpu));
  const env = { ...SANDBOX_ENV, ...opts.env };
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  // The root folder read-only: the links /lib, /lib64 and /bin there are what the loader goes through.
  args.push('--chdir', '/root', '--remount-ro', '/');
  return args;
}

/** The root folder's entries that lead into /usr: links on a merged-/usr system, folders on an older one. */
const ROOT_LINKS = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'] as const;

/**
 * The machine's base, read-only: the host's /usr with Debian's merged-/usr links, or an image's
 * /usr with its root's links and folders as the image has them. An image's link is kept only where
 * it leads into /usr: through one into /etc the machine's root would choose the loader and the
 * libraries a joiner runs with capabilities (BOUND_ETC).
 */
function baseArgs(rootfs: string | null): string[] {
  if (!rootfs) {
    return ['--ro-bind', '/usr', '/usr', ...ROOT_LINKS.filter((l) => existsSync(path.join('/usr', l))).flatMap((l) => ['--symlink', `usr/${l}`, `/${l}`])];
  }
  const usr = path.join(rootfs, 'usr');
  if (!lstatOrNull(usr)?.isDirectory()) throw new Error('镜像无效：没有 /usr 目录');
  const args = ['--ro-bind', usr, '/usr'];
  for (const name of ROOT_LINKS) {
    const at = path.join(rootfs, name);
    const st = lstatOrNull(at);
    if (st?.isSymbolicLink()) {
      const target = readlinkSync(at);
      if (path.posix.resolve('/', target).startsWith('/usr/')) args.push('--symlink', target, `/${name}`);
    } else if (st?.isDirectory()) args.push('--ro-bind', at, `/${name}`);
  }
  return args;
}

/** The dynamic loader's cache of the machine's /usr: the host's, or its image's (a plain file only); /dev/null where there is none. */
function loaderCache(rootfs: string | null): string {
  if (!rootfs) return existsSync('/etc/ld.so.cache') ? '/etc/ld.so.cache' : '/dev/null';
  const file = path.join(rootfs, 'etc', 'ld.so.cache');
  return lstatOrNull(file)?.isFile() ? file : '/dev/null';
}

/**
 * Where `file` (an absolute path inside the machine) is in `root` (an image's rootfs, or `/`),
 * links followed as inside the machine — an absolute one from `root`, never out of it; null where
 * there is nothing there. What the console checks an image has (python3, the desktop's programs).
 */
export function inRoot(root: string, file: string): string | null {
  let parts = file.split('/').filter(Boolean);
  let at = root;
  let hops = 0;
  while (parts.length) {
    const name = parts.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      at = at === root ? root : path.dirname(at);
      continue;
    }
    const next = path.join(at, name);
    const st = lstatOrNull(next);
    if (!st) return null;
    if (!st.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (++hops > 40) return null;
    const target = readlinkSync(next);
    if (target.startsWith('/')) at = root;
    parts = [...target.split('/').filter(Boolean), ...parts];
  }
  return at;
}

/** Whether the data folder is a disk apart: an image mounted there, or no system disk image either (sizes not enforced). */
function dataDiskApart(paths: SandboxPaths): boolean {
  return mountedDevice(paths.data) !== null || mountedDevice(paths.system) === null;
}

/**
 * What the machine's root may do: a container runtime's default set (what package managers, sshd
 * and chown need), without CAP_NET_RAW (a packet socket would pass the machine's firewall:
 * network-policy.ts; ping uses ICMP datagram sockets instead) and CAP_SYS_ADMIN — no mounts, so no
 * remounting the read-only base, no mounting a cgroup hierarchy to lift its own limits — and nothing
 * else that reaches past the machine. Every process of the machine has at most these: bwrap's init
 * by --cap-drop/--cap-add, each one joining later (shell, SSH, notebook, desktop) by setpriv before
 * it runs (commandIn).
 */
export const MACHINE_CAPS = [
  'chown',
  'dac_override',
  'fowner',
  'fsetid',
  'kill',
  'setgid',
  'setuid',
  'setpcap',
  'setfcap',
  'net_bind_service',
  'sys_chroot',
  'audit_write',
] as const;

/** The sandbox's main process (bwrap's own init is PID 1 and reaps orphans): waits until the sandbox ends. */
const INIT = 'trap "exit 0" TERM INT; echo ready; while :; do sleep 3600 & wait $!; done';

export interface RunningSandbox {
  /** The bwrap process (its parent is this server). */
  process: ChildProcess;
  /** The host PID of the sandbox's PID 1 (bwrap's init), whose namespaces `exec` joins. */
  initPid: number;
  /** Resolves with the exit code when the sandbox has ended, for whatever reason. */
  ended: Promise<number | null>;
  /** The user-space NAT giving the sandbox outgoing connections (slirp4netns); null: loopback only. */
  network: ChildProcess | null;
  /** What a process joining the sandbox joins first (its control group's `cgroup.procs`); none: no limits. */
  cgroupProcs: readonly string[];
  /** The host uid its processes run as; null: the server's own. */
  hostUid: number | null;
  /** What its processes get in their environment besides SANDBOX_ENV (a GPU machine's: gpus.ts gpuEnv); none: nothing. */
  env?: Readonly<Record<string, string>>;
}

/** What it takes to run a process in a sandbox: its init (the namespaces), its control groups, its uid. */
export type Joinable = Pick<RunningSandbox, 'initPid'> & Partial<Pick<RunningSandbox, 'cgroupProcs' | 'hostUid' | 'env'>>;

/**
 * The environment of every process the console starts for a sandbox (bwrap, nsenter, setpriv,
 * slirp4netns, tar): never the server's own, which holds its secrets. bwrap's init inside keeps the
 * environment bwrap was given (`--clearenv` cleans only the command it runs), readable there as
 * /proc/1/environ.
 */
export const HOST_ENV: Readonly<Record<string, string>> = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };

/**
 * What runs first in front of every sandbox process: closes each descriptor above $1, joins the
 * control groups (a write of its own pid to each; exit 125 if it cannot), then becomes the command.
 *
 * Descriptors: the server may have inherited some without close-on-exec from whatever launched it
 * (a root-only file, a supervisor's socket). Node passes those to every child, and bwrap, nsenter and
 * setpriv pass them on into the machine. Closing them in the server at start would be a guess at
 * which ones Node or a native module still uses (a forked worker's IPC channel is one, and modules
 * open more later); closing in front of each sandbox process everything it was not given holds
 * whoever opened them and whenever. bash: dash redirects descriptors 0–9 only.
 */
const LAUNCH = `keep=$1; shift
for fd in /proc/$$/fd/*; do fd=\${fd##*/}; [ "$fd" -gt "$keep" ] && [ -L "/proc/$$/fd/$fd" ] && eval "exec $fd>&-"; done
while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift
exec "$@"`;

/**
 * The command line that runs `command` for a sandbox: with `env` only (env -i: not even the launcher
 * sees the server's), descriptors 0..`keepFds` only, inside the given control groups from its first
 * instruction. Spawning it with `env` as well keeps the server's environment from `env` itself.
 */
export function joinAndExec(
  cgroupProcs: readonly string[],
  command: string[],
  { keepFds = 2, env = HOST_ENV }: { keepFds?: number; env?: Readonly<Record<string, string>> } = {},
): { file: string; args: string[]; env: Record<string, string> } {
  const pairs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return {
    file: '/usr/bin/env',
    // --norc: bash sources ~/.bashrc when its stdin is a socket (it takes itself for one sshd started), and Node's
    // pipes are sockets: the host's /root/.bashrc (a pyenv that waits on its lock, say) would run before every join.
    args: ['-i', ...pairs, '/bin/bash', '--norc', '--noprofile', '-c', LAUNCH, 'launch', String(keepFds), ...cgroupProcs, '--', ...command],
    env: { ...env },
  };
}

/**
 * Starts the sandbox; resolves once it is ready to join: bwrap tells its init's PID on an info
 * descriptor as soon as it forked, before the new root is in place, so the main process says when
 * it runs.
 */
export async function startSandbox(paths: SandboxPaths, opts: SandboxOptions, bwrap = 'bwrap'): Promise<RunningSandbox> {
  // The host's files are bound over plain files: a link or a folder the machine's root left at
  // one of those names (it is stopped now) is removed, so that the bind lands where it should.
  for (const name of BOUND_ETC) {
    const at = path.join(paths.system, 'etc', name);
    if (lstatOrNull(at)?.isFile() === false) await clearEntry(at);
  }
  // The disks are bound over folders of the machine's /root: real folders, never a link that would
  // send the bind elsewhere (over /etc, say, uncovering the loader's files bound above).
  for (const mount of [DATA_MOUNT, SHARED_MOUNT]) {
    const at = path.join(paths.system, mount);
    if (lstatOrNull(at)?.isDirectory() === false) await clearEntry(at);
    if (!lstatOrNull(at)) {
      mkdirSync(at);
      await ownTree(at, opts.hostUid ?? null);
    }
  }
  const cgroupProcs = opts.cgroupProcs ?? [];
  // Into the control group as root, then the machine's uid, then bubblewrap: its user namespace maps root onto that uid.
  // bwrap's arguments through a descriptor: its command line is what `ps` and /proc/1/cmdline show
  // inside (bwrap is PID 1 there), and they name the host's paths.
  const line = joinAndExec(cgroupProcs, [...asHostUser(opts.hostUid), bwrap, '--info-fd', '3', '--args', String(ARGS_FD), '/bin/sh', '-c', INIT], {
    keepFds: RESOLV_FD,
  });
  // Before anything runs: an image that cannot be a machine's base is refused here.
  const args = bwrapArgs(paths, opts);
  const resolv = opts.resolvConf ? openSync(opts.resolvConf, 'r') : null;
  let child: ChildProcess;
  try {
    child = spawn(line.file, line.args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', resolv ?? 'ignore'], env: line.env });
  } finally {
    if (resolv !== null) closeSync(resolv);
  }
  const argsIn = child.stdio[ARGS_FD] as NodeJS.WritableStream;
  argsIn.on('error', () => {}); // a bwrap that failed at once: its exit says why
  argsIn.end(args.map((a) => `${a}\0`).join(''));
  const ended = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stderr = keepTail(child.stderr);
  const failed = ended.then((code) => {
    throw new Error(`沙箱启动失败（bwrap 退出码 ${code}）：${stderr.toString().trim() || '无输出'}`);
  });
  const initPid = readUntil(child.stdio[3] as NodeJS.ReadableStream, /"child-pid"\s*:\s*(\d+)/).then((m) => Number(m[1]));
  const ready = readUntil(child.stdout!, /ready\n/);
  failed.catch(() => {}); // ended later on purpose (stop): not a start failure
  try {
    const [pid] = await Promise.race([Promise.all([initPid, ready]), failed]);
    // The sandbox's init and bwrap's own hold its output and error output, and the machine's root
    // can take them (pidfd_getfd): once it runs, the console reads neither any more. A write there
    // then fails (EPIPE) in the writer; nothing reaches the console.
    for (const stream of [child.stdout, child.stderr, child.stdio[3]]) stream?.destroy();
    // Outgoing network only behind the machine's firewall (network-policy.ts): without nftables, a loopback only.
    const network = existsSync(SLIRP) && networkPolicyWorks().ok ? await connectNetwork(pid, cgroupProcs, opts.allowNets ?? []) : null;
    void ended.then(() => network?.kill());
    const env = machineEnv(opts.imageEnv ?? {}, Boolean(opts.gpu));
    const running = { process: child, initPid: pid, ended, network, cgroupProcs, hostUid: opts.hostUid ?? null, env };
    // What fails here (a file the machine's root put in the way) costs a login shell its image's PATH or its nvidia-smi only.
    if (opts.imageEnv) await runIn(running, ['/bin/sh', '-c', imagePathProfile(opts.imageEnv.PATH)]).catch(() => {});
    if (opts.gpu) await runIn(running, ['/bin/sh', '-c', GPU_PROFILE_SCRIPT]).catch(() => {});
    return running;
  } catch (e) {
    // Never a sandbox left running that nobody tracks (its disks mounted, its control group held).
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await ended;
    throw e;
  }
}

const SLIRP = '/usr/bin/slirp4netns';
/** The descriptors bwrap reads its arguments and the machine's /etc/resolv.conf from. */
const ARGS_FD = 4;
const RESOLV_FD = 5;

/**
 * Gives the sandbox's network namespace a tap device behind user-space NAT (its DNS at 10.0.2.3:
 * SandboxOptions.resolvConf); resolves once the device is configured (slirp4netns writes to its ready descriptor).
 */
async function connectNetwork(initPid: number, cgroupProcs: readonly string[], allowNets: readonly string[]): Promise<ChildProcess> {
  // Before the namespace has a way out: the host's addresses and the private ranges are never reachable from it.
  await applyFirewall(initPid, allowNets);
  // In the machine's control group (its traffic's memory and CPU are the machine's), in a mount
  // namespace of its own with no capabilities left, and with its system calls filtered: it parses
  // what the machine sends.
  const line = joinAndExec(
    cgroupProcs,
    [
      // Its sandbox unmounts what it leaves behind, which reaches the host's mounts of shared
      // propagation (`ip netns`'s /run/netns/*: the host's named network namespaces were deleted).
      // As root it gets a mount namespace of its own whose mounts propagate nowhere.
      ...(process.getuid?.() === 0 ? ['/usr/bin/unshare', '--mount', '--propagation', 'private'] : []),
      SLIRP,
      '--enable-sandbox',
      '--enable-seccomp',
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      '--ready-fd=3',
      // It ends when this descriptor closes: with the server, whatever happens to the sandbox.
      '--exit-fd=4',
      // As root it joins the network namespace by its path with its own powers (the sandbox's user
      // namespace is nested under the one owning that network: --disable-userns); otherwise through the sandbox's.
      ...(process.getuid?.() === 0 ? ['--netns-type=path', `/proc/${initPid}/ns/net`] : [`--userns-path=/proc/${initPid}/ns/user`, String(initPid)]),
      'tap0',
    ],
    { keepFds: 4 },
  );
  const slirp = spawn(line.file, line.args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: line.env });
  // Read to the end, a few KB kept: what the machine sends may make it log.
  const stderr = keepTail(slirp.stderr);
  const exited = new Promise<never>((_, reject) =>
    slirp.once('exit', (code) => reject(new Error(`沙箱网络启动失败（slirp4netns 退出码 ${code}）：${stderr.toString().trim() || '无输出'}`))),
  );
  await Promise.race([readUntil(slirp.stdio[3] as NodeJS.ReadableStream, /1/), exited]);
  (slirp.stdio[3] as NodeJS.ReadableStream & { destroy(): void }).destroy();
  exited.catch(() => {}); // ended later with the sandbox
  return slirp;
}

/** Resolves when what `stream` wrote matches `pattern` (a short one: the last 256 bytes are looked at). */
function readUntil(stream: NodeJS.ReadableStream, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve) => {
    const text = new BoundedText(256);
    const onData = (c: Buffer) => {
      text.push(c);
      const m = pattern.exec(text.toString());
      if (m) {
        stream.off('data', onData);
        resolve(m);
      }
    };
    stream.on('data', onData);
  });
}

/** The environment a process started inside the sandbox sees (bwrap's --clearenv leaves it nothing else). */
const SANDBOX_ENV = {
  HOME: '/root',
  USER: 'root',
  LANG: 'C.UTF-8',
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  TERM: 'xterm-256color',
};

/**
 * What every process joining a machine gets besides SANDBOX_ENV (RunningSandbox.env): its image
 * config's Env, and with cards the host driver's folders after the image's own (gpus.ts gpuEnv);
 * undefined: nothing (a machine on the host's system without cards). Never anything of the server's.
 */
export function machineEnv(imageEnv: Readonly<Record<string, string>>, cards: boolean): Record<string, string> | undefined {
  if (cards) return gpuEnv(imageEnv, SANDBOX_ENV.PATH);
  return Object.keys(imageEnv).length ? { ...imageEnv } : undefined;
}

/** An image config's Env (`NAME=VALUE` strings) as names and values; malformed entries are left out, a later one wins. */
export function imageEnvOf(env: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of env) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(entry);
    if (m && !m[2]!.includes('\0')) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Where login shells get the image's PATH back (Debian's /etc/profile sets its own); before nvidia-host.sh, which appends to it. */
const IMAGE_PROFILE = '/etc/profile.d/console-image-env.sh';

/**
 * Run inside a machine on an image as it starts (from inside: its /etc is its root's, links
 * included): login shells — the web terminal's, SSH's — have the image's PATH; no PATH in the image:
 * the file goes.
 */
export function imagePathProfile(imagePath: string | undefined): string {
  // A PATH of several lines is no PATH (and would end the file early).
  if (!imagePath || imagePath.includes('\n')) return `rm -f ${IMAGE_PROFILE}`;
  const quoted = `'${imagePath.replace(/'/g, `'\\''`)}'`;
  return `mkdir -p /etc/profile.d && cat > ${IMAGE_PROFILE} <<'EOF'
# The PATH of this machine's image (its config's Env); the console writes this at each start.
PATH=${quoted}
export PATH
EOF`;
}

/** A command line that runs `command` inside a running sandbox: in its namespaces, at its root, as its root user. */
export function commandIn(
  sandbox: Joinable,
  command: string[],
  env: Readonly<Record<string, string>> = {},
): { file: string; args: string[]; env: Record<string, string> } {
  // The sandbox's root inside: a machine with a host uid of its own is joined by the server's root,
  // which becomes that uid as it enters (nsenter's setuid(0) in the user namespace); otherwise the
  // joiner keeps its credentials, the server's uid, which is the sandbox's root. Either way what
  // joins has the capabilities of the sandbox's root only, never the host's.
  const args = [
    '--target',
    String(sandbox.initPid),
    ...(sandbox.hostUid == null ? ['--preserve-credentials'] : []),
    '--user',
    '--pid',
    '--mount',
    '--uts',
    '--ipc',
    '--net',
    '--cgroup',
    '--root',
    '--wd',
    '--',
    SETPRIV,
    '--bounding-set',
    ['-all', ...MACHINE_CAPS.map((c) => `+${c}`)].join(','),
    '--inh-caps',
    '-all',
    '--',
    // The machine's own environment (a GPU machine's library path) only once its capabilities are
    // dropped: the loader of nsenter and setpriv never searches a folder the machine's root can write.
    ...(sandbox.env ? ['/usr/bin/env', ...Object.entries(sandbox.env).map(([k, v]) => `${k}=${v}`)] : []),
    ...command,
  ];
  return joinAndExec(sandbox.cgroupProcs ?? [], ['nsenter', ...args], { env: { ...SANDBOX_ENV, ...env } });
}

/** Runs a command inside a running sandbox (commandIn). */
export function execIn(sandbox: Joinable, command: string[], options: SpawnOptions = {}): ChildProcess {
  const line = commandIn(sandbox, command, (options.env ?? {}) as Record<string, string>);
  return spawn(line.file, line.args, { ...options, env: line.env });
}

/** open(2)'s O_PATH (Linux): a descriptor naming a file without opening it, here a socket or a folder. */
const O_PATH = 0o10000000;

/**
 * Where a service inside the sandbox listens: a Unix socket on the sandbox's private /run (no TCP
 * port on the host). The machine's root controls that folder and could leave a link there to a
 * socket of the host (Docker's, PostgreSQL's), which a path would follow from the host's side. So
 * the socket is reached through descriptors taken one step at a time without following links —
 * the sandbox's root, its run, the socket — and the connection goes to `/proc/self/fd/<n>` of the
 * last. `close` releases them once connected.
 */
export function serviceSocket(sandbox: Joinable, service: string): { path: string; close(): void } | null {
  const opened: number[] = [];
  const close = () => opened.splice(0).forEach((fd) => closeSync(fd));
  try {
    // The root link is followed on purpose: it is the sandbox's root as its init sees it.
    opened.push(openSync(`/proc/${sandbox.initPid}/root`, O_PATH | constants.O_DIRECTORY));
    opened.push(openSync(`/proc/self/fd/${opened[0]}/run`, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW));
    opened.push(openSync(`/proc/self/fd/${opened[1]}/${service}.sock`, O_PATH | constants.O_NOFOLLOW));
    if (!fstatSync(opened[2]!).isSocket()) throw new Error('not a socket');
    return { path: `/proc/self/fd/${opened[2]}`, close };
  } catch {
    close();
    return null;
  }
}

/** The 自定义服务 port: an HTTP service the user starts on it inside the machine is reachable through the console. */
export const SERVICE_PORT = 6006;
export const PYTHON = '/usr/bin/python3';

/**
 * Inside the sandbox: a Unix socket on /run whose connections are relayed to 127.0.0.1:6006 of the
 * sandbox's own network (a half-close passes through, so HTTP bodies end right); nothing listening
 * there is answered with a page saying how to start one.
 */
const SERVICE_RELAY = `
import asyncio, os
PORT = ${SERVICE_PORT}
HINT = ('<meta charset="utf-8"><h3>实例内 %d 端口没有服务在监听</h3><p>请在实例中启动服务并监听 %d 端口，例如 TensorBoard：'
        '<code>tensorboard --logdir /root/autodl-tmp/logs --port %d</code>，然后刷新本页。</p>' % (PORT, PORT, PORT)).encode()
async def pump(r, w, half):
    try:
        while True:
            data = await r.read(65536)
            if not data:
                break
            w.write(data)
            await w.drain()
        if half and w.can_write_eof():
            w.write_eof()
        else:
            w.close()
    except Exception:
        w.close()
async def handle(cr, cw):
    try:
        ur, uw = await asyncio.open_connection('127.0.0.1', PORT)
    except OSError:
        cw.write(b'HTTP/1.1 502 Bad Gateway\\r\\nContent-Type: text/html; charset=utf-8\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n' % len(HINT) + HINT)
        await cw.drain()
        cw.close()
        return
    await asyncio.gather(pump(cr, uw, True), pump(ur, cw, False))
    uw.close()
    cw.close()
async def main():
    path = '/run/service.sock'
    if os.path.exists(path):
        os.unlink(path)
    server = await asyncio.start_unix_server(handle, path)
    async with server:
        await server.serve_forever()
asyncio.run(main())
`;

/** Starts the 自定义服务 relay inside the sandbox (serviceSocket(sandbox, 'service')); it ends with the sandbox. */
export function startServiceRelay(sandbox: Joinable, log?: (m: string) => void): void {
  const relay = execIn(sandbox, [PYTHON, '-c', SERVICE_RELAY], { stdio: 'ignore' });
  relay.once('error', (e) => log?.(`local compute: 自定义服务转发无法启动（${e.message}）`));
}

/** What runIn keeps of a command's output and of its error output: their last MB each. */
const RUN_OUTPUT_LIMIT = 1024 ** 2;

/** Runs a command to its end inside the sandbox: its exit code and what it printed (the end of it: RUN_OUTPUT_LIMIT). */
export function runIn(sandbox: Joinable, command: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execIn(sandbox, command, { stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout = keepTail(child.stdout, RUN_OUTPUT_LIMIT);
    const stderr = keepTail(child.stderr, RUN_OUTPUT_LIMIT);
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() }));
  });
}

/**
 * Ends the sandbox and waits until it has: bwrap's own init is PID 1 inside and ignores TERM, so the
 * outer bwrap process is ended, which takes the namespace and everything in it along
 * (`--die-with-parent`); KILL after `graceMs`.
 */
export async function stopSandbox(sandbox: RunningSandbox, graceMs = 3000): Promise<void> {
  if (sandbox.process.exitCode !== null || sandbox.process.signalCode !== null) return;
  // The namespace's first process, killed: everything in it goes with it. Not only through the
  // outer bwrap's death signal, which the machine's root could have cleared in it (same uid, ptrace).
  try {
    process.kill(sandbox.initPid, 'SIGKILL');
  } catch {
    // gone already
  }
  // The outer bwrap then reaps it and ends by itself (ended first, the first process would stay a
  // zombie of the host's init); told to only if it does not.
  const term = setTimeout(() => sandbox.process.kill('SIGTERM'), 1000);
  const kill = setTimeout(() => sandbox.process.kill('SIGKILL'), graceMs);
  await sandbox.ended;
  clearTimeout(term);
  clearTimeout(kill);
}

/** Whether bwrap can make a sandbox on this host (the `auto` choice of the compute driver, taken once at start). */
export function bwrapWorks(bwrap = 'bwrap'): { ok: boolean; why: string } {
  const links = ['bin', 'lib', 'lib64'].filter((l) => existsSync(path.join('/usr', l))).flatMap((l) => ['--symlink', `usr/${l}`, `/${l}`]);
  const run = spawnSync(bwrap, ['--unshare-pid', '--ro-bind', '/usr', '/usr', ...links, '--proc', '/proc', '/bin/true'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: HOST_ENV,
    timeout: 10_000,
  });
  if (run.error) return { ok: false, why: `找不到 bwrap（${(run.error as NodeJS.ErrnoException).code ?? run.error.message}）：安装 Debian 软件包 bubblewrap` };
  if (run.status !== 0) return { ok: false, why: `bwrap 无法创建沙箱：${run.stderr.toString().trim() || `退出码 ${run.status}`}` };
  return { ok: true, why: 'bwrap 可用' };
}
