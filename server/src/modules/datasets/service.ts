/**
 * AI 绘图 datasets (issue 16): a paying account's sets of images with a caption each, kept the way
 * kohya sd-scripts reads them (an image and its same-name `.txt`). The images' bytes live in the
 * storage driver, their captions and facts here. Creating a dataset needs real-name certification
 * (spec §4/§5, 40311001); a dataset holds at most 512 images (spec §9), each checked by its content.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { and, asc, count, desc, eq, inArray, sql } from 'drizzle-orm';
import { Zip, ZipPassThrough } from 'fflate';
import {
  DATASET_MAX_CAPTION,
  DATASET_MAX_IMAGE_BYTES,
  DATASET_MAX_IMAGES,
  DATASET_MAX_PER_ACCOUNT,
  isCertified,
  type Dataset,
  type DatasetImage,
  type DatasetUploadResult,
  type PageOf,
  type datasetSchema,
  type datasetImageSchema,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import type { UserService } from '../users/index.js';
import { CONTENT_TYPE_OF, EXTENSION_OF, inspectImage } from './image-info.js';
import { sdDatasetImages, sdDatasets } from './schema.js';
import { DEFAULT_ZIP_LIMITS, unpackZip, ZipRefused, type UnpackedZip } from './zip-import.js';

type DatasetRow = typeof sdDatasets.$inferSelect;
type ImageRow = typeof sdDatasetImages.$inferSelect;
type CaptionsRequest =
  { op: 'set'; captions: { id: string; caption: string }[] } | { op: 'prefix'; text: string } | { op: 'replace'; find: string; replace: string };

/** A zip imported at once is read into memory (what it may unpack to: zip-import.ts). */
export const DATASET_MAX_ZIP_BYTES = 200 * 1024 * 1024;

