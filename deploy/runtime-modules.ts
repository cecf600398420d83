/**
 * Which folders of the checkout's node_modules the console needs at run time: the dependencies of the
 * server and contract workspaces, followed through package-lock.json the way Node resolves them (a
 * package's own node_modules first, then each folder above), plus tsx, which runs the server's
 * TypeScript (a root devDependency here: `npm ci --omit=dev` would drop it, and moving it would
 * change the lockfile everyone installs from). The web app's, the tests' and the linters' packages
 * stay out. Optional dependencies are taken where the checkout has them (esbuild's linux-x64 binary).
 *
 * `npx tsx deploy/runtime-modules.ts [repo]` prints one path per line, relative to the repository
 * (deploy/build-image.sh copies them): installed packages as they are, native modules already built.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface LockPackage {
  version?: string;
  resolved?: string;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

export interface Lockfile {
  lockfileVersion: number;
  packages: Record<string, LockPackage>;
}

/** The workspaces whose dependencies the running server needs, and what runs its TypeScript. */
export const RUNTIME_WORKSPACES = ['server', 'contract'];
export const RUNTIME_EXTRAS = ['tsx'];

/** Where Node finds `name` required from the package at lockfile key `from` ('' or a workspace is the root's node_modules). */
export function resolveFrom(lock: Lockfile, from: string, name: string): string | null {
  let dir = from;
  for (;;) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (!dir) return null;
    // node_modules/a/node_modules/b → node_modules/a; node_modules/@s/a → ''; a workspace folder → ''.
    const i = dir.lastIndexOf('/node_modules/');
    dir = i >= 0 ? dir.slice(0, i) : '';
  }
}

/**
 * The lockfile keys (node_modules/… paths) of everything the workspaces and extras need, sorted. A
 * workspace link (node_modules/@console/contract → contract) is listed itself and followed into its
 * folder's dependencies. `has` says whether an optional package is installed (another platform's is not).
 */
export function runtimeModules(lock: Lockfile, o: { workspaces?: string[]; extras?: string[]; has?: (key: string) => boolean } = {}): string[] {
  const has = o.has ?? (() => true);
  const seen = new Set<string>();
  const missing: string[] = [];
  const visit = (key: string) => {
    const pkg = lock.packages[key];
    if (!pkg) return;
    const deps: [string, boolean][] = [
      ...Object.keys(pkg.dependencies ?? {}).map((n): [string, boolean] => [n, false]),
      ...Object.keys(pkg.optionalDependencies ?? {}).map((n): [string, boolean] => [n, true]),
      ...Object.keys(pkg.peerDependencies ?? {}).map((n): [string, boolean] => [n, pkg.peerDependenciesMeta?.[n]?.optional ?? false]),
    ];
    for (const [name, optional] of deps) {
      const at = resolveFrom(lock, key, name);
      if (!at || !has(at)) {
        if (!optional) missing.push(`${name}（${key || '根目录'} 需要）`);
        continue;
      }
      if (seen.has(at)) continue;
      seen.add(at);
      const target = lock.packages[at]!;
      // A workspace link: its folder's dependencies are resolved from the root, as Node does after following the link.
      visit(target.link && target.resolved ? target.resolved : at);
    }
  };
  for (const w of o.workspaces ?? RUNTIME_WORKSPACES) {
    if (!lock.packages[w]) throw new Error(`package-lock.json 中没有工作区 ${w}`);
    visit(w);
  }
  for (const name of o.extras ?? RUNTIME_EXTRAS) {
    const at = resolveFrom(lock, '', name);
    if (!at) throw new Error(`package-lock.json 中没有 ${name}`);
    seen.add(at);
    visit(at);
  }
  if (missing.length) throw new Error(`缺少运行时依赖：${missing.join('、')}`);
  return [...seen].sort();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const lock = JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')) as Lockfile;
  for (const key of runtimeModules(lock, { has: (key) => existsSync(path.join(repo, key)) })) console.log(key);
}
