/**
 * What a local machine boots from (issue 30 §1): the OCI image its catalogue image names, kept in
 * the driver's image layout (`<dir>/oci`, oci/layout.ts) and unpacked once per host (`<dir>/rootfs`,
 * oci/rootfs.ts). The image's `/usr` is the machine's, read-only; its /etc, /root… seed the
 * machine's system disk (sandbox.ts). A machine's base is the image's manifest digest, taken at
 * create: re-tagging the reference later never changes the system under a machine.
 *
 * A saved image (保存镜像) of such a machine is one layer — the machine's system disk as a tar —
 * on its base in the same layout; an instance made from it boots on the base's rootfs with that
 * layer unpacked onto its own system disk. Machines on the host's own system (no OCI reference)
 * keep saving `images/<ref>.tar` archives, and those keep booting on the host's system.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { MachineSpec, SavedImageInfo } from '../types.js';
import { BASE_DIGEST, BASE_NAME, OciLayout, type OciImageInfo } from './oci/layout.js';
import { RootfsCache } from './oci/rootfs.js';

/** A machine's spec as the local driver keeps it: the catalogue's, and the base it was laid out on. */
export interface LocalSpec extends MachineSpec {
  /** The manifest digest of the image whose rootfs the machine runs on; null or absent: the host's own system. */
  imageDigest?: string | null;
}

/** What a new machine is laid out from. */
export interface BootSource {
  /** The image whose rootfs it runs on (manifest digest); null: the host's own system. */
  digest: string | null;
  /** A saved layer (gzip tar) to unpack onto its system disk; null: its system disk is seeded from the base. */
  layer: string | null;
}

/** Marks a saved image in the layout (the instance it was saved from). */
const SAVED_FROM = 'cn.console.saved-from';

/**
 * Whether the driver's image layout names any image (read at start): machines may then have
 * services the host's own system lacks, from their images.
 */
export function layoutHasImages(driverDir: string): boolean {
  try {
    const index = JSON.parse(readFileSync(path.join(driverDir, 'oci', 'index.json'), 'utf8')) as { manifests?: unknown[] };
    return Array.isArray(index.manifests) && index.manifests.length > 0;
  } catch {
    return false;
  }
}

/** The layout name of a saved image (saveImage's imageRef, the user image's id). */
export function savedRef(imageRef: string): string {
  return `saved/${imageRef}`;
}

export class MachineImages {
  private opened: Promise<{ layout: OciLayout; cache: RootfsCache }> | null = null;
  /** Digests a create or a start is laying out or booting from now: never pruned under it. */
  private readonly inUse = new Map<string, number>();
  /** The prune under way (one at a time). */
  private pruning: Promise<void> = Promise.resolve();

  constructor(
    private readonly dir: string,
    private readonly bwrap = 'bwrap',
  ) {
    // Before any machine runs: a layout `npm run images` made readable holds saved layers too.
    const layoutDir = path.join(dir, 'oci');
    if (existsSync(layoutDir)) chmodSync(layoutDir, 0o700);
  }

  /**
   * The layout and the cache, opened once. The layout holds users' saved layers: the server's
   * alone (machines' uids walk the driver's folder). The unpacked rootfs are operator images, which
   * machines' uids read through their binds.
   */
  private open(): Promise<{ layout: OciLayout; cache: RootfsCache }> {
    this.opened ??= (async () => {
      const layoutDir = path.join(this.dir, 'oci');
      mkdirSync(layoutDir, { recursive: true, mode: 0o700 });
      chmodSync(layoutDir, 0o700);
      const layout = await OciLayout.open(layoutDir);
      return { layout, cache: new RootfsCache(path.join(this.dir, 'rootfs'), layout, this.bwrap) };
    })();
    this.opened.catch(() => (this.opened = null));
    return this.opened;
  }

