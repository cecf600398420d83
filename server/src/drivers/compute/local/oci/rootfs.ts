/**
 * Images unpacked, once per host and manifest digest: the root file systems local machines are
 * given read-only (the layout's images: stock ones and the operator's registry's, all trusted by the
 * operator; what users save is unpacked elsewhere, in a throwaway sandbox, never here).
 *
 * Layers are applied lowest first with the OCI whiteouts (image-spec layer.md): `.wh.<name>` removes
 * `<name>` of the layers below, `.wh..wh..opq` empties its folder of what the layers below put
 * there. Each layer's blob is checked against its digest first, and its member names must stay
 * inside the root (no absolute names, no `..`). The removals and GNU tar run in a sandbox whose
 * only writable folder is the root being made, so that a link an image holds (`/etc/alternatives/x
 * → /usr/…`) can never lead a write to the host's own files.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { keepTail } from '../bounded-text.js';
import type { OciLayout } from './layout.js';
import { alive } from './lock.js';

const exec = promisify(execFile);
const DIGEST = /^sha256:([a-f0-9]{64})$/;
const UNPACKED = /^[a-f0-9]{64}$/;
const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

export class RootfsCache {
  private readonly unpacking = new Map<string, Promise<string>>();

  constructor(
    readonly dir: string,
    private readonly layout: OciLayout,
    private readonly bwrap = 'bwrap',
  ) {}

  /** The unpacked root of the image with this manifest digest: unpacked the first time (concurrent callers share that work). */
  ensure(digest: string): Promise<string> {
    const at = this.pathOf(digest);
    if (existsSync(at)) return Promise.resolve(at);
    let work = this.unpacking.get(digest);
    if (!work) {
      work = this.unpack(digest).finally(() => this.unpacking.delete(digest));
      this.unpacking.set(digest, work);
    }
    return work;
  }

  has(digest: string): boolean {
    return existsSync(this.pathOf(digest));
  }

  /** Removes the unpacked images whose digest is not in `keep` (and what an interrupted unpacking left); the removed digests. */
  async prune(keep: ReadonlySet<string>): Promise<string[]> {
    if (!existsSync(this.dir)) return [];
    const busy = new Set([...this.unpacking.keys()].map(hexOf));
    const removed: string[] = [];
    for (const name of await readdir(this.dir)) {
      const tmp = /^\.tmp-([a-f0-9]{64})-(\d+)-/.exec(name);
      // Another console process on this DATA_DIR may be unpacking into its own: left to it while it lives.
      const othersLive = tmp && Number(tmp[2]) !== process.pid && alive(Number(tmp[2]));
      if (tmp && !busy.has(tmp[1]!) && !othersLive) await removeTree(path.join(this.dir, name));
      if (!UNPACKED.test(name) || keep.has(`sha256:${name}`) || busy.has(name)) continue;
      await removeTree(path.join(this.dir, name));
      removed.push(`sha256:${name}`);
    }
    return removed;
  }

  private pathOf(digest: string): string {
    return path.join(this.dir, hexOf(digest));
  }

  private async unpack(digest: string): Promise<string> {
    const image = await this.layout.resolve(digest);
    if (!image) throw new Error(`镜像 ${digest} 不在本机的镜像目录中`);
    await mkdir(this.dir, { recursive: true, mode: 0o755 });
    await chmod(this.dir, 0o755);
    const tmp = path.join(this.dir, `.tmp-${hexOf(digest)}-${process.pid}-${Date.now()}`);
    await mkdir(tmp, { mode: 0o755 });
    try {
      for (const layer of image.layers) await this.applyLayer(tmp, layer.digest);
      // Machines walk into it as their own uids; the image's '.' entry may have said otherwise.
      await chmod(tmp, 0o755);
      if (asRoot()) await chown(tmp, 0, 0);
      const at = this.pathOf(digest);
      await renameUnlessThere(tmp, at);
      return at;
    } catch (e) {
      await removeTree(tmp);
      throw e;
    }
  }

  /** One layer onto the root being made: its digest checked, its whiteouts applied, then its files. */
  private async applyLayer(root: string, digest: string): Promise<void> {
    await this.layout.verifyBlob(digest);
    const blob = this.layout.blobPath(digest);
    const removals = whiteoutsOf(await memberNames(blob));
    const script = [
      'set -e',
      // Pairs of (rm|empty, path) in the arguments, then the tar that extracts the layer.
      'while [ "$#" -gt 0 ]; do',
      '  case "$1" in',
      '    rm) rm -rf -- "$2" ;;',
      '    empty) if [ -d "$2" ] && [ ! -L "$2" ]; then find "$2" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; fi ;;',
      '  esac',
      '  shift 2',
      'done',
      // Not root: the sandbox's root is the server's uid only, and the image's owners cannot be given.
      `exec tar -x -f /layer -C /r --numeric-owner -p --delay-directory-restore ${asRoot() ? '' : '--no-same-owner'} '--exclude=${WHITEOUT}*'`,
    ].join('\n');
    const args = removals.flatMap((r) => [r.kind, path.posix.join('/r', r.path)]);
    await run(this.bwrap, [...this.sandboxArgs(root, blob), '/bin/sh', '-c', script, 'sh', ...args], `解包镜像层 ${digest} 失败`);
  }

  /**
   * A sandbox that sees the host's /usr read-only (its tar, sh, rm, find), the layer at /layer and
   * the root being made at /r, nothing else. As root it keeps root's powers over /r (tar sets the
   * image's owners and device files) without a user namespace, which would map only uid 0.
   */
  private sandboxArgs(root: string, blob: string): string[] {
    const links = ['bin', 'lib', 'lib64', 'sbin'].filter((l) => existsSync(path.join('/usr', l))).flatMap((l) => ['--symlink', `usr/${l}`, `/${l}`]);
    return [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-net',
      '--unshare-uts',
      '--die-with-parent',
      ...(asRoot() ? ['--cap-add', 'ALL'] : ['--unshare-user']),
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/usr/sbin',
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
      '--tmpfs',
      '/tmp',
      '--ro-bind',
      blob,
      '/layer',
      '--bind',
      root,
      '/r',
    ];
  }
}

