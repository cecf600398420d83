/**
 * The catalogue and its price quotes (spec §7 "Catalogue", "Price"): what the market pages show
 * and what an order will be charged. Money is a string of 0.0001-yuan units (DESIGN.md "Money").
 */
import { z } from 'zod';
import { BillingCycle, InstanceCategory } from '../enums.js';
import { moneySchema, pageOf, pagingQuerySchema, numeric } from './common.js';

const id = (what: string) =>
  z
    .string({ error: `请选择${what}` })
    .trim()
    .min(1, { error: `请选择${what}` })
    .max(64, { error: `${what}编号过长` })
    .regex(/^[\w.-]+$/, { error: `${what}编号格式不正确` });

export const cycleSchema = z.enum(BillingCycle.values, { error: '计费方式必须是 Usage、Hour、Day、Week 或 Month' });
export const categorySchema = z.enum(InstanceCategory.values, { error: '产品类别不正确' });
/** Categories whose machines come from sizes (CPU flavours) rather than GPU hosts. */
export const SIZE_CATEGORIES = ['Generic', 'Desktop', 'Ebusiness', 'Game'] as const;
export type SizeCategory = (typeof SIZE_CATEGORIES)[number];
export const sizeCategorySchema = z.enum(SIZE_CATEGORIES, { error: '规格类别必须是 Generic、Desktop、Ebusiness 或 Game' });

/** The longest duration one order may buy, per cycle unit. */
export const MAX_DURATION: Record<BillingCycle, number> = { Usage: 720, Hour: 720, Day: 365, Week: 52, Month: 36 };
export const MAX_GPU_COUNT = 8;
export const MAX_INSTANCE_COUNT = 20;
export const MAX_DATA_DISK_GB = 10240;

/** A price for one cycle unit, with the discount the operator set for that cycle. */
export const cyclePriceSchema = z.object({
  cycle: cycleSchema,
  /** Before the discount, per card (GPU) or per instance (size), per cycle unit. */
  listPrice: moneySchema,
  /** What one cycle unit costs after the discount. */
  price: moneySchema,
  /** "0.7" for 30% off; "1" for none. */
  discountRate: z.string(),
  /** Spec §9: 0.5 → 'five', 0.7 → 'seven'; other rates have no word. */
  discountLabel: z.string().optional(),
});
export type CyclePrice = z.infer<typeof cyclePriceSchema>;

export const roomSchema = z.object({
  id: z.string(),
  regionId: z.string(),
  regionName: z.string(),
  name: z.string(),
  zones: z.array(z.string()),
  isDefault: z.boolean(),
});
export type Room = z.infer<typeof roomSchema>;

export const regionSchema = z.object({
  id: z.string(),
  name: z.string(),
  area: z.string().describe('华北、华东、华南……'),
  rooms: z.array(roomSchema),
  gpuFree: z.number().int().describe('该地区当前空闲 GPU 卡数'),
  categories: z.array(categorySchema).describe('该地区提供的产品类别'),
});
export type Region = z.infer<typeof regionSchema>;

/** Why the market on a real host (COMPUTE_DRIVER=local) does not sell this (its hardware or image is missing); absent: on sale. */
const unavailableSchema = z.string().optional().describe('本主机不销售的原因（如「本主机没有 RTX 4090」）；无此字段即在售');

export const gpuTypeSchema = z.object({
  id: z.string(),
  name: z.string(),
  memoryGb: z.number().int(),
  architecture: z.string(),
  cudaCapability: z.string(),
  fp32Tflops: z.number(),
  description: z.string(),
  prices: z.array(cyclePriceSchema),
  gpuFree: z.number().int(),
  gpuTotal: z.number().int(),
  unavailable: unavailableSchema,
});
export type GpuType = z.infer<typeof gpuTypeSchema>;