  /**
   * Where a new machine's system comes from: a saved image in the layout (its base and its layer),
   * or the catalogue image's reference resolved now to its digest. Null digest: the host's system
   * (no reference, or a saved archive of a machine on it — the driver unpacks that itself).
   */
  async sourceOf(spec: MachineSpec): Promise<BootSource> {
    if (spec.userImageRef) {
      const saved = await this.savedImage(spec.userImageRef);
      if (saved) return saved;
      return { digest: null, layer: null };
    }
    if (!spec.imageRef) return { digest: null, layer: null };
    const { layout } = await this.open();
    const image = await layout.resolve(spec.imageRef);
    if (!image) throw new Error(`镜像 ${spec.imageRef} 未在本主机上构建或拉取（运行 npm run images），无法创建实例`);
    return { digest: image.digest, layer: null };
  }

  /** A saved image of the layout: its base and its own (last) layer's blob; null where the layout has none by that name. */
  private async savedImage(imageRef: string): Promise<BootSource | null> {
    const { layout } = await this.open();
    const image = await layout.resolve(savedRef(imageRef));
    if (!image) return null;
    const base = image.annotations[BASE_DIGEST];
    const own = image.layers.at(-1);
    if (!base || !own) throw new Error(`镜像 ${imageRef} 无效：缺少基础镜像或镜像层`);
    await layout.verifyBlob(own.digest);
    return { digest: base, layer: layout.blobPath(own.digest) };
  }

  /** The unpacked rootfs of a base (unpacked now if it is not yet, or was pruned). */
  async rootfs(digest: string): Promise<string> {
    const { cache } = await this.open();
    return cache.ensure(digest);
  }

  /** Runs `work` with `digest` kept from pruning meanwhile (null: nothing to keep). */
  async using<T>(digest: string | null | undefined, work: () => Promise<T>): Promise<T> {
    if (!digest) return work();
    this.inUse.set(digest, (this.inUse.get(digest) ?? 0) + 1);
    try {
      // A prune that began before this counted it may be removing it: unpacked again after.
      await this.pruning;
      return await work();
    } finally {
      const left = (this.inUse.get(digest) ?? 1) - 1;
      if (left) this.inUse.set(digest, left);
      else this.inUse.delete(digest);
    }
  }

  /** Saves a machine's system layer (a tar) as a layer on its base under the saved image's name. */
  async save(imageRef: string, layerTar: string, baseDigest: string, instanceId: string): Promise<OciImageInfo> {
    const { layout } = await this.open();
    return layout.importImage({
      ref: savedRef(imageRef),
      layers: [layerTar],
      base: baseDigest,
      annotations: { [SAVED_FROM]: instanceId },
      history: `console: 保存镜像（实例 ${instanceId}）`,
    });
  }

  /** A saved image as the 镜像 page shows it: from the layout, else an archive of the host's system (`archive`); null: neither. */
  async info(imageRef: string, archive: string): Promise<SavedImageInfo | null> {
    const { layout } = await this.open();
    const image = await layout.resolve(savedRef(imageRef));
    if (image) {
      const digest = image.annotations[BASE_DIGEST];
      return {
        sizeBytes: image.size,
        base: digest ? { ref: image.annotations[BASE_NAME] ?? null, digest } : null,
        layers: image.layers.map((l) => ({ digest: l.digest, sizeBytes: l.size })),
        createdAt: image.created || null,
      };
    }
    if (!existsSync(archive)) return null;
    const st = statSync(archive);
    return { sizeBytes: st.size, base: null, layers: [{ digest: null, sizeBytes: st.size }], createdAt: st.mtime.toISOString() };
  }

  /**
   * Removes the unpacked bases nothing needs any more: not `machines` (the bases of machines not
   * destroyed), not a saved image's base, not one being laid out or booted. The layout keeps every
   * image; only the unpacked copies go (a later machine unpacks again).
   */
  prune(machines: Iterable<string>): Promise<string[]> {
    const run = this.pruning.then(async () => {
      const { layout, cache } = await this.open();
      const keep = new Set<string>([...machines, ...this.inUse.keys()]);
      for (const image of await layout.list()) {
        const base = image.annotations[BASE_DIGEST];
        if (base && image.annotations[SAVED_FROM]) keep.add(base);
      }
      return cache.prune(keep);
    });
    this.pruning = run.then(
      () => {},
      () => {},
    );
    return run;
  }
}
