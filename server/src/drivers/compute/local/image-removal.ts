/**
 * Dropping a saved image the console deleted (ComputeDriver.removeImage). A layer on a base in the
 * image layout loses its name `saved/<ref>`; its blob stays until the layout's gc, which removes what
 * no named image needs (the base's layers stay: the base and other images name them). An archive of
 * a machine on the host's own system is deleted at once.
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { RemovedImage } from '../types.js';
import { savedRef, type MachineImages } from './machine-image.js';
import { OciLayout } from './oci/layout.js';

export async function removeSavedImage(o: { dir: string; images: MachineImages; imageRef: string; archive: string }): Promise<RemovedImage> {
  if (existsSync(o.archive)) {
    const size = statSync(o.archive).size;
    rmSync(o.archive, { force: true });
    return { removed: true, freedBytes: size, freed: 'now' };
  }
  const info = await o.images.info(o.imageRef, o.archive);
  if (!info) return { removed: false, freedBytes: null, freed: 'gc' };
  // The same folder as MachineImages' layout: index changes queue per folder, so this untag waits for a save under way.
  const layout = await OciLayout.open(path.join(o.dir, 'oci'));
  await layout.untag(savedRef(o.imageRef));
  return { removed: true, freedBytes: info.layers.at(-1)?.sizeBytes ?? null, freed: 'gc' };
}