/** One card of the GPU market: a host with its free cards and the price per card. */
export const gpuHostSchema = z.object({
  id: z.string(),
  name: z.string(),
  regionId: z.string(),
  regionName: z.string(),
  roomId: z.string(),
  roomName: z.string(),
  zone: z.string(),
  gpuTypeId: z.string(),
  gpuName: z.string(),
  gpuMemoryGb: z.number().int(),
  gpuTotal: z.number().int(),
  gpuFree: z.number().int(),
  cpuModel: z.string(),
  cpuPerGpu: z.number().int(),
  memoryGbPerGpu: z.number().int(),
  systemDiskGb: z.number().int(),
  dataDiskFreeGb: z.number().int().describe('每卡免费数据盘'),
  dataDiskMaxGb: z.number().int().describe('可扩容的数据盘上限'),
  maxCuda: z.string(),
  prices: z.array(cyclePriceSchema),
  /** The price of the cycle asked for (or Hour), per card. */
  price: cyclePriceSchema,
});
export type GpuHost = z.infer<typeof gpuHostSchema>;

export const sizeSchema = z.object({
  id: z.string(),
  category: sizeCategorySchema,
  name: z.string(),
  cpu: z.number().int(),
  memoryGb: z.number().int(),
  systemDiskGb: z.number().int(),
  bandwidthMbps: z.number().int(),
  gpuName: z.string().describe('云游戏等规格自带的显卡，无则为空'),
  regionIds: z.array(z.string()),
  description: z.string(),
  prices: z.array(cyclePriceSchema),
  price: cyclePriceSchema,
  unavailable: unavailableSchema,
});
export type Size = z.infer<typeof sizeSchema>;

export const imageSchema = z.object({
  id: z.string(),
  kind: z.enum(['os', 'framework']),
  name: z.string(),
  os: z.string(),
  framework: z.string().describe('PyTorch、TensorFlow……；系统镜像为空'),
  frameworkVersion: z.string(),
  cuda: z.string().describe('所需 CUDA 版本；CPU 镜像为空'),
  python: z.string(),
  forGpu: z.boolean(),
  forCategories: z.array(categorySchema),
  description: z.string(),
  unavailable: unavailableSchema,
});
export type Image = z.infer<typeof imageSchema>;

export const applicationSchema = z.object({
  id: z.string(),
  name: z.string(),
  category: z.string().describe('AI 绘画、大模型……'),
  description: z.string(),
  cover: z.string().describe('封面图地址'),
  defaultPort: z.number().int(),
  imageId: z.string(),
  /** 0: the application needs no card; it is bought on a CPU size (`sizes`), never with a GPU. */
  minGpuMemoryGb: z.number().int(),
  tags: z.array(z.string()),
  unavailable: unavailableSchema,
  /** An application without a card (minGpuMemoryGb 0): the CPU sizes (Generic) it is sold on, at the size's price. */
  sizes: z.array(sizeSchema).optional().describe('不需要 GPU 的应用可选的 CPU 规格（按规格价格计费）；需要 GPU 的应用无此字段'),
});
export type Application = z.infer<typeof applicationSchema>;

/** Whether an application runs without a card: bought on a CPU size (order/price with sizeId), not on a GPU. */
export function isCpuApplication(app: { minGpuMemoryGb: number }): boolean {
  return app.minGpuMemoryGb === 0;
}

/** sortBy is "field" or "field,a|d"; the direction defaults to 'a' for priceDay, else 'd' (spec §7). */
const sortBySchema = z
  .string()
  .trim()
  .max(40)
  .regex(/^\w+(,[ad])?$/, { error: 'sortBy 格式为 字段 或 字段,a|d' })
  .optional();
const filterBySchema = z.string().trim().max(400, { error: 'filterBy 过长' }).optional();

