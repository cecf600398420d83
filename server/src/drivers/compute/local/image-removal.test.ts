/**
 * Deleting a saved image on a local host (ComputeDriver.removeImage): its name leaves the image
 * layout, so the layout's gc frees its own layer while the base it was made on stays; a saved archive
 * of a machine on the host's system is deleted at once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MachineImages, savedRef } from './machine-image.js';
import { OciLayout } from './oci/layout.js';
import { removeSavedImage } from './image-removal.js';

describe('removing a saved image from the host', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'console-image-removal-'));
  const dir = path.join(root, 'local-compute');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A tar of one file, as a layer. */
  function layerTar(name: string, content: string): string {
    const tree = path.join(root, `tree-${name}`);
    mkdirSync(tree, { recursive: true });
    writeFileSync(path.join(tree, `${name}.txt`), content);
    const tar = path.join(root, `${name}.tar`);
    const r = spawnSync('tar', ['-cf', tar, '-C', tree, '.']);
    expect(r.status, String(r.stderr)).toBe(0);
    return tar;
  }

  it('untags its layer on its base: gc frees that layer and keeps the base', async () => {
    const images = new MachineImages(dir);
    const layout = await OciLayout.open(path.join(dir, 'oci'));
    const base = await layout.importImage({ ref: 'console/base:1', layers: [layerTar('base', '基础镜像')] });
    await images.save('img-1', layerTar('own', '实例的改动'.repeat(1000)), base.digest, 'instance-1');
    const info = await images.info('img-1', path.join(dir, 'images', 'img-1.tar'));
    const own = info!.layers.at(-1)!;

    const r = await removeSavedImage({ dir, images, imageRef: 'img-1', archive: path.join(dir, 'images', 'img-1.tar') });
    expect(r).toEqual({ removed: true, freedBytes: own.sizeBytes, freed: 'gc' });
    expect(await layout.resolve(savedRef('img-1'))).toBeNull();
    expect(existsSync(layout.blobPath(own.digest!))).toBe(true);
    await layout.gc();
    expect(existsSync(layout.blobPath(own.digest!))).toBe(false);
    expect((await layout.resolve('console/base:1'))?.digest).toBe(base.digest);
    expect(existsSync(layout.blobPath(base.layers[0]!.digest))).toBe(true);

    // Nothing left by that name: said so, nothing else touched.
    expect(await removeSavedImage({ dir, images, imageRef: 'img-1', archive: path.join(dir, 'images', 'img-1.tar') })).toEqual({
      removed: false,
      freedBytes: null,
      freed: 'gc',
    });
  });

  it('deletes the archive of a machine on the host’s own system at once', async () => {
    const images = new MachineImages(dir);
    const archive = path.join(dir, 'images', 'img-2.tar');
    mkdirSync(path.dirname(archive), { recursive: true });
    writeFileSync(archive, Buffer.alloc(4096, 1));
    expect(await removeSavedImage({ dir, images, imageRef: 'img-2', archive })).toEqual({ removed: true, freedBytes: 4096, freed: 'now' });
    expect(existsSync(archive)).toBe(false);
  });
});
