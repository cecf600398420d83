/**
 * The saveImage task (see tasks.ts): a stopped machine is saved as an image of my images. The image
 * is Build until the driver reports; the instance is Operating meanwhile and goes back where it was.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { SaveImageRequest, UserImage } from '@console/contract';
import type { Db, Tx } from '../../db/client.js';
import type { DriverEvent, InstanceOp } from '../../drivers/compute/types.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { ImageService } from '../images/index.js';
import type { UserRow } from '../users/index.js';
import type { InstanceService } from './service.js';
import type { InstanceRow } from './rows.js';
import { TaskParam, type TaskDone, type TaskFailed, type TaskHandler } from './tasks.js';

/** The image of my images being built. */
interface SaveImageParam {
  imageId: string;
}

const saveImageParam = new TaskParam<'saveImage', SaveImageParam>('saveImage', z.object({ imageId: z.string().min(1) }), (imageId) => ({ imageId }));

export class SaveImageService {
  constructor(private deps: { db: Db; catalogue: CatalogueStore; images: ImageService; instances: InstanceService }) {}

  async save(user: UserRow, id: string, req: SaveImageRequest): Promise<UserImage> {
    const core = this.deps.instances;
    await core.mustFind(user, id);
    const { row, image } = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      core.assertTask(cur, 'saveImage');
      const imageId = randomUUID();
      const opId = `saveImage:${imageId}`;
      const image = await this.deps.images.createBuilding(tx, {
        id: imageId,
        ownerId: cur.userId,
        createdBy: user.id,
        name: req.name,
        opId,
        source: { id: cur.id, name: cur.name, category: cur.category, imageId: cur.imageId, gpuTypeId: cur.gpuTypeId },
      });
      const row = await core.beginTask(tx, cur, saveImageParam.start({ imageId }), { actorId: user.id, opId, detail: `镜像「${req.name}」` });
      return { row, image };
    });
    await core.submit(row);
    return this.deps.images.view(image, await this.deps.catalogue.get());
  }
}

export class SaveImageTask implements TaskHandler<'saveImage', SaveImageParam> {
  readonly param = saveImageParam;

  constructor(private deps: { images: ImageService }) {}

  op(_row: InstanceRow, p: SaveImageParam): InstanceOp {
    return { kind: 'saveImage', params: { imageRef: p.imageId } };
  }

  async onDone(tx: Tx, _row: InstanceRow, p: SaveImageParam, e: DriverEvent): Promise<TaskDone> {
    // An image over the size limit is not kept: the instance shows why.
    const failed = await this.deps.images.markBuilt(tx, p.imageId, e.imageSizeGb);
    return {
      set: failed ? { lastError: failed } : {},
      detail: failed ?? `镜像已制作完成${e.imageSizeGb !== undefined ? `（${e.imageSizeGb} GB）` : ''}`,
    };
  }

  async onFailed(tx: Tx, _row: InstanceRow, p: SaveImageParam, e: DriverEvent): Promise<TaskFailed> {
    await this.deps.images.markFailed(tx, p.imageId, e.error ?? '镜像制作失败');
    return {};
  }
}