export const sizesQuerySchema = pagingQuerySchema.extend({ sortBy: sortBySchema, filterBy: filterBySchema, cycle: cycleSchema.optional() });
export const gpuListQuerySchema = pagingQuerySchema.extend({
  sortBy: sortBySchema,
  filterBy: filterBySchema,
  cycle: cycleSchema.optional(),
  pageSize: numeric(z.number().int().min(1).max(100)).default(20),
});
export const imagesQuerySchema = pagingQuerySchema.extend({ filterBy: filterBySchema, pageSize: numeric(z.number().int().min(1).max(100)).default(50) });
export const regionsQuerySchema = z.object({ category: categorySchema.optional() });
export const regionRecommendQuerySchema = z.object({
  category: categorySchema.default('Gpu'),
  gpuTypeId: id('GPU 型号').optional(),
  sizeId: id('规格').optional(),
});
export const applicationListQuerySchema = pagingQuerySchema.extend({
  keyword: z.string().trim().max(50, { error: '搜索词最多 50 个字' }).optional(),
  category: z.string().trim().max(20).optional(),
  pageSize: numeric(z.number().int().min(1).max(100)).default(12),
});
export const roomListQuerySchema = z.object({ regionId: id('地区').optional() });
export const gpuImagesQuerySchema = z.object({ gpuTypeId: id('GPU 型号').optional(), framework: z.string().trim().max(40).optional() });
export const availableZonesQuerySchema = z.object({
  gpuTypeId: id('GPU 型号'),
  gpuCount: numeric(z.number({ error: '卡数必须是数字' }).int().min(1, { error: '卡数至少为 1' }).max(MAX_GPU_COUNT)).default(1),
  regionId: id('地区').optional(),
});
export const availableGpuTypesQuerySchema = z.object({
  regionId: id('地区').optional(),
  roomId: id('机房').optional(),
  gpuCount: numeric(z.number({ error: '卡数必须是数字' }).int().min(1, { error: '卡数至少为 1' }).max(MAX_GPU_COUNT)).default(1),
});

export const regionsResponseSchema = z.object({ items: z.array(regionSchema) });
export const roomsResponseSchema = z.object({ items: z.array(roomSchema) });
export const gpuTypesResponseSchema = z.object({ items: z.array(gpuTypeSchema) });
export const sizesPageSchema = pageOf(sizeSchema);
export type SizesPage = z.infer<typeof sizesPageSchema>;
export const gpuHostsPageSchema = pageOf(gpuHostSchema);
export type GpuHostsPage = z.infer<typeof gpuHostsPageSchema>;
export const imagesPageSchema = pageOf(imageSchema);
export type ImagesPage = z.infer<typeof imagesPageSchema>;
export const applicationsPageSchema = pageOf(applicationSchema).extend({ categories: z.array(z.string()) });
export type ApplicationsPage = z.infer<typeof applicationsPageSchema>;
export const imagesResponseSchema = z.object({ items: z.array(imageSchema) });
export const regionRecommendSchema = z.object({ regionId: z.string(), regionName: z.string(), reason: z.string() });
export type RegionRecommend = z.infer<typeof regionRecommendSchema>;
export const availableZoneSchema = z.object({
  roomId: z.string(),
  roomName: z.string(),
  regionId: z.string(),
  regionName: z.string(),
  zones: z.array(z.string()),
  hosts: z.number().int().describe('能放下所需卡数的主机数'),
  gpuFree: z.number().int(),
});
export type AvailableZone = z.infer<typeof availableZoneSchema>;
export const availableZonesResponseSchema = z.object({ items: z.array(availableZoneSchema) });
export const availableGpuTypeSchema = gpuTypeSchema.extend({ maxGpuPerHost: z.number().int().describe('单台主机当前最多可租卡数') });
export type AvailableGpuType = z.infer<typeof availableGpuTypeSchema>;
export const availableGpuTypesResponseSchema = z.object({ items: z.array(availableGpuTypeSchema) });

