/**
 * What a machine's /proc says about its size (issue 28 §1 "host facts"): without help, `free`, `top`,
 * /proc/meminfo, /proc/cpuinfo and /proc/stat show the host's memory and cores, /proc/uptime the
 * host's. lxcfs (Debian package `lxcfs`, a FUSE file system) answers those files for whoever reads
 * them from the reader's control groups — the machine's memory limit and CFS quota — and from its
 * PID namespace's start; the sandbox binds its files over /proc/… (sandbox.ts).
 *
 * The driver runs one lxcfs of its own on `<dir>/lxcfs` (several consoles on a host do not share
 * one), ended with the server (a parent-death signal TERM: lxcfs unmounts itself on it); a mount
 * left behind without its process (lxcfs was killed) is taken off at the next start. Where lxcfs cannot run (not root, no FUSE,
 * not installed) machines start without it and the driver says so once in its log.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { mountedDevice } from './disk.js';

export const LXCFS = '/usr/bin/lxcfs';

/** The /proc files lxcfs answers that the sandbox binds (slabinfo is root's only on the host: left alone). */
export const LXCFS_PROC_FILES = ['cpuinfo', 'diskstats', 'loadavg', 'meminfo', 'stat', 'swaps', 'uptime'] as const;

export interface HostView {
  /** The lxcfs mount the machines' /proc files come from; null: machines see the host's. */
  readonly mount: string | null;
  /** For the log: whether machines see their own size, or why not. */
  readonly why: string;
  /** Ends lxcfs (it unmounts itself); resolves once it has. */
  stop(): Promise<void>;
}

/** Starts (or finds running) the lxcfs of the driver's folder `dir`; resolves once its files answer. */
export async function startHostView(dir: string): Promise<HostView> {
  const none = (why: string): HostView => ({ mount: null, why, stop: async () => {} });
  if (process.getuid?.() !== 0) return none('服务器不以 root 运行');
  if (!existsSync(LXCFS)) return none('缺少 lxcfs（Debian 软件包 lxcfs）');
  if (!existsSync('/dev/fuse')) return none('本机没有 /dev/fuse');
  const mount = path.join(dir, 'lxcfs');
  if (mountedDevice(mount) !== null) {
    // Left by an lxcfs that was killed: the mount answers nothing (not even to mkdir).
    spawnSync('umount', ['-l', mount], { stdio: 'ignore' });
  }
  mkdirSync(mount, { recursive: true, mode: 0o755 });
  // In the foreground, as this process's child, ended when it ends; its pid file its own (not /run/lxcfs.pid).
  const child = spawn('/usr/bin/setpriv', ['--pdeathsig', 'TERM', '--', LXCFS, '-f', '--enable-cfs', '-l', '-p', path.join(dir, 'lxcfs.pid'), mount], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-1000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; i < 100 && child.exitCode === null; i++) {
    if (answers(mount)) {
      child.stderr!.removeAllListeners('data').resume();
      return { mount, why: '实例内 free、top、/proc/meminfo、/proc/cpuinfo 显示实例规格（lxcfs）', stop: () => stopChild(child, exited) };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stopChild(child, exited);
  return none(`lxcfs 无法启动：${stderr.trim().split('\n').pop() || '超时'}`);
}

/** Whether the lxcfs on `mount` answers (its meminfo reads). */
function answers(mount: string): boolean {
  try {
    return readFileSync(path.join(mount, 'proc', 'meminfo'), 'utf8').startsWith('MemTotal:');
  } catch {
    return false;
  }
}

/** TERM (lxcfs unmounts itself), KILL after 3 s; resolves once it has ended, so a next lxcfs never meets its unmount. */
async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(kill);
}
