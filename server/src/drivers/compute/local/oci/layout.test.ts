/**
 * The OCI image layout (layout.ts): images on a base share its blobs, names resolve and move, gc
 * frees exactly what no named image needs, and a layout or blob that is not what it says is refused.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { BASE_DIGEST, BASE_NAME, OciLayout, REF_NAME } from './layout.js';

const work = mkdtempSync(path.join(tmpdir(), 'oci-layout-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let tars = 0;
/** A tar file of these files (path → content). */
function tarOf(files: Record<string, string>, dir = work): string {
  const root = path.join(dir, `tree-${++tars}`);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  const tar = `${root}.tar`;
  execFileSync('tar', ['-c', '-f', tar, '-C', root, '--sort=name', '.']);
  return tar;
}

async function freshLayout(): Promise<OciLayout> {
  return OciLayout.open(mkdtempSync(path.join(work, 'layout-')));
}

function blobCount(layout: OciLayout): number {
  return execFileSync('ls', [path.join(layout.dir, 'blobs', 'sha256')], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean).length;
}

describe('OCI image layout', () => {
  it('is a layout other tools read: oci-layout, an index, blobs by digest', async () => {
    const layout = await freshLayout();
    expect(JSON.parse(readFileSync(path.join(layout.dir, 'oci-layout'), 'utf8'))).toEqual({ imageLayoutVersion: '1.0.0' });
    const image = await layout.importImage({ ref: 'console/one:1', layers: [tarOf({ 'etc/os-release': 'ID=one\n' })] });
    const index = JSON.parse(readFileSync(path.join(layout.dir, 'index.json'), 'utf8'));
    expect(index.schemaVersion).toBe(2);
    expect(index.manifests).toEqual([expect.objectContaining({ digest: image.digest, annotations: { [REF_NAME]: 'console/one:1' } })]);
    const manifest = readFileSync(layout.blobPath(image.digest));
    expect(`sha256:${createHash('sha256').update(manifest).digest('hex')}`).toBe(image.digest);
    // The layer is the gzipped tar; its diff id the tar's own digest.
    const tar = gunzipSync(readFileSync(layout.blobPath(image.layers[0]!.digest)));
    expect(image.layers[0]!.diffId).toBe(`sha256:${createHash('sha256').update(tar).digest('hex')}`);
    expect(image.layers[0]!.size).toBe(statSync(layout.blobPath(image.layers[0]!.digest)).size);
    expect(image.config).toEqual({ env: [expect.stringMatching(/^PATH=/)], cmd: ['/bin/bash'], workingDir: '/', exposedPorts: [] });
    expect(Date.parse(image.created)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('builds images on a shared base, resolves them by name and digest, and moves a name to a new image', async () => {
    const layout = await freshLayout();
    const base = await layout.importImage({
      ref: 'console/base:12',
      layers: [tarOf({ 'etc/os-release': 'ID=base\n' })],
      config: { exposedPorts: [8888], env: ['PATH=/usr/bin', 'LANG=zh_CN.UTF-8'] },
    });
    const app = await layout.importImage({
      ref: 'console/app:1',
      base: 'console/base:12',
      layers: [tarOf({ 'opt/app': 'v1' })],
      config: { cmd: ['/opt/app'] },
    });
    const other = await layout.importImage({ ref: 'console/other:1', base: base.digest, layers: [tarOf({ 'opt/other': 'x' })] });

    expect(app.layers).toHaveLength(2);
    expect(app.layers[0]).toEqual(base.layers[0]);
    expect(other.layers[0]).toEqual(base.layers[0]);
    expect(app.annotations).toEqual({ [BASE_DIGEST]: base.digest, [BASE_NAME]: 'console/base:12' });
    // The base's config carries over where the new image does not say otherwise.
    expect(app.config).toEqual({ env: ['PATH=/usr/bin', 'LANG=zh_CN.UTF-8'], cmd: ['/opt/app'], workingDir: '/', exposedPorts: [8888] });
    const configSize = JSON.parse(readFileSync(layout.blobPath(app.digest), 'utf8')).config.size;
    expect(app.size).toBe(configSize + app.layers[0]!.size + app.layers[1]!.size);

    expect(await layout.resolve('console/app:1')).toEqual(app);
    expect(await layout.resolve(app.digest)).toEqual(app);
    expect(await layout.resolve('console/none:1')).toBeNull();
    expect(await layout.resolve(`sha256:${'0'.repeat(64)}`)).toBeNull();

    const newer = await layout.importImage({ ref: 'console/app:1', base: 'console/base:12', layers: [tarOf({ 'opt/app': 'v2' })] });
    expect(newer.digest).not.toBe(app.digest);
    expect((await layout.resolve('console/app:1'))?.digest).toBe(newer.digest);
    expect((await layout.list()).map((i) => i.ref)).toEqual(['console/base:12', 'console/other:1', 'console/app:1']);
    // Unnamed now, still there by digest until gc.
    expect((await layout.resolve(app.digest))?.ref).toBe('');
  });

  it('untag then gc frees only the blobs no named image needs', async () => {
    const layout = await freshLayout();
    const base = await layout.importImage({ ref: 'console/base:12', layers: [tarOf({ 'etc/os-release': 'ID=base\n' })] });
    const keep = await layout.importImage({ ref: 'console/keep:1', base: base.ref, layers: [tarOf({ 'opt/keep': 'k' })] });
    const drop = await layout.importImage({ ref: 'console/drop:1', base: base.ref, layers: [tarOf({ 'opt/drop': 'd'.repeat(5000) })] });
    expect(await layout.gc()).toEqual({ removedBlobs: 0, freedBytes: 0, untagged: [] });
    const before = blobCount(layout);

    await layout.untag('console/drop:1');
    await layout.untag('console/base:12');
    const dropManifestSize = statSync(layout.blobPath(drop.digest)).size;
    // The dropped image's manifest, config and own layer; the base's layer stays for `keep`, the base's manifest and config go.
    const baseOwn = statSync(layout.blobPath(base.digest)).size + (base.size - base.layers[0]!.size);
    const freed = await layout.gc();
    expect(freed).toEqual({ removedBlobs: 5, freedBytes: dropManifestSize + drop.size - drop.layers[0]!.size + baseOwn, untagged: [] });
    expect(blobCount(layout)).toBe(before - 5);
    expect(await layout.resolve('console/keep:1')).toEqual(keep);
    for (const l of keep.layers) await layout.verifyBlob(l.digest);
    expect(existsSync(layout.blobPath(drop.layers[1]!.digest))).toBe(false);
    expect(await layout.resolve(drop.digest)).toBeNull();
  });

  it('gc with a keep rule drops the names it refuses and their blobs, in one turn', async () => {
    const layout = await freshLayout();
    const base = await layout.importImage({ ref: 'console/base:12', layers: [tarOf({ 'etc/os-release': 'ID=base\n' })] });
    const kept = await layout.importImage({ ref: 'saved/kept', base: base.ref, layers: [tarOf({ 'root/k': 'k' })] });
    const gone = await layout.importImage({ ref: 'saved/deleted', base: base.ref, layers: [tarOf({ 'root/d': 'd' })] });
    const result = await layout.gc((ref) => ref !== 'saved/deleted');
    expect(result.untagged).toEqual(['saved/deleted']);
    expect((await layout.list()).map((i) => i.ref)).toEqual(['console/base:12', 'saved/kept']);
    expect(existsSync(layout.blobPath(gone.layers[1]!.digest))).toBe(false);
    for (const l of kept.layers) await layout.verifyBlob(l.digest);
  });

  it('waits while another process holds the layout, and takes a lock its dead owner left', async () => {
    const layout = await freshLayout();
    await layout.importImage({ ref: 'console/a:1', layers: [tarOf({ a: 'a' })] });
    const lock = path.join(layout.dir, '.lock');
    // Another console process on this DATA_DIR, in the middle of an import.
    const other = spawn('sleep', ['600'], { stdio: 'ignore' });
    writeFileSync(lock, `${hostname()} ${other.pid} ${Date.now()}\n`);
    let done = false;
    const gc = layout.gc(() => false).then((r) => ((done = true), r));
    await new Promise((r) => setTimeout(r, 500));
    expect(done).toBe(false);
    expect((await layout.list()).map((i) => i.ref)).toEqual(['console/a:1']);
    const exited = new Promise((r) => other.once('exit', r));
    other.kill();
    await exited;
    // Its owner gone, the lock is taken and the gc runs.
    expect((await gc).untagged).toEqual(['console/a:1']);
    expect(existsSync(lock)).toBe(false);
  });

  it('takes a lock nobody has touched for minutes, though its pid now belongs to a live process', async () => {
    const layout = await freshLayout();
    const lock = path.join(layout.dir, '.lock');
    writeFileSync(lock, `${hostname()} ${process.pid} 0\n`);
    const longAgo = new Date(Date.now() - 5 * 60_000);
    utimesSync(lock, longAgo, longAgo);
    expect(await layout.gc()).toEqual({ removedBlobs: 0, freedBytes: 0, untagged: [] });
    expect(existsSync(lock)).toBe(false);
  });

  it('gc removes what a crashed pull or push left a day ago, not a transfer under way', async () => {
    const layout = await freshLayout();
    const stale = path.join(layout.dir, '.pull-stale');
    const current = path.join(layout.dir, '.push-current');
    mkdirSync(path.join(stale, 'blobs'), { recursive: true });
    mkdirSync(current);
    const dayAgo = new Date(Date.now() - 25 * 3600_000);
    utimesSync(stale, dayAgo, dayAgo);
    await layout.gc();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(current)).toBe(true);
  });

  it('serialises concurrent imports: no name is lost from the index', async () => {
    const layout = await freshLayout();
    const layer = tarOf({ a: 'a' });
    const images = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => layout.importImage({ ref: `console/n:${n}`, layers: [layer] })));
    const listed = await layout.list();
    expect(listed.map((i) => i.ref).sort()).toEqual(images.map((i) => i.ref).sort());
    // A second handle on the same folder shares the queue.
    const again = await OciLayout.open(layout.dir);
    await Promise.all([again.importImage({ ref: 'console/m:1', layers: [layer] }), layout.importImage({ ref: 'console/m:2', layers: [layer] })]);
    expect(await again.list()).toHaveLength(8);
  });

  it('refuses a malformed layout, a corrupted blob and a bad name', async () => {
    const bad = mkdtempSync(path.join(work, 'bad-'));
    writeFileSync(path.join(bad, 'index.json'), '{not json');
    await expect(OciLayout.open(bad)).rejects.toThrow(/OCI 镜像目录无效/);
    writeFileSync(path.join(bad, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ digest: 'sha256:../../etc', size: 1, mediaType: 'x' }] }));
    await expect(OciLayout.open(bad)).rejects.toThrow(/无效的描述符/);
    const other = mkdtempSync(path.join(work, 'bad-'));
    writeFileSync(path.join(other, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '9.0.0' }));
    await expect(OciLayout.open(other)).rejects.toThrow(/imageLayoutVersion/);

    const layout = await freshLayout();
    const image = await layout.importImage({ ref: 'console/c:1', layers: [tarOf({ f: 'content' })] });
    writeFileSync(layout.blobPath(image.layers[0]!.digest), 'not the layer');
    await expect(layout.verifyBlob(image.layers[0]!.digest)).rejects.toThrow(/镜像数据损坏/);
    writeFileSync(layout.blobPath(image.digest), '{"schemaVersion":2}');
    await expect(layout.resolve('console/c:1')).rejects.toThrow(/镜像数据损坏/);

    await expect(layout.importImage({ ref: '../escape', layers: [] })).rejects.toThrow(/无效的镜像名/);
    expect(() => layout.blobPath('sha256:../../etc/passwd')).toThrow(/无效的镜像摘要/);
    await expect(layout.importImage({ ref: 'console/d:1', base: 'console/missing:1', layers: [] })).rejects.toThrow(/基础镜像/);
  });
});
