/**
 * Unpacked images (rootfs.ts) on real bubblewrap: whiteouts and opaque folders across layers, one
 * unpacking for concurrent callers, prune, refusals (a corrupted blob, a name leaving the root, a
 * link leading out of it), and the tests' tiny image booting in a sandbox.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lacks } from '../../../../../test/host-packages.js';
import { buildTinyImage } from '../../../../../test/tiny-image.js';
import { OciLayout } from './layout.js';
import { RootfsCache, whiteoutsOf } from './rootfs.js';

const work = mkdtempSync(path.join(tmpdir(), 'oci-rootfs-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Entry = string | { link: string };
let trees = 0;
/** A tar file of these entries (path → content, or a symbolic link). */
function tarOf(entries: Record<string, Entry>, ...tarOptions: string[]): string {
  const root = path.join(work, `tree-${++trees}`);
  mkdirSync(root);
  for (const [name, entry] of Object.entries(entries)) {
    const at = path.join(root, name);
    mkdirSync(path.dirname(at), { recursive: true });
    if (typeof entry === 'string') writeFileSync(at, entry);
    else symlinkSync(entry.link, at);
  }
  const tar = `${root}.tar`;
  execFileSync('tar', ['-c', '-f', tar, '-C', root, '--sort=name', ...tarOptions, '.']);
  return tar;
}

describe('whiteoutsOf', () => {
  it('reads whiteouts and opaque markers, opaque folders first', () => {
    expect(whiteoutsOf(['./', './a/', './a/.wh.gone', './b/.wh..wh..opq', './b/new', 'c/.wh.x y', '.wh..wh..opq'])).toEqual([
      { kind: 'empty', path: 'b' },
      { kind: 'empty', path: '' },
      { kind: 'rm', path: 'a/gone' },
      { kind: 'rm', path: 'c/x y' },
    ]);
  });
});

