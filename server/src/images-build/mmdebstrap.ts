/**
 * One image's root file system from Debian's packages: mmdebstrap installs the recipe's pinned
 * packages into a fresh tree and writes it as one uncompressed tar (the image's layer), without
 * /dev and the device nodes it makes there (a machine gets its own /dev from the sandbox).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pinnedPackages, type ResolvedRecipe } from './recipe.js';

export const MMDEBSTRAP = '/usr/bin/mmdebstrap';

/** Where packages come from: Debian's mirror (DEBIAN_MIRROR), its security archive (DEBIAN_SECURITY_MIRROR). */
export interface Mirrors {
  debian: string;
  security: string;
}

export const DEFAULT_MIRRORS: Mirrors = { debian: 'http://deb.debian.org/debian', security: 'http://deb.debian.org/debian-security' };

/** The mirrors the environment names (e.g. https://mirrors.aliyun.com/debian in China), Debian's own otherwise. */
export function mirrorsFrom(env: NodeJS.ProcessEnv): Mirrors {
  return {
    debian: env.DEBIAN_MIRROR?.trim() || DEFAULT_MIRRORS.debian,
    security: env.DEBIAN_SECURITY_MIRROR?.trim() || DEFAULT_MIRRORS.security,
  };
}

/** The suite's three archives as apt lines: a stable release's point updates and security fixes are where pinned versions live. */
export function sourcesOf(suite: string, mirrors: Mirrors): string[] {
  return [`deb ${mirrors.debian} ${suite} main`, `deb ${mirrors.debian} ${suite}-updates main`, `deb ${mirrors.security} ${suite}-security main`];
}

/**
 * Generates the locale and makes it the system's, sets the time zone, leaves out what is the
 * building host's (its resolver and name: a machine gets its own of both) and the essential set's
 * documentation (SLIM_ESSENTIAL). Run by mmdebstrap with the new tree as $1.
 * `pip install` works as on other GPU clouds: without Debian's EXTERNALLY-MANAGED marker (PEP 668)
 * pip installs where it may write — the machine's /usr is read-only, so into /root/.local.
 */
export function customizeScript(r: Pick<ResolvedRecipe, 'locale' | 'timezone'>): string {
  return [
    'set -e',
    `echo '${r.locale} UTF-8' >> "$1/etc/locale.gen"`,
    'chroot "$1" locale-gen',
    `echo 'LANG=${r.locale}' > "$1/etc/default/locale"`,
    `test -e "$1/usr/share/zoneinfo/${r.timezone}"`,
    `ln -sf '/usr/share/zoneinfo/${r.timezone}' "$1/etc/localtime"`,
    `echo '${r.timezone}' > "$1/etc/timezone"`,
    'rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
    'rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',
    ...SLIM_ESSENTIAL,
  ].join('\n');
}

/**
 * Documentation other than licences, manual pages and info files are left out of every package, as
 * Debian's slim container images do: nobody reads them in a machine, and they are a tenth of its size.
 */
const SLIM = ['path-exclude=/usr/share/doc/*', 'path-include=/usr/share/doc/*/copyright', 'path-exclude=/usr/share/man/*', 'path-exclude=/usr/share/info/*'];

/**
 * The exclusions go to dpkg once the essential set is in (`--dpkgopt` would also filter that set's
 * archives through mmtarfilter one by one, minutes on a small machine); what the essential set
 * brought is removed afterwards (SLIM_ESSENTIAL).
 */
export function slimScript(): string {
  return `printf '%s\\n' ${SLIM.map((l) => `'${l}'`).join(' ')} > "$1/etc/dpkg/dpkg.cfg.d/console-slim"`;
}

/** The essential set's documentation and manual pages, as SLIM leaves out of the rest. */
const SLIM_ESSENTIAL = [
  'find "$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete',
  'find "$1/usr/share/doc" -mindepth 1 -type d -empty -delete',
  'rm -rf "$1"/usr/share/man/* "$1"/usr/share/info/*',
];

/** Where mmdebstrapArgs leaves the tar: standard output, which runMmdebstrap points at the file. */
const TARGET = '-';

