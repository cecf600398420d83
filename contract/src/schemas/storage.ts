/**
 * My data (spec §2 /console/gpudata): images saved from a stopped instance (my images,
 * shared by link at /image/share?id=…) and the data disks of the user's instances with their
 * expansion (ChangeDataDisk).
 */
import { z } from 'zod';
import { ImageStatus, InstanceStatus } from '../enums.js';
import { PAGE } from '../web-paths.js';
import { categorySchema, cycleSchema, MAX_DATA_DISK_GB, quoteSchema } from './catalogue.js';
import { moneySchema, pageOf, pagingQuerySchema, numeric } from './common.js';
import { instanceSchema } from './instance.js';
import { orderSchema } from './order.js';

// --- my images -------------------------------------------------------------------

export const USER_IMAGE_NAME_MAX = 30;
/**
 * Spec §5/§9 "Image maximum value 512": read as the largest image in GB. A save whose image comes
 * out larger fails (BuildFail) instead of being kept.
 */
export const USER_IMAGE_MAX_GB = 512;

/** 1–30 characters: letters (Chinese included), digits, space, and . _ - ( ). */
export const userImageNameSchema = z
  .string({ error: '请输入镜像名称' })
  .trim()
  .min(1, { error: '请输入镜像名称' })
  .max(USER_IMAGE_NAME_MAX, { error: `镜像名称最多 ${USER_IMAGE_NAME_MAX} 个字` })
  .regex(/^[\p{L}\p{N} ._()（）-]+$/u, { error: '镜像名称只能包含中英文、数字、空格和 . _ - ( )' })
  .describe('镜像名称');

/** POST …/instances/:id/image */
export const saveImageRequestSchema = z.object({ name: userImageNameSchema });
export type SaveImageRequest = z.infer<typeof saveImageRequestSchema>;
/** PUT …/images/:id/name */
export const renameImageRequestSchema = z.object({ name: userImageNameSchema });
/** PUT …/images/:id/share */
export const shareImageRequestSchema = z.object({ shared: z.boolean({ error: 'shared 必须是 true 或 false' }) });

export const imageIdParamsSchema = z.object({ id: z.uuid({ error: '镜像 ID 格式不正确' }) });

/**
 * 共享码: 10 characters of an alphabet without look-alikes (no 0/O, 1/I/L, U), about 48 bits: not
 * guessable, short enough to read out. Entered in any case, with spaces or dashes between groups.
 */
export const IMAGE_SHARE_CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTVWXYZ';
export const IMAGE_SHARE_CODE_LENGTH = 10;
export const imageShareCodeSchema = z
  .string({ error: '请输入共享码' })
  .transform((v) => v.replace(/[\s-]/g, '').toUpperCase())
  .pipe(
    z
      .string()
      .min(1, { error: '请输入共享码' })
      .regex(new RegExp(`^[${IMAGE_SHARE_CODE_ALPHABET}]{${IMAGE_SHARE_CODE_LENGTH}}$`), {
        error: `共享码是 ${IMAGE_SHARE_CODE_LENGTH} 位字母和数字，请核对后重新输入`,
      }),
  )
  .describe('共享码');
/** POST …/images/received: use an image another account shared by code. */
export const redeemShareCodeRequestSchema = z.object({ code: imageShareCodeSchema });

/**
 * How a saved image is stored, as the compute driver keeps it (local: the OCI layout's manifest;
 * simulated: its own made-up record, `simulated`). Null on an image where the driver keeps none.
 */
export const imageStorageSchema = z.object({
  simulated: z.boolean().describe('模拟平台的数字（非真实镜像）'),
  sizeBytes: z.number().int().describe('压缩后大小：镜像层按存储的大小（含基础镜像的层）'),
  unpackedBytes: z.number().int().nullable().describe('解压后大小；未知为 null'),
  base: z
    .object({ ref: z.string().nullable(), digest: z.string(), name: z.string().nullable().describe('基础镜像在目录中的名称') })
    .nullable()
    .describe('它所基于的镜像；null 为主机自身的系统'),
  layers: z.array(z.object({ digest: z.string().nullable(), sizeBytes: z.number().int() })).describe('自底向上；最后一层是实例的改动'),
  createdAt: z.string().nullable(),
});
export type ImageStorage = z.infer<typeof imageStorageSchema>;

export const userImageSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(ImageStatus.values),
  failReason: z.string().nullable().describe('制作失败的原因'),
  category: categorySchema.describe('来源实例的类别：决定能用它创建哪类实例'),
  sourceInstanceId: z.string(),
  sourceInstanceName: z.string(),
  baseImageId: z.string().nullable(),
  baseImageName: z.string().nullable().describe('来源实例的基础镜像'),
  gpuName: z.string().nullable().describe('来源实例的 GPU 型号'),
  sizeGb: z.number().int().nullable().describe('镜像大小，制作完成后才有'),
  shared: z.boolean(),
  /** The page path of the share link while sharing is on (the web prefixes its origin). */
  sharePath: z.string().nullable(),
  /** The live 共享码 of the image (null: none, or revoked). */
  shareCode: z.string().nullable(),
  /** How many accounts use it through the code (its live grants). */
  shareCodeUsers: z.number().int(),
  storage: imageStorageSchema.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type UserImage = z.infer<typeof userImageSchema>;