describe.skipIf(lacks('bubblewrap'))('unpacked images', () => {
  let layout: OciLayout;
  let cache: RootfsCache;
  beforeAll(async () => {
    layout = await OciLayout.open(path.join(work, 'oci'));
    cache = new RootfsCache(path.join(work, 'rootfs'), layout);
  });

  it('applies layers in order with whiteouts and opaque folders', async () => {
    const lower = tarOf({ 'a/keep': 'k', 'a/gone': 'g', 'a/dir/deep': 'd', 'b/x': 'x', 'b/y': 'y', 'c/old': 'o', 'etc/os-release': 'ID=lower\n' });
    const upper = tarOf({ 'a/.wh.gone': '', 'a/.wh.dir': '', 'b/.wh..wh..opq': '', 'b/new': 'n', 'c/new': 'n2', 'etc/os-release': 'ID=upper\n' });
    const image = await layout.importImage({ ref: 'test/whiteouts:1', layers: [lower, upper] });
    const root = await cache.ensure(image.digest);
    expect(root).toBe(path.join(work, 'rootfs', image.digest.slice('sha256:'.length)));
    expect(readdirSync(path.join(root, 'a'))).toEqual(['keep']);
    expect(readdirSync(path.join(root, 'b'))).toEqual(['new']);
    expect(readdirSync(path.join(root, 'c')).sort()).toEqual(['new', 'old']);
    expect(readFileSync(path.join(root, 'etc/os-release'), 'utf8')).toBe('ID=upper\n');
    expect(cache.has(image.digest)).toBe(true);
    expect(statSync(root).mode & 0o777).toBe(0o755);
    expect(statSync(path.join(work, 'rootfs')).mode & 0o777).toBe(0o755);
  });

  it('keeps the image’s owners (as root)', async () => {
    const image = await layout.importImage({ ref: 'test/owners:1', layers: [tarOf({ 'home/u/f': 'f' }, '--owner=1234', '--group=4321', '--numeric-owner')] });
    const st = statSync(path.join(await cache.ensure(image.digest), 'home/u/f'));
    const root = process.getuid?.() === 0;
    expect([st.uid, st.gid]).toEqual(root ? [1234, 4321] : [process.getuid?.(), process.getgid?.()]);
  });

  it('unpacks once for concurrent callers, and prune keeps the given images', async () => {
    const a = await layout.importImage({ ref: 'test/a:1', layers: [tarOf({ 'a/1': '1' }), tarOf({ 'a/2': '2' })] });
    const b = await layout.importImage({ ref: 'test/b:1', layers: [tarOf({ 'b/1': '1' })] });
    const verify = vi.spyOn(layout, 'verifyBlob');
    const roots = await Promise.all([cache.ensure(a.digest), cache.ensure(a.digest), cache.ensure(a.digest)]);
    expect(new Set(roots).size).toBe(1);
    expect(verify).toHaveBeenCalledTimes(2); // one unpacking: each of its two layers checked once
    verify.mockRestore();
    await cache.ensure(b.digest);
    const removed = await cache.prune(new Set([a.digest]));
    expect(removed).toContain(b.digest);
    expect(removed).not.toContain(a.digest);
    expect(cache.has(a.digest)).toBe(true);
    expect(cache.has(b.digest)).toBe(false);
    expect(existsSync(path.join(roots[0]!, 'a/2'))).toBe(true);
  });

  it('refuses a corrupted layer and leaves nothing behind', async () => {
    const image = await layout.importImage({ ref: 'test/corrupt:1', layers: [tarOf({ f: 'content' })] });
    writeFileSync(layout.blobPath(image.layers[0]!.digest), 'garbage');
    await expect(cache.ensure(image.digest)).rejects.toThrow(/镜像数据损坏/);
    expect(cache.has(image.digest)).toBe(false);
    expect(readdirSync(path.join(work, 'rootfs')).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('refuses a member name leaving the root', async () => {
    const tar = path.join(work, 'dotdot.tar');
    execFileSync('python3', [
      '-c',
      `import tarfile, io\nt = tarfile.open(${JSON.stringify(tar)}, 'w')\ni = tarfile.TarInfo('a/../../escaped')\ni.size = 1\nt.addfile(i, io.BytesIO(b'x'))\nt.close()`,
    ]);
    const image = await layout.importImage({ ref: 'test/dotdot:1', layers: [tar] });
    await expect(cache.ensure(image.digest)).rejects.toThrow(/越出根目录/);
  });

  it('never writes through a link of the image to the host', async () => {
    const outside = mkdtempSync(path.join(work, 'host-'));
    const lower = tarOf({ out: { link: outside } });
    // The file alone, without an entry for its folder (which would replace the link): tar then writes through the link.
    const upperTree = path.join(work, 'upper-link');
    mkdirSync(path.join(upperTree, 'out'), { recursive: true });
    writeFileSync(path.join(upperTree, 'out/planted'), 'x');
    const upper = path.join(work, 'upper-link.tar');
    execFileSync('tar', ['-c', '-f', upper, '-C', upperTree, 'out/planted']);
    const image = await layout.importImage({ ref: 'test/link:1', layers: [lower, upper] });
    await cache.ensure(image.digest).catch(() => {}); // refused inside the sandbox, or written there: never on the host
    expect(readdirSync(outside)).toEqual([]);
  });

  it('boots the tiny image in a sandbox', async () => {
    const image = await buildTinyImage(layout);
    const root = await cache.ensure(image.digest);
    const links = ['bin', 'sbin', 'lib', 'lib64'].flatMap((l) => ['--symlink', `usr/${l}`, `/${l}`]);
    expect(lstatSync(path.join(root, 'bin')).isSymbolicLink()).toBe(true);
    const run = spawnSync(
      'bwrap',
      [
        '--unshare-all',
        '--die-with-parent',
        '--clearenv',
        '--setenv',
        'PATH',
        '/usr/bin:/bin',
        '--ro-bind',
        path.join(root, 'usr'),
        '/usr',
        ...links,
        '--ro-bind',
        path.join(root, 'etc'),
        '/etc',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '/bin/sh',
        '-c',
        "cat /etc/os-release; id -un; ls / | tr '\\n' ' '; echo; bash -c 'echo bash $BASH_VERSION'",
      ],
      { encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('PRETTY_NAME="Console Tiny 1"');
    expect(run.stdout).toContain('\nroot\n');
    expect(run.stdout).toContain('bash 5');
    expect(existsSync(path.join(root, 'usr/bin/python3'))).toBe(false);
    expect(existsSync(path.join(root, 'etc/ld.so.cache'))).toBe(true);
    // Built once per process: the second import reuses the layer.
    const again = await buildTinyImage(layout, 'console/tiny:2');
    expect(again.layers).toEqual(image.layers);
  });
});