export class DatasetService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      storage: StorageDriver;
      /** Whether the paying account is certified (spec §5's gate). */
      users: Pick<UserService, 'findById'>;
    },
  ) {}

  async list(payerId: string, q: { page: number; pageSize: number }): Promise<PageOf<typeof datasetSchema>> {
    const { db } = this.deps;
    const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(sdDatasets).where(eq(sdDatasets.userId, payerId));
    const rows = await db
      .select()
      .from(sdDatasets)
      .where(eq(sdDatasets.userId, payerId))
      .orderBy(desc(sdDatasets.createdAt), desc(sdDatasets.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: await this.views(rows), total: n, page: q.page, pageSize: q.pageSize };
  }

  async create(payerId: string, createdBy: string, body: { name: string; kind: Dataset['kind']; description: string; triggerWord: string }): Promise<Dataset> {
    const payer = await this.deps.users.findById(payerId);
    if (!payer || !isCertified(payer)) throw new AppError('CERTIFICATION_REQUIRED');
    const now = this.deps.clock.now();
    const row = await this.deps.db.transaction(async (tx) => {
      // One account's creations take turns, so two at once cannot both pass the limit.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`sd_datasets:${payerId}`}))`);
      const [{ n } = { n: 0 }] = await tx.select({ n: count() }).from(sdDatasets).where(eq(sdDatasets.userId, payerId));
      if (n >= DATASET_MAX_PER_ACCOUNT) throw new AppError('DATASET_LIMIT');
      const [created] = await tx
        .insert(sdDatasets)
        .values({ id: randomUUID(), userId: payerId, createdBy, ...body, createdAt: now, updatedAt: now })
        .returning();
      return created!;
    });
    return (await this.views([row]))[0]!;
  }

  async get(payerId: string, id: string): Promise<Dataset> {
    return (await this.views([await this.own(payerId, id)]))[0]!;
  }

  async update(payerId: string, id: string, body: Partial<Pick<Dataset, 'name' | 'kind' | 'description' | 'triggerWord'>>): Promise<Dataset> {
    const [row] = await this.deps.db
      .update(sdDatasets)
      .set({ ...body, updatedAt: this.deps.clock.now() })
      .where(and(eq(sdDatasets.id, id), eq(sdDatasets.userId, payerId)))
      .returning();
    if (!row) throw new AppError('DATASET_NOT_FOUND');
    return (await this.views([row]))[0]!;
  }

  /**
   * Deletes the dataset, its rows first (the images cascade), then their bytes. Under the dataset
   * row's lock, which every addition takes: the keys read are all there are.
   */
  async remove(payerId: string, id: string): Promise<void> {
    const keys = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ id: sdDatasets.id })
        .from(sdDatasets)
        .where(and(eq(sdDatasets.id, id), eq(sdDatasets.userId, payerId)))
        .for('update');
      if (!row) throw new AppError('DATASET_NOT_FOUND');
      const rows = await tx.select({ key: sdDatasetImages.storageKey }).from(sdDatasetImages).where(eq(sdDatasetImages.datasetId, id));
      await tx.delete(sdDatasets).where(eq(sdDatasets.id, id));
      return rows.map((r) => r.key);
    });
    for (const key of keys) await this.dropFiles(key);
  }

  async images(payerId: string, id: string, q: { page: number; pageSize: number; uncaptioned?: boolean }): Promise<PageOf<typeof datasetImageSchema>> {
    await this.own(payerId, id);
    const where = q.uncaptioned ? and(eq(sdDatasetImages.datasetId, id), eq(sdDatasetImages.caption, '')) : eq(sdDatasetImages.datasetId, id);
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(sdDatasetImages).where(where);
    const rows = await this.deps.db
      .select()
      .from(sdDatasetImages)
      .where(where)
      .orderBy(asc(sdDatasetImages.createdAt), asc(sdDatasetImages.name))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: rows.map(imageView), total: n, page: q.page, pageSize: q.pageSize };
  }

  /**
   * Adds one image: checked by its content, named after the file with the extension of what it
   * really is. Its bytes are stored first and removed again if the row cannot be written (the
   * dataset filled meanwhile, the name taken), so nothing is left behind by a refusal.
   */
  async addImage(payerId: string, id: string, fileName: string, bytes: Buffer, caption = ''): Promise<DatasetImage> {
    await this.own(payerId, id);
    if (bytes.length > DATASET_MAX_IMAGE_BYTES) throw new AppError('DATASET_IMAGE_TOO_LARGE');
    // A full dataset refuses before any decoding.
    if ((await this.imageCount(id)) >= DATASET_MAX_IMAGES) throw new AppError('DATASET_FULL');
    const inspected = await inspectImage(bytes);
    if (!inspected) throw new AppError('DATASET_IMAGE_INVALID');
    const { info, thumbnail } = inspected;
    const name = imageName(fileName, EXTENSION_OF[info.format]);
    if (caption.length > DATASET_MAX_CAPTION) throw new AppError('VALIDATION_FAILED', `「${name}」的标注超过 ${DATASET_MAX_CAPTION} 个字符`);
    const imageId = randomUUID();
    const storageKey = `datasets/${id}/${imageId}`;
    try {
      await this.deps.storage.put(storageKey, bytes, CONTENT_TYPE_OF[info.format]);
      await this.deps.storage.put(thumbnailKey(storageKey), thumbnail, 'image/webp');
      const row = await this.deps.db.transaction(async (tx) => {
        // The dataset's row is the turn every addition waits for: the 512th image is added once,
        // and none lands in a dataset deleted meanwhile.
        const [locked] = await tx.select({ id: sdDatasets.id }).from(sdDatasets).where(eq(sdDatasets.id, id)).for('update');
        if (!locked) throw new AppError('DATASET_NOT_FOUND');
        const [{ n } = { n: 0 }] = await tx.select({ n: count() }).from(sdDatasetImages).where(eq(sdDatasetImages.datasetId, id));
        if (n >= DATASET_MAX_IMAGES) throw new AppError('DATASET_FULL');
        const now = this.deps.clock.now();
        const [inserted] = await tx
          .insert(sdDatasetImages)
          .values({ id: imageId, datasetId: id, name, ...info, bytes: bytes.length, caption, storageKey, createdAt: now })
          .returning();
        await tx.update(sdDatasets).set({ updatedAt: now }).where(eq(sdDatasets.id, id));
        return inserted!;
      });
      return imageView(row);
    } catch (e) {
      await this.dropFiles(storageKey);
      if (isUniqueViolation(e)) throw new AppError('DATASET_IMAGE_EXISTS', `「${name}」`);
      throw e;
    }
  }

  async setCaption(payerId: string, id: string, imageId: string, caption: string): Promise<DatasetImage> {
    await this.own(payerId, id);
    const [row] = await this.deps.db
      .update(sdDatasetImages)
      .set({ caption })
      .where(and(eq(sdDatasetImages.id, imageId), eq(sdDatasetImages.datasetId, id)))
      .returning();
    if (!row) throw new AppError('DATASET_IMAGE_NOT_FOUND');
    return imageView(row);
  }

  /**
   * Captions in bulk, all or nothing: several set at once (every id must be the dataset's), a text
   * put in front of every caption that does not start with it yet (a trigger word), or a literal
   * find and replace. Answers how many captions changed.
   */
  async captions(payerId: string, id: string, req: CaptionsRequest): Promise<{ changed: number }> {
    await this.own(payerId, id);
    return this.deps.db.transaction(async (tx) => {
      await tx.select({ id: sdDatasets.id }).from(sdDatasets).where(eq(sdDatasets.id, id)).for('update');
      const rows = await tx
        .select({ id: sdDatasetImages.id, name: sdDatasetImages.name, caption: sdDatasetImages.caption })
        .from(sdDatasetImages)
        .where(eq(sdDatasetImages.datasetId, id));
      const next = new Map<string, string>();
      if (req.op === 'set') {
        const known = new Set(rows.map((r) => r.id));
        const missing = req.captions.find((c) => !known.has(c.id));
        if (missing) throw new AppError('DATASET_IMAGE_NOT_FOUND', missing.id);
        for (const c of req.captions) next.set(c.id, c.caption);
      } else {
        for (const r of rows) next.set(r.id, req.op === 'prefix' ? prefixed(r.caption, req.text) : r.caption.split(req.find).join(req.replace));
      }
      let changed = 0;
      for (const r of rows) {
        const caption = next.get(r.id);
        if (caption === undefined || caption === r.caption) continue;
        if (caption.length > DATASET_MAX_CAPTION) throw new AppError('VALIDATION_FAILED', `「${r.name}」的标注将超过 ${DATASET_MAX_CAPTION} 个字符`);
        await tx.update(sdDatasetImages).set({ caption }).where(eq(sdDatasetImages.id, r.id));
        changed++;
      }
      return { changed };
    });
  }

  async removeImage(payerId: string, id: string, imageId: string): Promise<void> {
    await this.own(payerId, id);
    const [row] = await this.deps.db
      .delete(sdDatasetImages)
      .where(and(eq(sdDatasetImages.id, imageId), eq(sdDatasetImages.datasetId, id)))
      .returning({ key: sdDatasetImages.storageKey });
    if (!row) throw new AppError('DATASET_IMAGE_NOT_FOUND');
    await this.dropFiles(row.key);
  }

  /** The image's bytes, or its thumbnail (WebP, at most THUMBNAIL_SIDE pixels a side). */
  async imageFile(payerId: string, id: string, imageId: string, thumbnail = false): Promise<{ body: Readable; contentType: string; size: number }> {
    await this.own(payerId, id);
    const [row] = await this.deps.db
      .select()
      .from(sdDatasetImages)
      .where(and(eq(sdDatasetImages.id, imageId), eq(sdDatasetImages.datasetId, id)));
    const file = row && (await this.deps.storage.get(thumbnail ? thumbnailKey(row.storageKey) : row.storageKey));
    if (!file) throw new AppError('DATASET_IMAGE_NOT_FOUND');
    return thumbnail ? file : { ...file, contentType: CONTENT_TYPE_OF[row.format] };
  }

  /** An image's stored files (the picture and its thumbnail), gone; a failure only leaves a file nobody reaches. */
  private async dropFiles(key: string): Promise<void> {
    for (const k of [key, thumbnailKey(key)]) await this.deps.storage.delete(k).catch(() => {});
  }

  /**
   * Imports a zip of images with same-name `.txt` captions (any folders; macOS's `__MACOSX` and
   * hidden files skipped), image by image: each is taken or refused on its own, as an upload is.
   * The zip is unpacked on a worker thread, its real inflated bytes counted (zip-import.ts); an
   * entry whose path climbs out of the archive is refused by name.
   */
  async importZip(payerId: string, id: string, zip: Buffer): Promise<DatasetUploadResult> {
    await this.own(payerId, id);
    if (zip.length > DATASET_MAX_ZIP_BYTES) throw new AppError('DATASET_ZIP_TOO_LARGE');
    let unpacked: UnpackedZip;
    try {
      unpacked = await unpackZip(zip);
    } catch (e) {
      throw zipRefusal(e);
    }
    const result: DatasetUploadResult = { added: [], refused: [] };
    const refuse = (name: string, e: unknown) => {
      if (!(e instanceof AppError)) throw e;
      result.refused.push({ name, code: e.code, message: e.message });
    };
    for (const r of unpacked.refused) refuse(r.name, new AppError(r.why === 'too_large' ? 'DATASET_IMAGE_TOO_LARGE' : 'DATASET_ZIP_ENTRY_UNSAFE'));
    const { files } = unpacked;
    const names = [...files.keys()].sort();
    for (const name of names.filter((n) => !n.toLowerCase().endsWith('.txt'))) {
      const txt = files.get(name.slice(0, name.length - path.posix.extname(name).length) + '.txt');
      const caption = txt
        ? txt
            .toString('utf8')
            .replace(/^\uFEFF/, '')
            .split('\0') // no database text takes NUL
            .join('')
            .trim()
        : '';
      try {
        result.added.push(await this.addImage(payerId, id, path.posix.basename(name), files.get(name)!, caption));
      } catch (e) {
        refuse(name, e);
      }
    }
    return result;
  }

  /**
   * The dataset as a zip laid out for sd-scripts: one folder `<repeats>_<trigger>` holding every
   * image and its caption as the same-name `.txt`. Streamed: images are stored as they are (they
   * are compressed already), one after another from the storage driver.
   */
  async exportZip(payerId: string, id: string, repeats: number): Promise<{ body: Readable; fileName: string }> {
    const dataset = await this.own(payerId, id);
    const rows = await this.deps.db.select().from(sdDatasetImages).where(eq(sdDatasetImages.datasetId, id)).orderBy(asc(sdDatasetImages.name));
    if (!rows.length) throw new AppError('DATASET_EMPTY');
    const folder = `${repeats}_${dataset.triggerWord || 'dataset'}`;
    const out = new PassThrough();
    const zip = new Zip((err, chunk, final) => {
      if (err) return out.destroy(err);
      out.write(chunk);
      if (final) out.end();
    });
    const write = async (row: ImageRow) => {
      const file = await this.deps.storage.get(row.storageKey);
      if (!file) throw new Error(`图片 ${row.name} 的文件缺失`);
      const entry = new ZipPassThrough(`${folder}/${row.name}`);
      zip.add(entry);
      try {
        for await (const chunk of file.body) {
          if (out.destroyed) return;
          entry.push(chunk as Buffer);
          if (out.writableNeedDrain) await drainedOrClosed(out);
        }
      } finally {
        file.body.destroy();
      }
      entry.push(new Uint8Array(0), true);
      const caption = new ZipPassThrough(`${folder}/${row.name.slice(0, -path.posix.extname(row.name).length)}.txt`);
      zip.add(caption);
      caption.push(Buffer.from(row.caption, 'utf8'), true);
    };
    void (async () => {
      for (const row of rows) {
        if (out.destroyed) return;
        await write(row);
      }
      zip.end();
    })().catch((e: unknown) => out.destroy(e as Error));
    return { body: out, fileName: `${safeFileName(dataset.name)}.zip` };
  }

  /** What a LoRA job takes at its start: the dataset as it is now and its images' ids, oldest first. */
  async forTraining(payerId: string, id: string): Promise<{ dataset: Dataset; imageIds: string[] }> {
    const row = await this.own(payerId, id);
    const images = await this.deps.db
      .select({ id: sdDatasetImages.id })
      .from(sdDatasetImages)
      .where(eq(sdDatasetImages.datasetId, id))
      .orderBy(asc(sdDatasetImages.createdAt), asc(sdDatasetImages.id));
    const [dataset] = await this.views([row]);
    return { dataset: dataset!, imageIds: images.map((i) => i.id) };
  }

  /** The images a job took at its start that are still there, each with its caption and a reader of its bytes. */
  async trainingImages(
    datasetId: string,
    imageIds: string[],
    exec: Executor = this.deps.db,
  ): Promise<{ name: string; caption: string; read: () => Promise<Buffer> }[]> {
    if (!imageIds.length) return [];
    const rows = await exec
      .select()
      .from(sdDatasetImages)
      .where(and(eq(sdDatasetImages.datasetId, datasetId), inArray(sdDatasetImages.id, imageIds)))
      .orderBy(asc(sdDatasetImages.createdAt), asc(sdDatasetImages.id));
    return rows.map((row) => ({
      name: row.name,
      caption: row.caption,
      read: async () => {
        const file = await this.deps.storage.get(row.storageKey);
        if (!file) throw new AppError('DATASET_IMAGE_NOT_FOUND');
        return buffer(file.body);
      },
    }));
  }

  private async own(payerId: string, id: string): Promise<DatasetRow> {
    const [row] = await this.deps.db
      .select()
      .from(sdDatasets)
      .where(and(eq(sdDatasets.id, id), eq(sdDatasets.userId, payerId)));
    if (!row) throw new AppError('DATASET_NOT_FOUND');
    return row;
  }

  private async imageCount(id: string): Promise<number> {
    const [{ n } = { n: 0 }] = await this.deps.db.select({ n: count() }).from(sdDatasetImages).where(eq(sdDatasetImages.datasetId, id));
    return n;
  }

  /** Rows as the API shows them, with their images' count, size, uncaptioned count and cover, in one query. */
  private async views(rows: DatasetRow[]): Promise<Dataset[]> {
    if (!rows.length) return [];
    const stats = await this.deps.db
      .select({
        datasetId: sdDatasetImages.datasetId,
        n: count(),
        bytes: sql<string>`coalesce(sum(${sdDatasetImages.bytes}), 0)::text`,
        uncaptioned: sql<number>`count(*) filter (where ${sdDatasetImages.caption} = '')::int`,
        cover: sql<string>`(array_agg(${sdDatasetImages.id} order by ${sdDatasetImages.createdAt}, ${sdDatasetImages.name}))[1]`,
      })
      .from(sdDatasetImages)
      .where(
        inArray(
          sdDatasetImages.datasetId,
          rows.map((r) => r.id),
        ),
      )
      .groupBy(sdDatasetImages.datasetId);
    const byId = new Map(stats.map((s) => [s.datasetId, s]));
    return rows.map((r) => {
      const s = byId.get(r.id);
      return {
        id: r.id,
        name: r.name,
        kind: r.kind,
        description: r.description,
        triggerWord: r.triggerWord,
        imageCount: s?.n ?? 0,
        uncaptioned: s?.uncaptioned ?? 0,
        bytes: Number(s?.bytes ?? 0),
        coverImageId: s?.cover ?? null,
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
      };
    });
  }
}