/** DELETE …/images/:id: what deleting freed on the host (the layer goes once nothing else needs it). */
export const deleteImageResponseSchema = z.object({
  ok: z.literal(true),
  /** What the user reads: whether the host dropped the image and what that frees. */
  message: z.string(),
  /** Bytes of its own layer that the host can free (null: the driver keeps nothing or does not say). */
  freedBytes: z.number().int().nullable(),
  simulated: z.boolean(),
});
export type DeleteImageResponse = z.infer<typeof deleteImageResponseSchema>;

/** An image another account shared with me by code (共享镜像): read only, usable to create instances. */
export const receivedImageSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(ImageStatus.values),
  category: categorySchema,
  baseImageId: z.string().nullable(),
  baseImageName: z.string().nullable(),
  gpuName: z.string().nullable(),
  sizeGb: z.number().int().nullable(),
  owner: z.string().describe('分享者（已脱敏）'),
  storage: imageStorageSchema.nullable(),
  receivedAt: z.string(),
  createdAt: z.string(),
});
export type ReceivedImage = z.infer<typeof receivedImageSchema>;
export const receivedImageListSchema = z.object({ items: z.array(receivedImageSchema) });
export type ReceivedImageList = z.infer<typeof receivedImageListSchema>;

export const userImagePageSchema = pageOf(userImageSchema).extend({
  limit: z.number().int().describe('每个账号最多保存的镜像数'),
  used: z.number().int().describe('已保存（含制作中、制作失败）的镜像数'),
});
export type UserImagePage = z.infer<typeof userImagePageSchema>;
export const userImageListQuerySchema = pagingQuerySchema;

/** GET …/images/shared/:id: what another logged-in user sees of a shared image. */
export const sharedImageSchema = z.object({
  id: z.string(),
  name: z.string(),
  category: categorySchema,
  baseImageId: z.string().nullable(),
  baseImageName: z.string().nullable(),
  gpuName: z.string().nullable(),
  sizeGb: z.number().int().nullable(),
  owner: z.string().describe('分享者（已脱敏）'),
  mine: z.boolean().describe('是否是自己的镜像'),
  createdAt: z.string(),
});
export type SharedImage = z.infer<typeof sharedImageSchema>;

/** The page a share link opens. */
export function imageSharePath(id: string): string {
  return `${PAGE.imageShare}?id=${encodeURIComponent(id)}`;
}

/** Images still being built refresh their list this often (ms). */
export const IMAGE_BUILD_POLL_MS = 2000;

// --- data disks ----------------------------------------------------------------------

export const dataDiskSchema = z.object({
  instanceId: z.string(),
  instanceName: z.string(),
  category: categorySchema,
  status: z.enum(InstanceStatus.values),
  cycle: cycleSchema,
  sizeGb: z.number().int().describe('数据盘容量'),
  freeGb: z.number().int().describe('免费容量'),
  usedGb: z.number().int().nullable().describe('已用容量（驱动报告；未知为 null）'),
  chargeableGb: z.number().int().describe('超出免费部分，计费容量'),
  dailyPrice: moneySchema.describe('按量实例每天的数据盘费用（按小时扣费，每小时为其 1/24）；包周期实例已含在周期费用内，为 0'),
  prepaid: z.boolean(),
  expireAt: z.string().nullable(),
  maxGb: z.number().int().describe('可扩容到的上限'),
  /** Why it cannot be expanded now (not stopped, expired…); null when it can. */
  expandBlocked: z.string().nullable(),
});
export type DataDisk = z.infer<typeof dataDiskSchema>;
export const dataDiskPageSchema = pageOf(dataDiskSchema).extend({
  pricePerGbDay: moneySchema.describe('数据盘单价（每 GB 每天）'),
});
export type DataDiskPage = z.infer<typeof dataDiskPageSchema>;
export const dataDiskListQuerySchema = pagingQuerySchema;

/** POST …/instances/:id/disk(/price): the whole new size in GB. */
export const expandDiskRequestSchema = z.object({
  dataDiskGb: numeric(
    z
      .number({ error: '容量必须是数字' })
      .int({ error: '容量必须是整数' })
      .min(1, { error: '容量至少 1 GB' })
      .max(MAX_DATA_DISK_GB, { error: `数据盘最大 ${MAX_DATA_DISK_GB} GB` }),
  ),
});
export type ExpandDiskRequest = z.infer<typeof expandDiskRequestSchema>;

export const diskExpansionQuoteSchema = z.object({
  instanceId: z.string(),
  currentGb: z.number().int(),
  newGb: z.number().int(),
  freeGb: z.number().int(),
  maxGb: z.number().int(),
  prepaid: z.boolean(),
  /** Prepaid: whole hours left until expireAt, what the price is prorated over; 0 for post-paid. */
  remainingHours: z.number().int(),
  /** Post-paid: what the data disk costs per day after the expansion (charged by the hour, 1/24 of it each hour); prepaid: 0. */
  dailyPriceAfter: moneySchema,
  /** Prepaid: the pro-rata charge, paid as a ChangeDataDisk order; post-paid: total 0. */
  quote: quoteSchema,
});
export type DiskExpansionQuote = z.infer<typeof diskExpansionQuoteSchema>;

/**
 * Prepaid: an Unpaid ChangeDataDisk order to pay (the disk grows once it is paid); post-paid: no
 * order (nothing is paid up front), the instance is already Operating.
 */
export const expandDiskResponseSchema = z.object({ order: orderSchema.nullable(), instance: instanceSchema });
export type ExpandDiskResponse = z.infer<typeof expandDiskResponseSchema>;