const quoteCommon = {
  cycle: cycleSchema,
  duration: numeric(z.number({ error: '时长必须是数字' }).int({ error: '时长必须是整数' }).min(1, { error: '时长至少为 1' }).max(720, { error: '时长过长' })),
  /** The whole data disk in GB, the free part included (a GPU host gives dataDiskFreeGb per card free). */
  dataDiskGb: numeric(
    z
      .number({ error: '数据盘必须是数字' })
      .int()
      .min(0, { error: '数据盘不能为负数' })
      .max(MAX_DATA_DISK_GB, { error: `数据盘最大 ${MAX_DATA_DISK_GB} GB` }),
  ).default(0),
  imageId: id('镜像').optional(),
  /** An image of the buyer's own (my images) or one shared with a link, instead of a catalogue image. */
  userImageId: z.uuid({ error: '镜像 ID 格式不正确' }).optional(),
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).optional(),
};

export const gpuQuoteRequestSchema = z
  .object({
    gpuTypeId: id('GPU 型号'),
    gpuCount: numeric(
      z
        .number({ error: '卡数必须是数字' })
        .int({ error: '卡数必须是整数' })
        .min(1, { error: '卡数至少为 1' })
        .max(MAX_GPU_COUNT, { error: `卡数最多 ${MAX_GPU_COUNT}` }),
    ),
    regionId: id('地区').optional(),
    roomId: id('机房').optional(),
    hostId: id('主机').optional(),
    applicationId: id('镜像应用').optional(),
    ...quoteCommon,
  })
  .superRefine(checkDuration)
  .refine((v) => !(v.imageId && v.applicationId), { path: ['imageId'], message: '镜像与镜像应用只能选一个' })
  .refine((v) => !(v.userImageId && (v.imageId || v.applicationId)), { path: ['userImageId'], message: '我的镜像与公共镜像、镜像应用只能选一个' });
export type GpuQuoteRequest = z.infer<typeof gpuQuoteRequestSchema>;

export const sizeQuoteRequestSchema = z
  .object({
    sizeId: id('规格'),
    regionId: id('地区'),
    count: numeric(
      z
        .number({ error: '数量必须是数字' })
        .int()
        .min(1, { error: '数量至少为 1' })
        .max(MAX_INSTANCE_COUNT, { error: `一次最多购买 ${MAX_INSTANCE_COUNT} 台` }),
    ).default(1),
    /** An application that needs no card (minGpuMemoryGb 0), on this CPU size: it brings its own image. */
    applicationId: id('镜像应用').optional(),
    ...quoteCommon,
  })
  .superRefine(checkDuration)
  .refine((v) => !(v.imageId && v.applicationId), { path: ['imageId'], message: '镜像与镜像应用只能选一个' })
  .refine((v) => !(v.userImageId && (v.imageId || v.applicationId)), { path: ['userImageId'], message: '我的镜像与公共镜像、镜像应用只能选一个' });
export type SizeQuoteRequest = z.infer<typeof sizeQuoteRequestSchema>;

function checkDuration(v: { cycle: z.infer<typeof cycleSchema>; duration: number }, ctx: z.RefinementCtx) {
  const max = MAX_DURATION[v.cycle];
  if (v.duration > max) ctx.addIssue({ code: 'custom', path: ['duration'], message: `该计费方式最长 ${max}` });
}

export const quoteLineSchema = z.object({
  kind: z.enum(['compute', 'dataDisk', 'bandwidth', 'cycleDiscount', 'studentDiscount', 'voucher', 'credit']),
  name: z.string(),
  /**
   * compute: list price per card (or instance) per cycle unit; dataDisk: price per GB per day, so
   * its amount is unitPrice × quantity × days, prorated by the hour; deductions: the (negative) amount.
   */
  unitPrice: moneySchema,
  /** compute: cards × cycle units; dataDisk: the GB beyond the free size; deductions: 1. */
  quantity: z.number().int(),
  /** Negative for deductions (credit: the unused value of the current prepaid period, on a conversion): the total is the plain sum of the lines. */
  amount: moneySchema,
});
export type QuoteLine = z.infer<typeof quoteLineSchema>;

