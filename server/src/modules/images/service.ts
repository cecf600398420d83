/**
 * 我的镜像: images saved from a stopped instance. The instances module starts a save (the
 * machine must be stopped; it is Operating meanwhile) and reports its outcome here, inside its own
 * transaction; this module owns the rows: the per-account name and count rules, the statuses of
 * spec §3 (Build → Active or BuildFail), deletion, sharing by link and by code (共享镜像).
 *
 * Images are kept free of charge; an account keeps at most `userImageLimit` of them (catalogue
 * settings, 10 by default), those still building or failed included, so that a user deletes what
 * they no longer need. Deleted images keep their row (deletedAt) for the instances made from them;
 * the host drops its copy (ComputeDriver.removeImage) once no instance is being created from it.
 *
 * 共享码: the owner makes one live code per image; an account that enters it has the image in its
 * list (shared with me) and may create instances from it, nothing else. Revoking the code (or
 * deleting the image) ends every use through it: such accounts no longer see or use it.
 */
import { randomInt } from 'node:crypto';
import { and, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import {
  IMAGE_SHARE_CODE_ALPHABET,
  IMAGE_SHARE_CODE_LENGTH,
  ImageStatus,
  USER_IMAGE_MAX_GB,
  imageSharePath,
  type DeleteImageResponse,
  type ImageStorage,
  type InstanceCategory,
  type ReceivedImage,
  type SharedImage,
  type UserImage,
  type UserImagePage,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { userImageGrants, userImageShareCodes, userImages } from './schema.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { ComputeDriver, RemovedImage } from '../../drivers/compute/types.js';
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
      /** Where saved images live: their layers for the 镜像 page, and dropping a deleted one. */
      compute?: Pick<ComputeDriver, 'imageInfo' | 'removeImage'>;
      log?: (msg: string) => void;
    },
  ) {}

  /**
   * How many instances are being created from an image now (the instances module's, wired at
   * start): such an image is not deleted under them. Called inside the deleting transaction.
   */
  creatingFrom: (tx: Tx, imageId: string) => Promise<number> = async () => 0;

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
   * An image the payer may create an instance from: their own, one shared with a link, or one
   * whose 共享码 they entered (while that code is live); usable (Active) and not deleted. Anything
   * else is IMAGE_NOT_SHARED (404), never a hint that it exists.
   */
  async usableFor(payerId: string, id: string): Promise<UsableImage> {
    return this.usableIn(this.deps.db, payerId, id, false);
  }

  /**
   * usableFor inside the transaction that inserts the instances made from it, holding the image's
   * row (FOR SHARE) until they are in: a delete waits for them, then sees them being created.
   */
  async holdForCreate(tx: Tx, payerId: string, id: string): Promise<UsableImage> {
    return this.usableIn(tx, payerId, id, true);
  }

  private async usableIn(db: Db | Tx, payerId: string, id: string, hold: boolean): Promise<UsableImage> {
    const select = db.select().from(userImages).where(eq(userImages.id, id));
    const [row] = hold ? await select.for('share') : await select;
    if (!row || row.deletedAt) throw new AppError('IMAGE_NOT_SHARED', `镜像 ${id}`);
    if (row.userId !== payerId && !row.shared && !(await this.liveGrant(db, payerId, id))) throw new AppError('IMAGE_NOT_SHARED', `镜像 ${id}`);
    if (row.status !== 'Active' && row.status !== 'Active_NotAllowedMigrate') {
      throw new AppError('IMAGE_STATE_INVALID', `镜像「${row.name}」${ImageStatus.label(row.status)}，暂不能用于创建实例`);
    }
    return { id: row.id, name: row.name, category: row.category, baseImageId: row.baseImageId };
  }

  /** Whether the payer entered a code of the image that is still live. */
  private async liveGrant(db: Db | Tx, payerId: string, imageId: string): Promise<boolean> {
    const [g] = await db
      .select({ code: userImageGrants.code })
      .from(userImageGrants)
      .innerJoin(userImageShareCodes, eq(userImageShareCodes.code, userImageGrants.code))
      .where(and(eq(userImageGrants.imageId, imageId), eq(userImageGrants.userId, payerId), isNull(userImageShareCodes.revokedAt)));
    return Boolean(g);
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
    return { items: await this.views(rows, snap), total, page: q.page, pageSize: q.pageSize, limit: snap.settings.userImageLimit, used: total };
  }

  async get(ownerId: string, id: string): Promise<UserImage> {
    const [v] = await this.views([await this.mustOwn(ownerId, id)], await this.deps.catalogue.get());
    return v!;
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

  /**
   * Deletes an image: not while it is being built, nor while an instance is being created from it
   * (its row is held by that creation, so the check cannot miss one). Its share link and code stop
   * working at once; then the host drops its copy, and the answer says what that frees.
   */
  async remove(ownerId: string, id: string): Promise<DeleteImageResponse> {
    await this.mustOwn(ownerId, id);
    const row = await this.deps.db.transaction(async (tx) => {
      const [cur] = await tx.select().from(userImages).where(eq(userImages.id, id)).for('update');
      if (!cur || cur.deletedAt) throw new AppError('IMAGE_NOT_FOUND', `镜像 ${id}`);
      if (cur.status === 'Build') throw new AppError('IMAGE_STATE_INVALID', '镜像制作中，完成后才能删除');
      const creating = await this.creatingFrom(tx, id);
      if (creating > 0) throw new AppError('IMAGE_IN_USE', `有 ${creating} 台实例正在用镜像「${cur.name}」创建，创建完成后再删除`);
      const now = this.deps.clock.now();
      await tx.update(userImages).set({ deletedAt: now, shared: false, updatedAt: now }).where(eq(userImages.id, id));
      await tx
        .update(userImageShareCodes)
        .set({ revokedAt: now })
        .where(and(eq(userImageShareCodes.imageId, id), isNull(userImageShareCodes.revokedAt)));
      return cur;
    });
    return this.dropFromHost(row);
  }

  /** Asks the driver to drop a deleted image; the image stays deleted whatever the host answers. */
  private async dropFromHost(row: UserImageRow): Promise<DeleteImageResponse> {
    const remove = this.deps.compute?.removeImage;
    if (!remove || row.status === 'BuildFail') return { ok: true, message: '镜像已删除', freedBytes: null, simulated: false };
    try {
      const r = await remove.call(this.deps.compute, row.id);
      return { ok: true, message: removedMessage(r), freedBytes: r.freedBytes, simulated: r.simulated ?? false };
    } catch (e) {
      this.deps.log?.(`images: 主机未能移除镜像 ${row.id}：${String(e)}`);
      return { ok: true, message: '镜像已删除，但主机上的镜像数据未能移除，请联系管理员清理', freedBytes: null, simulated: false };
    }
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
    const v = this.baseView(image!, snap);
    return {
      id: v.id,
      name: v.name,
      category: v.category,
      baseImageId: v.baseImageId,
      baseImageName: v.baseImageName,
      gpuName: v.gpuName,
      sizeGb: v.sizeGb,
      owner: ownerLabel(owner),
      mine: image!.userId === viewerPayerId,
      createdAt: v.createdAt,
    };
  }

  private baseView(r: UserImageRow, snap: Snapshot): Omit<UserImage, 'shareCode' | 'shareCodeUsers' | 'storage'> {
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
  // --- 共享码 -------------------------------------------------------------------------------

  /** The image's live 共享码, made now if it has none (a usable image only). Two calls at once get the same code. */
  async createShareCode(ownerId: string, id: string): Promise<UserImage> {
    const row = await this.mustOwn(ownerId, id);
    if (row.status !== 'Active' && row.status !== 'Active_NotAllowedMigrate') {
      throw new AppError('IMAGE_STATE_INVALID', `镜像${ImageStatus.label(row.status)}，制作完成后才能生成共享码`);
    }
    if (!(await this.liveCodes([id])).has(id)) {
      try {
        await this.deps.db.insert(userImageShareCodes).values({ code: newShareCode(), imageId: id, createdAt: this.deps.clock.now() });
      } catch (e) {
        // Another call made one meanwhile (one live code per image): that one is the code.
        if (!isUniqueViolation(e)) throw e;
      }
    }
    return this.get(ownerId, id);
  }

  /** Revokes the live code: nobody can enter it any more, and those who did no longer use the image. */
  async revokeShareCode(ownerId: string, id: string): Promise<UserImage> {
    await this.mustOwn(ownerId, id);
    await this.deps.db
      .update(userImageShareCodes)
      .set({ revokedAt: this.deps.clock.now() })
      .where(and(eq(userImageShareCodes.imageId, id), isNull(userImageShareCodes.revokedAt)));
    return this.get(ownerId, id);
  }

  /**
   * Enters a code: its image joins the payer's shared-with-me list. The code's row is held while the
   * grant is written, so a revoke at the same moment either comes first (refused) or ends this grant too.
   */
  async redeem(payerId: string, code: string): Promise<ReceivedImage> {
    const imageId = await this.deps.db.transaction(async (tx) => {
      const [c] = await tx.select().from(userImageShareCodes).where(eq(userImageShareCodes.code, code)).for('share');
      if (!c || c.revokedAt) throw new AppError('IMAGE_SHARE_CODE_INVALID');
      const [image] = await tx.select().from(userImages).where(eq(userImages.id, c.imageId));
      if (!image || image.deletedAt) throw new AppError('IMAGE_SHARE_CODE_INVALID');
      if (image.userId === payerId) throw new AppError('IMAGE_SHARE_CODE_OWN', `镜像「${image.name}」`);
      const now = this.deps.clock.now();
      await tx
        .insert(userImageGrants)
        .values({ imageId: image.id, userId: payerId, code, createdAt: now })
        .onConflictDoUpdate({ target: [userImageGrants.imageId, userImageGrants.userId], set: { code, createdAt: now } });
      return image.id;
    });
    const item = (await this.received(payerId)).find((r) => r.id === imageId);
    if (!item) throw new AppError('IMAGE_SHARE_CODE_INVALID');
    return item;
  }

  /** The images shared with the payer by a code that is still live, newest first. */
  async received(payerId: string): Promise<ReceivedImage[]> {
    const rows = await this.deps.db
      .select({ image: userImages, receivedAt: userImageGrants.createdAt })
      .from(userImageGrants)
      .innerJoin(userImageShareCodes, eq(userImageShareCodes.code, userImageGrants.code))
      .innerJoin(userImages, eq(userImages.id, userImageGrants.imageId))
      .where(and(eq(userImageGrants.userId, payerId), isNull(userImageShareCodes.revokedAt), isNull(userImages.deletedAt)))
      .orderBy(desc(userImageGrants.createdAt), desc(userImages.id));
    const snap = await this.deps.catalogue.get();
    const owners = await this.deps.users.contactsOf(rows.map((r) => r.image.userId));
    const storage = await Promise.all(rows.map((r) => this.storageOf(r.image, snap)));
    return rows.map((r, i) => {
      const v = this.baseView(r.image, snap);
      return {
        id: v.id,
        name: v.name,
        status: v.status,
        category: v.category,
        baseImageId: v.baseImageId,
        baseImageName: v.baseImageName,
        gpuName: v.gpuName,
        sizeGb: v.sizeGb,
        owner: ownerLabel(owners.get(r.image.userId)),
        storage: storage[i]!,
        receivedAt: r.receivedAt.toISOString(),
        createdAt: v.createdAt,
      };
    });
  }

  /** Takes a shared image off the payer's list (the owner's image is untouched). */
  async dropReceived(payerId: string, id: string): Promise<void> {
    const gone = await this.deps.db
      .delete(userImageGrants)
      .where(and(eq(userImageGrants.imageId, id), eq(userImageGrants.userId, payerId)))
      .returning({ id: userImageGrants.imageId });
    if (!gone.length) throw new AppError('IMAGE_NOT_FOUND', `镜像 ${id}`);
  }

  /** The owner's image; one shared with the caller by code is theirs to use only (IMAGE_READ_ONLY), anything else not found. */
  private async mustOwn(ownerId: string, id: string): Promise<UserImageRow> {
    const [row] = await this.deps.db.select().from(userImages).where(eq(userImages.id, id));
    if (!row || row.deletedAt) throw new AppError('IMAGE_NOT_FOUND', `镜像 ${id}`);
    if (row.userId !== ownerId) {
      if (await this.liveGrant(this.deps.db, ownerId, id)) throw new AppError('IMAGE_READ_ONLY', `镜像「${row.name}」`);
      throw new AppError('IMAGE_NOT_FOUND', `镜像 ${id}`);
    }
    return row;
  }

  /** Live codes of some images, by image. */
  private async liveCodes(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = await this.deps.db
      .select({ imageId: userImageShareCodes.imageId, code: userImageShareCodes.code })
      .from(userImageShareCodes)
      .where(and(inArray(userImageShareCodes.imageId, ids), isNull(userImageShareCodes.revokedAt)));
    return new Map(rows.map((r) => [r.imageId, r.code]));
  }

  /** How many accounts use each image through its live code. */
  private async codeUsers(ids: string[]): Promise<Map<string, number>> {
    if (!ids.length) return new Map();
    const rows = await this.deps.db
      .select({ imageId: userImageGrants.imageId, n: count() })
      .from(userImageGrants)
      .innerJoin(userImageShareCodes, eq(userImageShareCodes.code, userImageGrants.code))
      .where(and(inArray(userImageGrants.imageId, ids), isNull(userImageShareCodes.revokedAt)))
      .groupBy(userImageGrants.imageId);
    return new Map(rows.map((r) => [r.imageId, r.n]));
  }

  /**
   * How the host keeps a usable image (its size, base and layers), from the compute driver; null
   * where it keeps none or cannot say now (the page then shows the size the save reported).
   */
  private async storageOf(r: UserImageRow, snap: Snapshot): Promise<ImageStorage | null> {
    const infoOf = this.deps.compute?.imageInfo;
    if (!infoOf || (r.status !== 'Active' && r.status !== 'Active_NotAllowedMigrate')) return null;
    try {
      const info = await infoOf.call(this.deps.compute, r.id);
      if (!info) return null;
      const baseName = r.baseImageId ? (snap.images.find((i) => i.id === r.baseImageId)?.name ?? null) : null;
      return {
        simulated: info.simulated ?? false,
        sizeBytes: info.sizeBytes,
        unpackedBytes: info.unpackedBytes ?? null,
        base: info.base ? { ref: info.base.ref, digest: info.base.digest, name: baseName } : null,
        layers: info.layers,
        createdAt: info.createdAt,
      };
    } catch (e) {
      this.deps.log?.(`images: 读取镜像 ${r.id} 的存储信息失败：${String(e)}`);
      return null;
    }
  }

  /** The 镜像 page's view of one image (the save answers with it). */
  async view(r: UserImageRow, snap: Snapshot): Promise<UserImage> {
    const [v] = await this.views([r], snap);
    return v!;
  }

  private async views(rows: UserImageRow[], snap: Snapshot): Promise<UserImage[]> {
    const ids = rows.map((r) => r.id);
    const [codes, users, storage] = await Promise.all([this.liveCodes(ids), this.codeUsers(ids), Promise.all(rows.map((r) => this.storageOf(r, snap)))]);
    return rows.map((r, i) => ({
      ...this.baseView(r, snap),
      shareCode: codes.get(r.id) ?? null,
      shareCodeUsers: users.get(r.id) ?? 0,
      storage: storage[i]!,
    }));
  }
}

/** "zhang.san@example.com" → "zh***@example.com". */
function maskEmail(email: string): string {
  const [name = '', domain = ''] = email.split('@');
  return `${name.slice(0, 2)}***@${domain}`;
}

/** Who shared an image, masked: their mobile, else their e-mail. */
function ownerLabel(owner: { mobile: string | null; email: string | null } | undefined): string {
  return owner?.mobile ? maskMobile(owner.mobile) : owner?.email ? maskEmail(owner.email) : '匿名用户';
}

/** A new 共享码: uniform over the alphabet (crypto.randomInt), about 49 bits. */
export function newShareCode(): string {
  let code = '';
  for (let i = 0; i < IMAGE_SHARE_CODE_LENGTH; i++) code += IMAGE_SHARE_CODE_ALPHABET[randomInt(IMAGE_SHARE_CODE_ALPHABET.length)];
  return code;
}

/** What the user reads after a delete: what the host did with its copy. */
function removedMessage(r: RemovedImage): string {
  const sim = r.simulated ? '（模拟）' : '';
  if (!r.removed) return '镜像已删除（主机上已没有它的数据）';
  const size = r.freedBytes === null ? '' : `（${formatBytes(r.freedBytes)}）`;
  if (r.freed === 'now') return `镜像已删除，已释放主机磁盘空间${size}${sim}`;
  return `镜像已删除；它在主机上的镜像层${size}已不再被引用，将在镜像清理时释放${sim}`;
}

function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${Math.max(1, Math.round(n / 1024))} KB`;
}