/** A layer's member names as stored (GNU tar lists them with C escapes for unusual bytes; undone here). Refuses names that leave the root. */
export async function memberNames(blob: string): Promise<string[]> {
  const { stdout } = await exec('tar', ['-t', '-f', blob, '--quoting-style=escape'], { maxBuffer: 512 * 1024 ** 2, encoding: 'buffer' });
  const names = stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map(unescapeTarName);
  for (const name of names) {
    if (name.startsWith('/') || name.split('/').includes('..')) throw new Error(`镜像层中有越出根目录的路径：${name.slice(0, 200)}`);
  }
  return names;
}

/** GNU tar's `escape` quoting: \\ \n \t \a \b \f \r \v and \ooo octal bytes. */
function unescapeTarName(line: string): string {
  const bytes: number[] = [];
  const simple: Record<string, number> = { '\\': 0x5c, n: 0x0a, t: 0x09, a: 0x07, b: 0x08, f: 0x0c, r: 0x0d, v: 0x0b };
  const raw = Buffer.from(line, 'utf8');
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== 0x5c || i + 1 >= raw.length) {
      bytes.push(c);
      continue;
    }
    const next = String.fromCharCode(raw[i + 1]!);
    const octal = /^[0-7]{3}$/.exec(raw.subarray(i + 1, i + 4).toString('latin1'));
    if (octal) {
      bytes.push(Number.parseInt(octal[0], 8));
      i += 3;
    } else if (next in simple) {
      bytes.push(simple[next]!);
      i += 1;
    } else {
      bytes.push(c);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** What a layer's whiteouts remove from the layers below: `rm` a path, or `empty` a folder (opaque). */
export function whiteoutsOf(names: readonly string[]): { kind: 'rm' | 'empty'; path: string }[] {
  const out: { kind: 'rm' | 'empty'; path: string }[] = [];
  for (const raw of names) {
    const name = path.posix
      .normalize(raw)
      .replace(/^(\.\/)+/, '')
      .replace(/\/$/, '');
    const base = path.posix.basename(name);
    if (!base.startsWith(WHITEOUT)) continue;
    const dir = path.posix.dirname(name);
    if (base === OPAQUE) out.push({ kind: 'empty', path: dir === '.' ? '' : dir });
    else if (base.length > WHITEOUT.length) out.push({ kind: 'rm', path: path.posix.join(dir, base.slice(WHITEOUT.length)) });
  }
  // Opaque folders first: a whiteout beside one names something of a layer below that the emptying already removed.
  return [...out.filter((r) => r.kind === 'empty'), ...out.filter((r) => r.kind === 'rm')];
}

/** Renames the finished root into place; where another process of this host got there first, its copy stays and this one goes. */
async function renameUnlessThere(tmp: string, at: string): Promise<void> {
  try {
    if (!existsSync(at)) return await rename(tmp, at);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
  }
  await removeTree(tmp);
}

function asRoot(): boolean {
  return process.getuid?.() === 0;
}

function hexOf(digest: string): string {
  const m = DIGEST.exec(digest);
  if (!m) throw new Error(`无效的镜像摘要：${digest.slice(0, 100)}`);
  return m[1]!;
}

/** `rm`, never into another file system; Node's rm overflows its stack on very deep trees. */
function removeTree(dir: string): Promise<void> {
  return run('rm', ['-rf', '--one-file-system', '--', dir], '删除已解包的镜像失败');
}

function run(file: string, args: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const stderr = keepTail(child.stderr);
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${what}：${stderr.toString().trim().slice(-300) || `退出码 ${code}`}`))));
  });
}
