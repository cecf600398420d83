/**
 * An image the operator registers by reference (镜像登记, modules/operator/registered-images.ts),
 * as the host's images see it: checked to exist before it is recorded — in the operator's registry
 * (REGISTRY_URL) or, without one, in this host's layout — then made ready on this host: pulled into
 * the layout where it comes from the registry, and for an application with a start command of its
 * own, an image on it whose config runs that command (`registered/<id>:1`, no layer of its own),
 * pushed to the registry too so that another host pulls it as it is.
 */
import { OciLayout, type OciImageInfo } from './layout.js';
import { OperatorRegistry, RegistryError, type RegistryOptions } from './registry.js';

export interface CheckedReference {
  /** The name in the registry (relative to REGISTRY_URL) or in the layout. */
  localRef: string;
  /** The manifest digest the registry or the layout gave. */
  digest: string;
  source: 'registry' | 'layout';
}

export class RegistrationRefused extends Error {
  constructor(
    readonly kind: 'missing' | 'foreign' | 'unavailable',
    message: string,
  ) {
    super(message);
  }
}

/** The name of a registered application's image that runs the operator's command. */
export function applicationRef(id: string): string {
  return `registered/${id}:1`;
}

export class ImageRegistrar {
  private layoutOpened: Promise<OciLayout> | null = null;

  constructor(
    private readonly layoutDir: string,
    private readonly registryOptions: RegistryOptions | null,
  ) {}

  get registryUrl(): string | null {
    return this.registryOptions?.url ?? null;
  }

  /** Where the reference's manifest is; refused (RegistrationRefused) where it is nowhere, names another registry, or the registry cannot be asked. */
  async check(reference: string): Promise<CheckedReference> {
    const layout = await this.layout();
    if (!this.registryOptions) {
      const image = await layout.resolve(reference).catch(() => null);
      if (!image) throw new RegistrationRefused('missing', `本机镜像目录中没有 ${reference}（未配置 REGISTRY_URL 时只能登记本机已有的镜像）`);
      return { localRef: reference, digest: image.digest, source: 'layout' };
    }
    const registry = new OperatorRegistry(layout, this.registryOptions);
    let localRef: string;
    try {
      localRef = registry.nameOf(reference);
    } catch (e) {
      throw new RegistrationRefused('foreign', (e as Error).message);
    }
    let digest: string | null;
    try {
      digest = await registry.digestOf(localRef);
    } catch (e) {
      throw new RegistrationRefused('unavailable', e instanceof RegistryError ? e.message : String(e));
    }
    if (!digest) throw new RegistrationRefused('missing', `镜像仓库 ${this.registryOptions.url} 中没有 ${localRef}`);
    return { localRef, digest, source: 'registry' };
  }

  /**
   * Makes a checked image ready on this host: pulled where the layout lacks it; an application with
   * a command gets its own image running it. The name the catalogue offers it by.
   */
  async prepare(o: { id: string; localRef: string; command: string; port: number | null }): Promise<string> {
    const layout = await this.layout();
    const registry = this.registryOptions ? new OperatorRegistry(layout, this.registryOptions) : null;
    const image: OciImageInfo | null = (await layout.resolve(o.localRef)) ?? (registry ? await registry.pull(o.localRef) : null);
    if (!image) throw new Error(`本机镜像目录中没有 ${o.localRef}`);
    if (!o.command) return o.localRef;
    const ref = applicationRef(o.id);
    await layout.importImage({
      ref,
      layers: [],
      base: image.digest,
      config: { cmd: ['/bin/sh', '-c', o.command], ...(o.port ? { exposedPorts: [o.port] } : {}) },
      history: `console: 镜像登记（${o.localRef} 的启动命令）`,
    });
    if (registry) await registry.push(ref);
    return ref;
  }

  /** The name the catalogue offers a registered image by (before prepare has run). */
  offeredRef(o: { id: string; localRef: string; command: string }): string {
    return o.command ? applicationRef(o.id) : o.localRef;
  }

  /** Whether this host's layout has the image now (ready to boot). */
  async present(ref: string): Promise<boolean> {
    return (await (await this.layout()).resolve(ref).catch(() => null)) !== null;
  }

  /** Forgets what registration made on this host: the application's own image, and an image pulled for it from the registry. */
  async forget(o: { id: string; localRef: string; source: 'registry' | 'layout' }): Promise<void> {
    const layout = await this.layout();
    await layout.untag(applicationRef(o.id));
    if (o.source === 'registry') await layout.untag(o.localRef);
  }

  private layout(): Promise<OciLayout> {
    this.layoutOpened ??= OciLayout.open(this.layoutDir);
    this.layoutOpened.catch(() => (this.layoutOpened = null));
    return this.layoutOpened;
  }
}
