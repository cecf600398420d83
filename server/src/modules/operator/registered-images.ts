/**
 * 镜像登记 (issue 30 §1): the operator registers an image by reference — a CUDA PyTorch, an SD
 * WebUI, a ComfyUI image from their registry — with its kind, the categories it serves and, for an
 * application, its port and start command. The manifest is checked to exist before anything is
 * recorded (oci/registration.ts: REGISTRY_URL's registry, or this host's layout). A registered image
 * is merged into every catalogue snapshot (CatalogueStore.mergeEntries) as a catalogue image, an
 * application's also as a 镜像应用, offered like the stock ones where the host has it; the
 * catalogue's version is bumped on each change, so every server process sees it within seconds.
 */
import { asc, eq } from 'drizzle-orm';
import type { OperatorImage, OperatorImageList, operatorImageRegisterSchema } from '@console/contract';
import type { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { RegistrationRefused, type ImageRegistrar } from '../../drivers/compute/local/oci/registration.js';
import { AppError } from '../../http/errors.js';
import { bumpVersion, type ApplicationRow, type CatalogueStore, type ExtraEntries, type ImageRow } from '../catalogue/index.js';
import { operatorImages } from './schema.js';

type Row = typeof operatorImages.$inferSelect;
type Register = z.output<typeof operatorImageRegisterSchema>;

export interface RegisteredImagesDeps {
  db: Db;
  clock: Clock;
  catalogue: Pick<CatalogueStore, 'mergeEntries' | 'invalidateAll'>;
  registrar: ImageRegistrar;
  /** How many instances not released use each catalogue image or application (instances/image-use.ts). */
  inUse: (ids: readonly string[]) => Promise<Map<string, number>>;
  log: (message: string) => void;
}

/** How long a failed preparation waits before the list tries it again. */
const RETRY_MS = 60_000;

/** Sorted after the catalogue file's entries. */
const SORT = 10_000;

export class RegisteredImages {
  /** Preparations under way in this process (a pull of gigabytes runs after the answer). */
  private readonly preparing = new Map<string, Promise<void>>();
  /** The last failed preparation of each registration, and when (tried again RETRY_MS later). */
  private readonly failed = new Map<string, { why: string; at: number }>();

  constructor(private readonly deps: RegisteredImagesDeps) {
    deps.catalogue.mergeEntries(() => this.catalogueEntries());
  }

  /**
   * Makes ready on this host what is registered and not yet here (a pull a restart cut short, one
   * that failed a while ago): at start, and each time the operator reads the list.
   */
  async resume(): Promise<void> {
    const rows = await this.deps.db.select().from(operatorImages);
    await this.retry(rows);
  }

  async list(): Promise<OperatorImageList> {
    const rows = await this.deps.db.select().from(operatorImages).orderBy(asc(operatorImages.createdAt), asc(operatorImages.id));
    await this.retry(rows);
    const used = await this.deps.inUse(rows.map((r) => r.id));
    const items: OperatorImage[] = [];
    for (const r of rows) items.push(await this.view(r, used.get(r.id) ?? 0));
    return { items, registry: this.deps.registrar.registryUrl };
  }

  /** Checks the reference exists, records it and makes it ready on this host (in the background where it is pulled). */
  async register(body: Register, operatorId: string | null): Promise<OperatorImage> {
    const checked = await this.check(body.reference);
    const row: Row = {
      id: idOf(checked.localRef),
      reference: body.reference,
      localRef: checked.localRef,
      digest: checked.digest,
      source: checked.source,
      name: body.name,
      kind: body.kind,
      description: body.description,
      categories: body.kind === 'application' ? ['App'] : body.categories,
      port: body.kind === 'application' ? body.port : null,
      minGpuMemoryGb: body.kind === 'application' ? body.minGpuMemoryGb : 0,
      command: body.kind === 'application' ? body.command : '',
      createdBy: operatorId,
      createdAt: this.deps.clock.now(),
    };
    try {
      await this.deps.db.transaction(async (tx) => {
        await tx.insert(operatorImages).values(row);
        await bumpVersion(tx, row.createdAt);
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('OPERATOR_IMAGE_TAKEN', `${checked.localRef}（或名称「${body.name}」）`);
      throw e;
    }
    this.deps.catalogue.invalidateAll();
    const ready = this.prepare(row);
    // In the layout already: ready before the answer. From the registry: the pull goes on after it.
    if (checked.source === 'layout') await ready;
    return this.view(row, 0);
  }

  /** Removes a registration no instance uses (refused while one does). */
  async remove(id: string): Promise<void> {
    const [row] = await this.deps.db.select().from(operatorImages).where(eq(operatorImages.id, id));
    if (!row) throw new AppError('OPERATOR_IMAGE_NOT_FOUND', id);
    const n = (await this.deps.inUse([id])).get(id) ?? 0;
    if (n > 0) throw new AppError('OPERATOR_IMAGE_IN_USE', `「${row.name}」有 ${n} 台实例在用`);
    await this.deps.db.transaction(async (tx) => {
      await tx.delete(operatorImages).where(eq(operatorImages.id, id));
      await bumpVersion(tx, this.deps.clock.now());
    });
    this.deps.catalogue.invalidateAll();
    await this.preparing.get(id)?.catch(() => {});
    await this.deps.registrar.forget(row).catch((e: unknown) => this.deps.log(`镜像登记：移除 ${row.localRef} 的本机镜像失败：${String(e)}`));
  }

  /** The layout names registrations need (the image gc keeps them). */
  async neededRefs(): Promise<string[]> {
    const rows = await this.deps.db.select().from(operatorImages);
    return rows.flatMap((r) => [r.localRef, this.deps.registrar.offeredRef(r)]);
  }

  private async check(reference: string) {
    try {
      return await this.deps.registrar.check(reference);
    } catch (e) {
      if (!(e instanceof RegistrationRefused)) throw e;
      if (e.kind === 'missing') throw new AppError('OPERATOR_IMAGE_MISSING', e.message);
      if (e.kind === 'foreign') throw new AppError('OPERATOR_IMAGE_OTHER_REGISTRY', e.message);
      throw new AppError('REGISTRY_UNAVAILABLE', e.message);
    }
  }

  private async retry(rows: Row[]): Promise<void> {
    for (const r of rows) {
      if (this.preparing.has(r.id)) continue;
      const failed = this.failed.get(r.id);
      if (failed && Date.now() - failed.at < RETRY_MS) continue;
      if (!(await this.deps.registrar.present(this.deps.registrar.offeredRef(r)))) void this.prepare(r);
    }
  }

  private prepare(row: Row): Promise<void> {
    const work = this.deps.registrar
      .prepare(row)
      .then(() => {
        this.failed.delete(row.id);
        this.deps.catalogue.invalidateAll();
      })
      .catch((e: unknown) => {
        const why = e instanceof Error ? e.message : String(e);
        this.failed.set(row.id, { why, at: Date.now() });
        this.deps.log(`镜像登记：${row.localRef} 未能在本机就绪：${why}`);
      })
      .finally(() => this.preparing.delete(row.id));
    this.preparing.set(row.id, work);
    return work;
  }

  private async view(r: Row, inUse: number): Promise<OperatorImage> {
    return {
      id: r.id,
      reference: r.reference,
      digest: r.digest,
      name: r.name,
      kind: r.kind,
      description: r.description,
      categories: r.categories,
      port: r.port,
      minGpuMemoryGb: r.minGpuMemoryGb,
      command: r.command,
      source: r.source,
      inUse,
      ready: !this.preparing.has(r.id) && (await this.deps.registrar.present(this.deps.registrar.offeredRef(r))),
      problem: this.preparing.has(r.id) ? null : (this.failed.get(r.id)?.why ?? null),
      createdAt: r.createdAt.toISOString(),
    };
  }

  /** Every registration as the catalogue's entries: an image each, and a 镜像应用 for an application. */
  private async catalogueEntries(): Promise<ExtraEntries> {
    const rows = await this.deps.db.select().from(operatorImages).orderBy(asc(operatorImages.createdAt), asc(operatorImages.id));
    const images: ImageRow[] = rows.map((r, i) => ({
      id: r.id,
      kind: r.kind === 'application' ? 'framework' : 'os',
      name: r.name,
      os: 'Linux',
      framework: '',
      frameworkVersion: '',
      cuda: '',
      python: '',
      forGpu: r.kind !== 'desktop',
      forCategories: r.categories,
      description: r.description || `运营方登记的镜像 ${r.reference}`,
      oci: this.deps.registrar.offeredRef(r),
      sort: SORT + i,
      active: true,
    }));
    const applications: ApplicationRow[] = rows
      .filter((r) => r.kind === 'application')
      .map((r, i) => ({
        id: r.id,
        name: r.name,
        category: '运营方登记',
        description: r.description || `运营方登记的镜像应用 ${r.reference}`,
        cover: '',
        defaultPort: r.port ?? 0,
        imageId: r.id,
        minGpuMemoryGb: r.minGpuMemoryGb,
        tags: [],
        sort: SORT + i,
        active: true,
      }));
    return { images, applications };
  }
}

/** 'reg-' and the layout name's words: 'ai/sd-webui:1.9' → 'reg-ai-sd-webui-1-9' (a digest's first 12 hex digits). */
export function idOf(localRef: string): string {
  const words = localRef
    .toLowerCase()
    .replace(/@sha256:([a-f0-9]{12})[a-f0-9]*$/, '-$1')
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .join('-');
  return `reg-${words.slice(0, 60).replace(/-+$/, '')}`;
}