export const quoteSchema = z.object({
  category: categorySchema,
  cycle: cycleSchema,
  duration: z.number().int(),
  unit: z.string().describe('小时、天、周、月'),
  lines: z.array(quoteLineSchema),
  listTotal: moneySchema.describe('折扣与代金券之前'),
  discountTotal: moneySchema.describe('周期折扣与学生优惠之和（正数）'),
  voucherDeduction: moneySchema,
  total: moneySchema,
  /** Where the machine would be placed: the host for a GPU quote, the region for a size. */
  placement: z.object({ regionId: z.string(), roomId: z.string().optional(), hostId: z.string().optional() }),
  discountRate: z.string(),
  discountLabel: z.string().optional(),
  voucherId: z.string().optional(),
});
export type Quote = z.infer<typeof quoteSchema>;

/** The operator's public promotion (spec §1), from the catalogue settings. */
export const promotionSchema = z.object({
  rechargeBonusRate: z.string().describe('充值赠送比例，如 0.18；0 表示没有'),
  newUserVoucher: moneySchema.describe('新用户代金券金额；0 表示没有'),
});
export type Promotion = z.infer<typeof promotionSchema>;

/** GET /api/v1/site/settings: what the public site shows from the operator's settings. */
export const siteSettingsSchema = z.object({
  customerServiceUrl: z.string().nullable().describe('企业微信客服链接；null 表示运营方未配置（页面不显示客服入口）'),
  /** Which image services run on the embedded stand-ins: their outputs are labelled 模拟 with a line on connecting a real one. */
  simulated: z.object({
    images: z.boolean().describe('AI 绘图与 ComfyUI 工作流由内置模拟后端出图（未配置 COMFYUI_URL）'),
    training: z.boolean().describe('LoRA 训练由内置模拟训练器执行（TRAINER_DRIVER 不是 kohya）'),
  }),
  /** The market sells one real host (COMPUTE_DRIVER=local): what it has; absent or null: the simulated fleet's demonstration catalogue. */
  host: z
    .object({
      cpus: z.number().int(),
      memoryGb: z.number().int(),
      diskGb: z.number().int().describe('存放实例磁盘的目录所在磁盘的剩余空间'),
      gpus: z.array(z.object({ model: z.string(), count: z.number().int() })),
      os: z.string().describe('主机系统（/etc/os-release 的 PRETTY_NAME）'),
      cpuForSale: z.number().int().describe('核数 × 运营方的 CPU 超售比例'),
      memoryGbForSale: z.number().int().describe('内存 × 运营方的内存超售比例'),
      cpuFree: z.number().int().describe('除去创建中和运行中的实例后仍可售的核数'),
      memoryGbFree: z.number().int(),
    })
    .nullable()
    .optional(),
});
export type SiteSettings = z.infer<typeof siteSettingsSchema>;

/** The operator's documents a visitor agrees to when registering. */
export const AGREEMENT_KINDS = ['user', 'privacy'] as const;
export type AgreementKind = (typeof AGREEMENT_KINDS)[number];
export const AgreementTitle: Record<AgreementKind, string> = { user: '用户协议', privacy: '隐私政策' };
export const agreementParamsSchema = z.object({
  kind: z.enum(AGREEMENT_KINDS, { error: '协议只有 user（用户协议）和 privacy（隐私政策）两种' }),
});
/** GET /api/v1/site/agreements/:kind. `content` is plain text with a Markdown subset: `#`/`##` headings, `- ` list items, blank lines between paragraphs. */
export const agreementSchema = z.object({
  kind: z.enum(AGREEMENT_KINDS),
  title: z.string(),
  content: z.string(),
});
export type Agreement = z.infer<typeof agreementSchema>;
