/**
 * The image the tests boot: a merged-/usr root of a few dozen of the host's programs (what a
 * sandbox's init, a shell and the tests' commands need) with their shared libraries and the loader,
 * a console-tiny /etc/os-release, and no Python (so a machine's notebook and relay are absent). It
 * builds in a second or two, once per test process; each call imports it into the given layout.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { OciImageInfo, OciLayout } from '../src/drivers/compute/local/oci/layout.js';

/** The programs copied from the host, found in its /usr/bin or /usr/sbin. */
export const TINY_PROGRAMS = [
  'bash',
  'dash',
  'setpriv',
  'sleep',
  'env',
  'id',
  'cat',
  'ls',
  'echo',
  'mkdir',
  'rm',
  'touch',
  'head',
  'tail',
  'tr',
  'stat',
  'df',
  'uname',
  'hostname',
  'grep',
  'sed',
] as const;

export const TINY_OS_RELEASE = 'ID=console-tiny\nNAME="Console Tiny"\nVERSION_ID=1\nPRETTY_NAME="Console Tiny 1"\n';

let built: Promise<string> | null = null;

/** The tiny image as `ref` in `layout` (the same layer each time within a process; a new manifest each call). */
export async function buildTinyImage(layout: OciLayout, ref = 'console/tiny:1'): Promise<OciImageInfo> {
  built ??= Promise.resolve().then(buildTinyTar);
  return layout.importImage({
    ref,
    layers: [await built],
    config: { env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], cmd: ['/bin/bash'], workingDir: '/root' },
    history: 'test/tiny-image.ts',
  });
}

/** Lays out the root in a temporary folder and packs it into a tar there (removed when the process ends). */
function buildTinyTar(): string {
  const work = mkdtempSync(path.join(os.tmpdir(), 'tiny-image-'));
  process.once('exit', () => rmSync(work, { recursive: true, force: true }));
  const root = path.join(work, 'root');
  layOutTinyRoot(root);
  const tar = path.join(work, 'layer.tar');
  execFileSync('tar', ['-c', '-f', tar, '-C', root, '--numeric-owner', '--owner=0', '--group=0', '--sort=name', '--mtime=@0', '.']);
  return tar;
}

export function layOutTinyRoot(root: string): void {
  for (const dir of ['usr/bin', 'usr/sbin', 'usr/lib', 'usr/lib64', 'etc', 'home', 'opt', 'var', 'srv', 'run', 'proc', 'dev']) {
    mkdirSync(path.join(root, dir), { recursive: true, mode: 0o755 });
  }
  mkdirSync(path.join(root, 'root'), { mode: 0o700 });
  mkdirSync(path.join(root, 'tmp'));
  chmodSync(path.join(root, 'tmp'), 0o1777);
  for (const dir of ['bin', 'sbin', 'lib', 'lib64']) symlinkSync(`usr/${dir}`, path.join(root, dir));
  const programs = TINY_PROGRAMS.map(hostProgram);
  for (const program of programs) copyInto(root, program, path.join('usr', path.relative('/usr', program)));
  const libraries = new Set(sharedLibraries(programs));
  symlinkSync('dash', path.join(root, 'usr/bin/sh'));
  // Each library under the name the loader looks for (ldd's path, a link on the host resolved to its file).
  for (const lib of libraries) copyInto(root, lib, underUsr(lib));
  writeEtc(root, [...new Set([...libraries].map((lib) => `/${path.dirname(underUsr(lib))}`))]);
  execFileSync('ldconfig', ['-r', root], { stdio: ['ignore', 'ignore', 'pipe'] });
}

function hostProgram(name: string): string {
  const found = ['/usr/bin', '/usr/sbin', '/bin', '/sbin'].map((d) => path.join(d, name)).find((p) => existsSync(p));
  if (!found) throw new Error(`tiny image: the host has no ${name}`);
  // /bin/x on a host without merged /usr: inside, everything is under /usr.
  const real = realpathSync(found);
  return real.startsWith('/usr/') ? real : path.join('/usr/bin', path.basename(real));
}

/** The shared libraries and the loader `ldd` names for the programs (absolute paths on the host; one ldd for all). */
function sharedLibraries(programs: string[]): string[] {
  const out = execFileSync('ldd', programs, { encoding: 'utf8' });
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]!);
  }
  return libs;
}

/** /lib/x/libc.so.6 → usr/lib/x/libc.so.6 (lib, lib64 are links into usr inside). */
function underUsr(file: string): string {
  const rel = file.replace(/^\/+/, '');
  return rel.startsWith('usr/') ? rel : path.join('usr', rel);
}

function copyInto(root: string, from: string, rel: string): void {
  const to = path.join(root, rel);
  if (existsSync(to)) return;
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(realpathSync(from), to);
  chmodSync(to, 0o755);
}

function writeEtc(root: string, libraryDirs: string[]): void {
  const etc = path.join(root, 'etc');
  writeFileSync(path.join(etc, 'os-release'), TINY_OS_RELEASE);
  writeFileSync(path.join(etc, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n');
  writeFileSync(path.join(etc, 'group'), 'root:x:0:\nnogroup:x:65534:\n');
  writeFileSync(path.join(etc, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  writeFileSync(path.join(etc, 'hostname'), 'tiny\n');
  mkdirSync(path.join(etc, 'ld.so.conf.d'));
  writeFileSync(path.join(etc, 'ld.so.conf'), 'include /etc/ld.so.conf.d/*.conf\n');
  // The folders the libraries went to (Debian's multiarch /usr/lib/x86_64-linux-gnu): ldconfig's cache lists them.
  writeFileSync(path.join(etc, 'ld.so.conf.d', 'libraries.conf'), `${libraryDirs.join('\n')}\n`);
}