/** mmdebstrap's command line for a recipe: the tar goes to the file given by runMmdebstrap. */
export function mmdebstrapArgs(r: ResolvedRecipe, o: { mirrors: Mirrors; asRoot: boolean }): string[] {
  return [
    `--variant=${r.variant}`,
    // As root: chroot directly. Otherwise a user namespace (needs /etc/subuid and /etc/subgid for the user).
    `--mode=${o.asRoot ? 'root' : 'unshare'}`,
    '--format=tar',
    '--skip=output/dev',
    `--include=${pinnedPackages(r).join(',')}`,
    `--essential-hook=${slimScript()}`,
    `--customize-hook=${customizeScript(r)}`,
    r.suite,
    TARGET,
    ...sourcesOf(r.suite, o.mirrors),
  ];
}

/** mmdebstrap's steps as it announces them ("I: downloading packages with apt..."), said in Chinese. */
const STEPS: [RegExp, string][] = [
  [/running apt-get update/, '更新软件包索引'],
  [/downloading packages/, '下载软件包'],
  [/extracting archives/, '解开基础软件包'],
  [/installing essential packages/, '安装基础软件包'],
  [/installing remaining packages/, '安装其余软件包'],
  [/running --essential-hook/, '设置精简安装（不装文档）'],
  [/running --customize-hook/, '生成区域与时区，精简'],
  [/cleaning package lists/, '清理软件包缓存'],
  [/creating tarball/, '打包根文件系统'],
  [/success in/, '软件包安装完成'],
];

/** What one line of mmdebstrap's output says: a step (in Chinese), a warning, an error, or nothing worth showing. */
export function describeLine(line: string): { kind: 'step' | 'warning' | 'error'; text: string } | null {
  const m = /^([IWE]): (.*)$/.exec(line.trim());
  if (!m) return null;
  const [, level, text] = m as unknown as [string, string, string];
  if (level === 'E') return { kind: 'error', text: explainError(text) };
  if (level === 'W') return { kind: 'warning', text };
  const step = STEPS.find(([re]) => re.test(text));
  // A hook's line carries its whole script: its start says enough.
  return step ? { kind: 'step', text: `${step[1]}（${text.length > 60 ? `${text.slice(0, 60)}…` : text}）` } : null;
}

/** apt's "Version '1.2' for 'pkg' was not found": the pin is older than the mirror; say how to refresh it. */
function explainError(text: string): string {
  const gone = /Version '([^']+)' for '([^']+)' was not found/.exec(text);
  if (gone)
    return `${gone[2]} 的固定版本 ${gone[1]} 已不在镜像源中（Debian 只保留最新的修订版）：运行 npm run images -- --update-pins 更新配方中的版本后再构建`;
  return text;
}

/**
 * Runs mmdebstrap into `tarFile`; each line worth showing goes to `onLine`. Rejects with
 * mmdebstrap's last error lines when it fails.
 */
export function runMmdebstrap(
  args: string[],
  tarFile: string,
  o: { tmpDir: string; onLine: (l: NonNullable<ReturnType<typeof describeLine>>) => void },
): Promise<void> {
  const out = openSync(tarFile, 'w');
  // TMPDIR: where mmdebstrap lays out the tree before packing it, beside the layout rather than a small /tmp.
  const env = { ...process.env, TMPDIR: o.tmpDir, LC_ALL: 'C.UTF-8' };
  const build = spawn(MMDEBSTRAP, args, { stdio: ['ignore', out, 'pipe'], env });
  closeSync(out);
  const errors: string[] = [];
  createInterface({ input: build.stderr! }).on('line', (line) => {
    const said = describeLine(line);
    if (!said) return;
    if (said.kind === 'error') errors.push(said.text);
    o.onLine(said);
  });
  return new Promise((resolve, reject) => {
    build.once('error', (e) => reject(new Error(`mmdebstrap 无法运行：${e.message}`)));
    build.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`mmdebstrap 失败（退出码 ${code}）${errors.length ? `：\n  ${errors.slice(-5).join('\n  ')}` : ''}`));
    });
  });
}
