/**
 * `npm run images`: each recipe built with mmdebstrap into one layer and imported into the console's
 * OCI layout under its ref, with the recipe's hash as an annotation. An image whose recipe has not
 * changed since it was built is left as it is; the layout's index.json is the record of what was built.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { OciImageConfigLite, OciImageInfo, OciLayout } from '../drivers/compute/local/oci/layout.js';
import { mmdebstrapArgs, runMmdebstrap, type Mirrors } from './mmdebstrap.js';
import { pinnedPackages, recipeHash, type ResolvedRecipe } from './recipe.js';

/** The manifest annotation that says which recipe made the image (recipe.ts recipeHash). */
export const RECIPE_ANNOTATION = 'cn.console.recipe.sha256';
/** system / desktop / application (the recipe's kind), for the catalogue and the market. */
export const KIND_ANNOTATION = 'cn.console.image.kind';

const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The image config a machine starts with: PATH, the locale and time zone, the recipe's own; an application's command and port. */
export function imageConfigOf(r: ResolvedRecipe): OciImageConfigLite {
  return {
    env: [PATH, `LANG=${r.locale}`, `TZ=${r.timezone}`, ...r.env],
    cmd: r.app?.command ?? r.cmd,
    workingDir: r.workingDir,
    exposedPorts: r.app ? [r.app.port] : [],
  };
}

/** What the image says about itself beyond its config (image-spec annotations.md's keys where they exist). */
export function annotationsOf(r: ResolvedRecipe, hash: string): Record<string, string> {
  return {
    'org.opencontainers.image.title': r.title,
    'org.opencontainers.image.description': r.description,
    'org.opencontainers.image.version': r.ref.slice(r.ref.lastIndexOf(':') + 1),
    [KIND_ANNOTATION]: r.kind,
    [RECIPE_ANNOTATION]: hash,
  };
}

export interface BuildOutcome {
  name: string;
  ref: string;
  digest: string;
  size: number;
  /** built now, or already there from the same recipe. */
  built: boolean;
  seconds: number;
}

export interface BuildOptions {
  layout: OciLayout;
  /** Scratch space on the layout's disk: mmdebstrap's tree and the tar, removed after each image. */
  workDir: string;
  mirrors: Mirrors;
  asRoot: boolean;
  /** Build even where the same recipe's image is there. */
  force?: boolean;
  say: (line: string) => void;
  /** What makes the root file system's tar (mmdebstrap; tests give a stand-in). */
  run?: typeof runMmdebstrap;
}

/** The image of a recipe, built unless the layout has it from the same recipe. */
export async function buildImage(r: ResolvedRecipe, o: BuildOptions): Promise<BuildOutcome> {
  const started = Date.now();
  const hash = recipeHash(r);
  const existing = await o.layout.resolve(r.ref);
  if (existing && existing.annotations[RECIPE_ANNOTATION] === hash && !o.force) {
    o.say(`[${r.name}] ${r.ref} 已是此配方构建的镜像（${existing.digest}），跳过`);
    return outcome(r, existing, false, started);
  }
  o.say(`[${r.name}] 构建 ${r.ref}「${r.title}」：${r.suite}，${Object.keys(r.packages).length} 个指定软件包${existing ? '（配方已变，重新构建）' : ''}`);
  const scratch = path.join(o.workDir, r.name);
  await removeScratch(scratch);
  await mkdir(scratch, { recursive: true, mode: 0o755 });
  try {
    const tar = path.join(scratch, 'rootfs.tar');
    const elapsed = () => formatSeconds((Date.now() - started) / 1000);
    const run = o.run ?? runMmdebstrap;
    await run(mmdebstrapArgs(r, { mirrors: o.mirrors, asRoot: o.asRoot }), tar, {
      tmpDir: scratch,
      onLine: (l) => o.say(`[${r.name}] ${elapsed()} ${l.kind === 'warning' ? '警告：' : l.kind === 'error' ? '错误：' : ''}${l.text}`),
    });
    o.say(`[${r.name}] ${elapsed()} 根文件系统 ${formatBytes((await stat(tar)).size)}，压缩并写入镜像目录`);
    const info = await o.layout.importImage({
      ref: r.ref,
      layers: [tar],
      config: imageConfigOf(r),
      annotations: annotationsOf(r, hash),
      history: `mmdebstrap --variant=${r.variant} ${r.suite}: ${pinnedPackages(r).join(' ')}`,
    });
    o.say(`[${r.name}] ${elapsed()} 完成：${r.ref} → ${info.digest}（${formatBytes(info.size)}）`);
    return outcome(r, info, true, started);
  } finally {
    await removeScratch(scratch);
  }
}

/**
 * mmdebstrap mounts /proc, /sys and /dev into its tree while it installs, and unmounts them when it
 * ends; a build killed outright may leave them. Removing the folder then would reach into the host's
 * own /dev and /sys: refuse, and say what to unmount.
 */
async function removeScratch(dir: string): Promise<void> {
  const mounted = mountPointsUnder(dir);
  if (mounted.length) throw new Error(`上次构建留下了挂载点，请先卸载再运行：umount -R ${mounted.join(' ')}`);
  await rm(dir, { recursive: true, force: true });
}

/** Mount points at or below `dir` (/proc/self/mountinfo's fifth field, its octal escapes decoded). */
export function mountPointsUnder(dir: string, mountinfo = readMountinfo()): string[] {
  const root = path.resolve(dir);
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8))))
    .filter((p): p is string => !!p && (p === root || p.startsWith(`${root}/`)));
}

function readMountinfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/** The recipes in the order given, one after another (each is a full Debian install: two at once only compete for the disk and the mirror). */
export async function buildImages(recipes: ResolvedRecipe[], o: BuildOptions): Promise<BuildOutcome[]> {
  const out: BuildOutcome[] = [];
  for (const r of recipes) out.push(await buildImage(r, o));
  return out;
}

function outcome(r: ResolvedRecipe, info: OciImageInfo, built: boolean, started: number): BuildOutcome {
  return { name: r.name, ref: r.ref, digest: info.digest, size: info.size, built, seconds: (Date.now() - started) / 1000 };
}

export function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${Math.ceil(n / 1024)} KiB`;
}

export function formatSeconds(s: number): string {
  const m = Math.floor(s / 60);
  const sec = Math.floor(s % 60);
  return `${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
}
