/**
 * `npm run build` (and so `npm start`): the console's web app into web/dist, safely when several run
 * at once in one checkout and while a server serves web/dist.
 *
 * - One build at a time: a lock folder (web/.build-lock, holding the builder's pid; a dead builder's
 *   lock is taken over). A second `npm start` waits for the first build, then finds web/dist current.
 * - Skipped when web/dist is current: the hash of everything the build reads (web and contract
 *   sources, index.html, public/, configs, the lockfile) is stored in web/dist/.build-stamp.json.
 * - Built into a fresh folder beside it (web/.dist-<time>-<pid>); web/dist is a symbolic link to
 *   the current one, replaced in one rename, so it is never missing or half written: a running
 *   server serves the old files until the swap and the new ones after it, without a restart. The
 *   previous build's hashed assets are linked into the new one, so a page loaded before the swap can
 *   still fetch its lazily loaded chunks; the previous folder is then removed.
 *
 * `--force` builds even when web/dist is current.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { link, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface WebBuildOptions {
  /** The web package's folder (web/dist, the lock and the fresh folders live here). */
  webDir: string;
  /** Files and folders (absolute) whose contents decide the build's output. */
  inputs: string[];
  /** Builds the app into the given (fresh) folder. */
  build: (outDir: string) => Promise<void>;
  force?: boolean;
  log?: (line: string) => void;
  /** How often a waiting build looks at the lock again. */
  pollMs?: number;
}

interface Stamp {
  inputs: string;
  /** The hashed assets this build made (not those carried over from the one before). */
  assets: string[];
}

const STAMP = '.build-stamp.json';
const LOCK = '.build-lock';
/** Build folders (web/dist links to one) and the link being swapped in. */
const BUILD_PREFIX = '.dist-';

/** Builds web/dist unless it is current; resolves to whether it built. */
export async function buildWeb(opts: WebBuildOptions): Promise<boolean> {
  const log = opts.log ?? (() => {});
  const release = await takeLock(opts.webDir, opts.pollMs ?? 500, log);
  try {
    const dist = path.join(opts.webDir, 'dist');
    const inputs = await hashInputs(opts.inputs);
    const previous = await readStamp(dist);
    if (!opts.force && previous?.inputs === inputs && existsSync(path.join(dist, 'index.html'))) {
      log('web/dist 已是最新（源码与配置未变），跳过构建');
      return false;
    }
    await removeLeftovers(opts.webDir);
    const fresh = path.join(opts.webDir, `${BUILD_PREFIX}${Date.now()}-${process.pid}`);
    await opts.build(fresh);
    if (!existsSync(path.join(fresh, 'index.html'))) throw new Error('构建没有产出 index.html');
    const stamp: Stamp = { inputs, assets: await assetsUnder(fresh) };
    await writeFile(path.join(fresh, STAMP), JSON.stringify(stamp));
    if (previous) await carryAssets(dist, fresh, previous.assets);
    await swapIn(opts.webDir, fresh);
    log('web/dist 已更新');
    return true;
  } finally {
    await release();
  }
}

