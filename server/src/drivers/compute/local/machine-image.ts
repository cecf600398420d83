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
 *
 * With the operator's registry (REGISTRY_URL, oci/registry.ts) a saved image is pushed there once
 * made, with its base by digest, and an image this host's layout lacks (a saved image made on
 * another host, an image the operator registered) is pulled before a machine is laid out on it:
 * once per host, as concurrent creates share one pull and the layout keeps it by digest after.
 * gc() removes what nothing needs any more: names of saved images deleted, their blobs, and the
 * unpacked bases no machine runs on.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { MachineSpec, SavedImageInfo } from '../types.js';
import { BASE_DIGEST, BASE_NAME, OciLayout, type OciImageInfo } from './oci/layout.js';
import { OperatorRegistry, type RegistryOptions } from './oci/registry.js';
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

const SAVED_PREFIX = 'saved/';

/** The name a base is pushed and pulled by: its repository at its digest (`console/base@sha256:…`), whatever its tag now names. */
export function byDigest(name: string, digest: string): string {
  const repository = name.replace(/@sha256:[a-f0-9]{64}$/, '').replace(/:[\w][\w.-]*$/, '');
  return `${repository}@${digest}`;
}

/** What a gc removed: names, blobs (and their bytes), unpacked bases. */
export interface GcResult {
  untagged: string[];
  removedBlobs: number;
  freedBytes: number;
  removedRootfs: string[];
}

export class MachineImages {
  private opened: Promise<{ layout: OciLayout; cache: RootfsCache }> | null = null;
  /** Digests a create or a start is laying out or booting from now: never pruned under it. */
  private readonly inUse = new Map<string, number>();
  /** The prune under way (one at a time). */
  private pruning: Promise<void> = Promise.resolve();

  /** The pulls under way, by name: concurrent creates on one image share one. */
  private readonly pulls = new Map<string, Promise<OciImageInfo>>();

  constructor(
    private readonly dir: string,
    private readonly bwrap = 'bwrap',
    /** REGISTRY_URL and its login; null: images live in this host's layout only. */
    private readonly registryOptions: RegistryOptions | null = null,
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
    const image = await this.present(spec.imageRef);
    if (!image) throw new Error(`镜像 ${spec.imageRef} 未在本主机上构建或拉取（运行 npm run images，或配置 REGISTRY_URL），无法创建实例`);
    return { digest: image.digest, layer: null };
  }

  /** The registry where REGISTRY_URL is set. */
  private async registry(): Promise<OperatorRegistry | null> {
    if (!this.registryOptions) return null;
    const { layout } = await this.open();
    return new OperatorRegistry(layout, this.registryOptions);
  }

  /** The layout's image `ref`, pulled from the registry first where this host lacks it; null where neither has it. */
  private async present(ref: string): Promise<OciImageInfo | null> {
    const { layout } = await this.open();
    const here = await layout.resolve(ref);
    if (here) return here;
    const registry = await this.registry();
    if (!registry) return null;
    let pull = this.pulls.get(ref);
    if (!pull) {
      pull = (async () => ((await registry.exists(ref)) ? registry.pull(ref) : null))()
        .then((image) => image ?? Promise.reject(new MissingImage(ref)))
        .finally(() => this.pulls.delete(ref));
      this.pulls.set(ref, pull);
    }
    return pull.catch((e: unknown) => {
      if (e instanceof MissingImage) return null;
      throw e;
    });
  }

  /** A saved image (pulled where this host lacks it): its base and its own (last) layer's blob; null where there is none by that name. */
  private async savedImage(imageRef: string): Promise<BootSource | null> {
    const image = await this.present(savedRef(imageRef));
    if (!image) return null;
    const { layout } = await this.open();
    const base = image.annotations[BASE_DIGEST];
    const own = image.layers.at(-1);
    if (!base || !own) throw new Error(`镜像 ${imageRef} 无效：缺少基础镜像或镜像层`);
    // Made on another host: its base comes by digest from the registry, where the save pushed it.
    if (!(await layout.resolve(base))) {
      const name = image.annotations[BASE_NAME];
      if (!name || !(await this.present(byDigest(name, base)))) throw new Error(`镜像 ${imageRef} 的基础镜像 ${name ?? base} 不在本主机，镜像仓库中也没有`);
    }
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

  /**
   * Saves a machine's system layer (a tar) as a layer on its base under the saved image's name;
   * with a registry, pushes it there, and its base by digest, so that another host can boot it.
   */
  async save(imageRef: string, layerTar: string, baseDigest: string, instanceId: string): Promise<OciImageInfo> {
    const { layout } = await this.open();
    const image = await layout.importImage({
      ref: savedRef(imageRef),
      layers: [layerTar],
      base: baseDigest,
      annotations: { [SAVED_FROM]: instanceId },
      history: `console: 保存镜像（实例 ${instanceId}）`,
    });
    const registry = await this.registry();
    if (registry) {
      const baseName = image.annotations[BASE_NAME];
      if (baseName) {
        const pinned = byDigest(baseName, baseDigest);
        if (!(await registry.exists(pinned))) await registry.pushAs(baseDigest, pinned);
      }
      await registry.push(image.ref);
    }
    return image;
  }

  /**
   * Removes what nothing needs (the gc job): the names of saved images `savedKept` no longer
   * lists (deleted ones) and every blob only they needed, then the unpacked bases of no machine
   * (`machines`: the bases of machines not destroyed) and no saved image. Other names (stock,
   * registered, pulled images) stay: the catalogue may offer them.
   */
  async gc(savedKept: ReadonlySet<string>, machines: Iterable<string>): Promise<GcResult> {
    const { layout } = await this.open();
    const blobs = await layout.gc((ref) => !ref.startsWith(SAVED_PREFIX) || savedKept.has(ref.slice(SAVED_PREFIX.length)));
    const removedRootfs = await this.prune(machines);
    return { untagged: blobs.untagged, removedBlobs: blobs.removedBlobs, freedBytes: blobs.freedBytes, removedRootfs };
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

class MissingImage extends Error {
  constructor(ref: string) {
    super(`镜像仓库中没有 ${ref}`);
  }
}
