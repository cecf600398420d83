/**
 * 我的镜像: images saved from a stopped instance. The instances module starts a save (the
 * machine must be stopped; it is Operating meanwhile) and reports its outcome here, inside its own
 * transaction; this module owns the rows: the per-account name and count rules, the statuses of
 * spec §3 (Build → Active or BuildFail), deletion, and sharing by link.
 *
 * Images are kept free of charge; an account keeps at most `userImageLimit` of them (catalogue
 * settings, 10 by default), those still building or failed included, so that a user deletes what
 * they no longer need. Deleted images keep their row (deletedAt) for the instances made from them.
 */
import { and, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { ImageStatus, USER_IMAGE_MAX_GB, imageSharePath, type InstanceCategory, type SharedImage, type UserImage, type UserImagePage } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { userImages } from './schema.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { CatalogueStore, Snapshot } from '../catalogue/index.js';
import { maskMobile, type UserService } from '../users/index.js';

export type UserImageRow = typeof userImages.$inferSelect;

/** What an order needs of an image it creates an instance from. */
export interface UsableImage {
  id: string;
  name: string;
  category: InstanceCategory;
  baseImageId: string | null;
}

export class ImageService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      catalogue: CatalogueStore;
      /** Who owns a shared image (the share page names them, masked). */
      users: Pick<UserService, 'contactsOf'>;
    },
  ) {}

  // --- called by the instances module, inside its transaction -------------------------

  /**
   * A new image in Build, if the name is free among the owner's images and the owner is under the
   * limit. Saves of one owner take turns (an advisory lock), so two at once cannot both pass the limit.
   */
  async createBuilding(
    tx: Tx,
    o: {
      id: string;
      ownerId: string;
      createdBy: string;
      name: string;
      opId: string;
      source: { id: string; name: string; category: InstanceCategory; imageId: string | null; gpuTypeId: string | null };
    },
  ): Promise<UserImageRow> {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`user_images:${o.ownerId}`}))`);
    const { settings } = this.deps.catalogue.peek();
    const [{ n } = { n: 0 }] = await tx
      .select({ n: count() })
      .from(userImages)
      .where(and(eq(userImages.userId, o.ownerId), isNull(userImages.deletedAt)));
    if (n >= settings.userImageLimit) throw new AppError('IMAGE_LIMIT_REACHED', `每个账号最多保存 ${settings.userImageLimit} 个镜像（含制作中和制作失败的）`);
    const [taken] = await tx
      .select({ id: userImages.id })
      .from(userImages)
      .where(and(eq(userImages.userId, o.ownerId), eq(userImages.name, o.name), isNull(userImages.deletedAt)));
    if (taken) throw new AppError('IMAGE_NAME_TAKEN', `镜像「${o.name}」已存在`);
    const now = this.deps.clock.now();
    const [row] = await tx
      .insert(userImages)
      .values({
        id: o.id,
        userId: o.ownerId,
        createdBy: o.createdBy,
        name: o.name,
        status: 'Build',
        failReason: null,
        category: o.source.category,
        sourceInstanceId: o.source.id,
        sourceInstanceName: o.source.name,
        baseImageId: o.source.imageId,
        gpuTypeId: o.source.gpuTypeId,
        sizeGb: null,
        shared: false,
        opId: o.opId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return row!;
  }

  /** The driver saved it. An image over the size limit is not kept (BuildFail). Returns why it failed, or null. */
  async markBuilt(tx: Tx, id: string, sizeGb: number | undefined): Promise<string | null> {
    if (sizeGb !== undefined && sizeGb > USER_IMAGE_MAX_GB) {
      const why = `镜像大小 ${sizeGb} GB 超过上限 ${USER_IMAGE_MAX_GB} GB，请清理系统盘后重试`;
      await this.markFailed(tx, id, why);
      return why;
    }
    await tx
      .update(userImages)
      .set({ status: 'Active', sizeGb: sizeGb ?? null, failReason: null, updatedAt: this.deps.clock.now() })
      .where(and(eq(userImages.id, id), eq(userImages.status, 'Build')));
    return null;
  }

  async markFailed(tx: Tx, id: string, reason: string): Promise<void> {
    await tx
      .update(userImages)
      .set({ status: 'BuildFail', failReason: reason.slice(0, 500), updatedAt: this.deps.clock.now() })
      .where(and(eq(userImages.id, id), eq(userImages.status, 'Build')));
  }

  /** Names of images, for instances made from them (deleted ones included). */
  async namesOf(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = await this.deps.db
      .select({ id: userImages.id, name: userImages.name })
      .from(userImages)
      .where(inArray(userImages.id, [...new Set(ids)]));
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  /**
   * An image the payer may create an instance from: their own, or one shared with a link; usable
   * (Active) and not deleted. Anything else is IMAGE_NOT_SHARED (404), never a hint that it exists.
   */
  async usableFor(payerId: string, id: string): Promise<UsableImage> {
    const [row] = await this.deps.db.select().from(userImages).where(eq(userImages.id, id));
    if (!row || row.deletedAt || (row.userId !== payerId && !row.shared)) throw new AppError('IMAGE_NOT_SHARED', `镜像 ${id}`);
    if (row.status !== 'Active' && row.status !== 'Active_NotAllowedMigrate') {
      throw new AppError('IMAGE_STATE_INVALID', `镜像「${row.name}」${ImageStatus.label(row.status)}，暂不能用于创建实例`);
    }
    return { id: row.id, name: row.name, category: row.category, baseImageId: row.baseImageId };
  }

  // --- the owner's calls ----------------------------------------------------------------

  async list(ownerId: string, q: { page: number; pageSize: number }): Promise<UserImagePage> {
    const where = and(eq(userImages.userId, ownerId), isNull(userImages.deletedAt));
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(userImages).where(where);
    const rows = await this.deps.db
      .select()
      .from(userImages)
      .where(where)
      .orderBy(desc(userImages.createdAt), desc(userImages.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    const snap = await this.deps.catalogue.get();
    return { items: rows.map((r) => this.view(r, snap)), total, page: q.page, pageSize: q.pageSize, limit: snap.settings.userImageLimit, used: total };
  }

  async get(ownerId: string, id: string): Promise<UserImage> {
    return this.view(await this.mustOwn(ownerId, id), await this.deps.catalogue.get());
  }

  async rename(ownerId: string, id: string, name: string): Promise<UserImage> {
    const row = await this.mustOwn(ownerId, id);
    if (row.name !== name) {
      try {
        await this.deps.db.update(userImages).set({ name, updatedAt: this.deps.clock.now() }).where(eq(userImages.id, id));
      } catch (e) {
        if (isUniqueViolation(e)) throw new AppError('IMAGE_NAME_TAKEN', `镜像「${name}」已存在`);
        throw e;
      }
    }
    return this.get(ownerId, id);
  }

  /** Deletes an image (not while it is being built); its share link stops working at once. */
  async remove(ownerId: string, id: string): Promise<void> {
    const row = await this.mustOwn(ownerId, id);
    if (row.status === 'Build') throw new AppError('IMAGE_STATE_INVALID', '镜像制作中，完成后才能删除');
    await this.deps.db
      .update(userImages)
      .set({ deletedAt: this.deps.clock.now(), shared: false, updatedAt: this.deps.clock.now() })
      .where(and(eq(userImages.id, id), isNull(userImages.deletedAt), sql`${userImages.status} <> 'Build'`));
  }

  /** Turns the share link on (a usable image only) or off (always). */
  async setShared(ownerId: string, id: string, shared: boolean): Promise<UserImage> {
    const row = await this.mustOwn(ownerId, id);
    if (shared && row.status !== 'Active' && row.status !== 'Active_NotAllowedMigrate') {
      throw new AppError('IMAGE_STATE_INVALID', `镜像${ImageStatus.label(row.status)}，制作完成后才能分享`);
    }
    await this.deps.db.update(userImages).set({ shared, updatedAt: this.deps.clock.now() }).where(eq(userImages.id, id));
    return this.get(ownerId, id);
  }

  /** What the share page shows to a logged-in user: an image shared with a link (or the viewer's own). */
  async shared(viewerPayerId: string, id: string): Promise<SharedImage> {
    const usable = await this.usableFor(viewerPayerId, id).catch((e: unknown) => {
      // Not built yet, failed: to anyone but the owner that is as good as not shared.
      if (isAppError(e, 'IMAGE_STATE_INVALID')) throw new AppError('IMAGE_NOT_SHARED', `镜像 ${id}`);
      throw e;
    });
    const [image] = await this.deps.db.select().from(userImages).where(eq(userImages.id, usable.id));
    const owner = (await this.deps.users.contactsOf([image!.userId])).get(image!.userId);
    const snap = await this.deps.catalogue.get();
    const v = this.view(image!, snap);
    return {
      id: v.id,
      name: v.name,
      category: v.category,
      baseImageId: v.baseImageId,
      baseImageName: v.baseImageName,
      gpuName: v.gpuName,
      sizeGb: v.sizeGb,
      owner: owner?.mobile ? maskMobile(owner.mobile) : owner?.email ? maskEmail(owner.email) : '匿名用户',
      mine: image!.userId === viewerPayerId,
      createdAt: v.createdAt,
    };
  }

  private async mustOwn(ownerId: string, id: string): Promise<UserImageRow> {
    const [row] = await this.deps.db
      .select()
      .from(userImages)
      .where(and(eq(userImages.id, id), eq(userImages.userId, ownerId)));
    if (!row || row.deletedAt) throw new AppError('IMAGE_NOT_FOUND', `镜像 ${id}`);
    return row;
  }

  view(r: UserImageRow, snap: Snapshot): UserImage {
    const base = r.baseImageId ? snap.images.find((i) => i.id === r.baseImageId) : undefined;
    const gpu = r.gpuTypeId ? snap.gpuTypes.find((g) => g.id === r.gpuTypeId) : undefined;
    return {
      id: r.id,
      name: r.name,
      status: r.status,
      failReason: r.failReason,
      category: r.category,
      sourceInstanceId: r.sourceInstanceId,
      sourceInstanceName: r.sourceInstanceName,
      baseImageId: r.baseImageId,
      baseImageName: base?.name ?? r.baseImageId,
      gpuName: gpu?.name ?? null,
      sizeGb: r.sizeGb,
      shared: r.shared,
      sharePath: r.shared ? imageSharePath(r.id) : null,
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    };
  }
}

/** "zhang.san@example.com" → "zh***@example.com". */
function maskEmail(email: string): string {
  const [name = '', domain = ''] = email.split('@');
  return `${name.slice(0, 2)}***@${domain}`;
}