function imageView(r: ImageRow): DatasetImage {
  return {
    id: r.id,
    name: r.name,
    format: r.format,
    width: r.width,
    height: r.height,
    bytes: r.bytes,
    caption: r.caption,
    createdAt: r.createdAt.toISOString(),
  };
}

/**
 * An image's name in the dataset: the uploaded file's own name (its folders dropped), with the
 * extension of what the file really is; no control characters or slashes, at most 100 characters.
 */
export function imageName(fileName: string, extension: string): string {
  const base = fileName.split(/[\\/]/).pop() ?? '';
  const ext = path.posix.extname(base);
  const stem = ext ? base.slice(0, -ext.length) : base;
  const clean = [...stem]
    .filter((ch) => !isControl(ch))
    .join('')
    .trim()
    .slice(0, 100);
  return `${clean || 'image'}${extension}`;
}

/** A zip refused as a whole, as the user reads it. */
function zipRefusal(e: unknown): AppError {
  if (!(e instanceof ZipRefused)) return new AppError('DATASET_ZIP_INVALID');
  if (e.why === 'too_large') return new AppError('DATASET_ZIP_UNPACKED_TOO_LARGE');
  if (e.why === 'too_many') return new AppError('DATASET_ZIP_INVALID', `压缩包中的图片和标注文件超过 ${DEFAULT_ZIP_LIMITS.maxEntries} 个`);
  return new AppError('DATASET_ZIP_INVALID');
}

/** A trigger word in front of a caption (comma-separated, as sd-scripts' tags are), once. */
function prefixed(caption: string, text: string): string {
  if (caption === text || caption.startsWith(`${text},`)) return caption;
  return caption ? `${text}, ${caption}` : text;
}

function safeFileName(name: string): string {
  return [...name].map((ch) => (isControl(ch) || '\\/:*?"<>|'.includes(ch) ? '_' : ch)).join('') || 'dataset';
}

function isControl(ch: string): boolean {
  const c = ch.codePointAt(0)!;
  return c < 0x20 || c === 0x7f;
}

/** Where an image's thumbnail is stored, beside it. */
function thumbnailKey(storageKey: string): string {
  return `${storageKey}.thumb`;
}

/** Resolves when the stream wants more, or when it is gone (the client went away): never waits forever. */
function drainedOrClosed(out: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}