/** Takes the build lock, waiting while a live process holds it; resolves to its release. */
async function takeLock(webDir: string, pollMs: number, log: (line: string) => void): Promise<() => Promise<void>> {
  const lock = path.join(webDir, LOCK);
  let told = false;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(path.join(lock, 'pid'), String(process.pid));
      return () => rm(lock, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = await lockHolder(lock);
    if (holder !== null && !alive(holder)) {
      // The builder died holding it (killed mid-build): its lock is stale.
      await rm(lock, { recursive: true, force: true });
      continue;
    }
    if (!told) log(`另一个构建正在进行（进程 ${holder ?? '?'}），等待它完成`);
    told = true;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** The pid in the lock; null while the holder has made the folder but not yet written it. */
async function lockHolder(lock: string): Promise<number | null> {
  const text = await readFile(path.join(lock, 'pid'), 'utf8').catch(() => '');
  const pid = Number(text);
  if (Number.isInteger(pid) && pid > 0) return pid;
  // A folder left without a pid for long is stale too (the holder died between the two steps).
  const made = await stat(lock).catch(() => null);
  return made && Date.now() - made.mtimeMs > 60_000 ? 0 : null;
}

function alive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** sha256 over every input file's path and contents (tests excluded: they do not reach the build). */
export async function hashInputs(inputs: string[]): Promise<string> {
  const files: string[] = [];
  for (const input of inputs) {
    const info = await stat(input).catch(() => null);
    if (!info) continue;
    if (info.isFile()) files.push(input);
    else {
      const entries = await readdir(input, { recursive: true, withFileTypes: true });
      files.push(...entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)));
    }
  }
  const hash = createHash('sha256');
  for (const file of files.filter((f) => !/\.test\.tsx?$/.test(f)).sort()) {
    hash.update(`${file}\0`);
    hash.update(await readFile(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

async function readStamp(dist: string): Promise<Stamp | null> {
  try {
    return JSON.parse(await readFile(path.join(dist, STAMP), 'utf8')) as Stamp;
  } catch {
    return null;
  }
}

async function assetsUnder(dir: string): Promise<string[]> {
  const assets = path.join(dir, 'assets');
  if (!existsSync(assets)) return [];
  const entries = await readdir(assets, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** The previous build's own hashed assets the new one lacks, linked in (hashed names never clash). */
async function carryAssets(dist: string, fresh: string, assets: string[]) {
  for (const asset of assets) {
    const target = path.join(fresh, asset);
    if (existsSync(target) || !existsSync(path.join(dist, asset))) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await link(path.join(dist, asset), target).catch(() => {});
  }
}

/**
 * Points web/dist at the fresh folder: a new link renamed over the old one (one step, so a reader
 * sees the old build or the new one, never neither), then the folder the old link named is removed.
 */
async function swapIn(webDir: string, fresh: string) {
  const dist = path.join(webDir, 'dist');
  const before = await lstat(dist).catch(() => null);
  const previous = before?.isSymbolicLink() ? path.resolve(webDir, await readlink(dist)) : null;
  if (before && !before.isSymbolicLink()) {
    // web/dist from a build before this script (a real folder): moved aside once; the link replaces it.
    await rename(dist, `${fresh}-old`);
  }
  const link = path.join(webDir, `${BUILD_PREFIX}link-${process.pid}`);
  await rm(link, { force: true });
  await symlink(path.basename(fresh), link);
  await rename(link, dist);
  if (previous && path.basename(previous).startsWith(BUILD_PREFIX)) await rm(previous, { recursive: true, force: true });
  await rm(`${fresh}-old`, { recursive: true, force: true });
}

/** Build folders and links of builds that were killed (only the lock holder runs this): all but the one web/dist names. */
async function removeLeftovers(webDir: string) {
  const current = await readlink(path.join(webDir, 'dist')).catch(() => null);
  for (const name of await readdir(webDir)) {
    if (name.startsWith(BUILD_PREFIX) && name !== current) await rm(path.join(webDir, name), { recursive: true, force: true });
  }
}

/** What this repository's web build reads. */
export function webInputs(webDir: string): string[] {
  const root = path.dirname(webDir);
  return [
    ...['src', 'public', 'index.html', 'vite.config.ts', 'tsconfig.json', 'package.json', 'scripts/build.ts'].map((p) => path.join(webDir, p)),
    ...['contract/src', 'contract/package.json', 'tsconfig.base.json', 'package-lock.json'].map((p) => path.join(root, p)),
  ];
}

async function main() {
  const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { build } = await import('vite');
  await buildWeb({
    webDir,
    inputs: webInputs(webDir),
    force: process.argv.includes('--force'),
    log: (line) => console.log(line),
    build: async (outDir) => {
      await build({ root: webDir, configFile: path.join(webDir, 'vite.config.ts'), build: { outDir, emptyOutDir: true } });
    },
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error('构建失败：', err);
    process.exit(1);
  });
}
