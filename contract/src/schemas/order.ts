/**
 * Orders (spec §3/§4/§7): one state machine, the create/pay/status/QR calls and the order views.
 */
import { z } from 'zod';
import { OrderStatus, OrderType, PaymentMethod, type OrderStatus as Status } from '../enums.js';
import { gpuQuoteRequestSchema, quoteSchema, sizeQuoteRequestSchema } from './catalogue.js';
import { moneySchema, pageOf, pagingQuerySchema, numeric } from './common.js';
import { gatewayMethodSchema } from './money.js';

/** Every allowed move of an order; anything else is refused (one state machine, spec §4). */
export const ORDER_TRANSITIONS: Record<Status, readonly Status[]> = {
  Unpaid: ['Paid', 'Cancelled', 'Expired', 'Abated'],
  Paid: ['Success', 'Failed'],
  Failed: ['Refunded'],
  Success: ['Refunded'],
  Time: ['Success', 'Refunded', 'Failed'],
  Expired: [],
  Abated: [],
  Cancelled: [],
  Refunded: [],
};

export function canMoveOrder(from: Status, to: Status): boolean {
  return ORDER_TRANSITIONS[from].includes(to);
}

export const orderKindSchema = z.enum(['Personal', 'Ai', 'default']);
export type OrderKind = z.infer<typeof orderKindSchema>;

const instanceName = z.string().trim().max(30, { error: '实例名称最多 30 个字' }).optional();

/** POST /infra/api/v2.1/gpu/order (kind Personal). */
export const gpuOrderRequestSchema = gpuQuoteRequestSchema.and(z.object({ name: instanceName }));
/** POST /infra/api/v2.1/order (kind default). */
export const sizeOrderRequestSchema = sizeQuoteRequestSchema.and(z.object({ name: instanceName }));
export type GpuOrderRequest = z.infer<typeof gpuOrderRequestSchema>;
export type SizeOrderRequest = z.infer<typeof sizeOrderRequestSchema>;
/** POST /shinichi/api/v2.1/tiio/resource (kind Ai): a model resource package. */
export const aiResourceOrderRequestSchema = z.object({
  productId: z.string({ error: '请选择资源包' }).trim().min(1, { error: '请选择资源包' }).max(64),
  count: numeric(z.number({ error: '数量必须是数字' }).int().min(1, { error: '数量至少为 1' }).max(100, { error: '一次最多购买 100 份' })).default(1),
});
export type AiResourceOrderRequest = z.infer<typeof aiResourceOrderRequestSchema>;

export const payOrderRequestSchema = z.object({
  method: z.enum(PaymentMethod.values, { error: '支付方式必须是 Balance、Alipay 或 Wechat' }),
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).nullable().optional().describe('使用的代金券；不传则用订单上已选的代金券，null 表示不使用'),
});
export type PayOrderRequest = z.infer<typeof payOrderRequestSchema>;

/** PUT …/:order_uid/voucher: the voucher an unpaid order will be paid with (null: none), kept on the order. */
export const orderVoucherRequestSchema = z.object({
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).nullable(),
});
export type OrderVoucherRequest = z.infer<typeof orderVoucherRequestSchema>;

export const orderUidParamsSchema = z.object({
  order_uid: z.string().regex(/^O\d{14}[0-9a-f]{8}$/, { error: '订单号格式不正确' }),
});
/** …/:order_uid/qrcode/:method */
export const orderQrParamsSchema = orderUidParamsSchema.extend({ method: z.enum(['alipay', 'wechat'], { error: '只支持 alipay 或 wechat' }) });

/** The priced part of a quote every order has (instance orders carry the full quote). */
export const orderPriceSchema = quoteSchema.pick({ lines: true, listTotal: true, discountTotal: true, voucherDeduction: true, total: true });
export type OrderPrice = z.infer<typeof orderPriceSchema>;

export const orderPaymentPartSchema = z.object({ source: z.enum(['voucher', 'gift', 'cash']), amount: moneySchema });

export const orderSchema = z.object({
  orderUid: z.string(),
  kind: orderKindSchema,
  type: z.enum(OrderType.values),
  category: z.string(),
  packageKind: z.enum(['gpuHours', 'tokens']).nullable().describe('资源包订单的种类：gpuHours 为 GPU 时长包，tokens 为模型资源包；其他订单为 null'),
  status: z.enum(OrderStatus.values),
  description: z.string(),
  amount: moneySchema.describe('应付（代金券前）'),
  voucherId: z.string().nullable().describe('已选（未支付订单）或已使用的代金券'),
  voucherDeduction: moneySchema.describe('代金券抵扣；未支付订单为已选代金券将抵扣的金额'),
  payMethod: z.enum(PaymentMethod.values).nullable(),
  paid: z.array(orderPaymentPartSchema).describe('实付构成：代金券、赠送金、现金'),
  quote: orderPriceSchema,
  resourceId: z.string().nullable(),
  failReason: z.string().nullable(),
  expiresAt: z.string(),
  paidAt: z.string().nullable(),
  fulfilledAt: z.string().nullable().describe('完成时间；按量计费订单为资源释放（结束计费）的时间，计费中为 null'),
  refundedAt: z.string().nullable(),
  createdAt: z.string(),
});
export type Order = z.infer<typeof orderSchema>;

/** What one line of a post-paid bill charges for. */
const USAGE_LINE_LABELS = {
  gpu: 'GPU 运行',
  noCard: '无卡模式运行',
  run: '实例运行',
  bandwidth: '公网带宽',
  dataDisk: '数据盘扩容',
  diskResize: '数据盘扩容补差',
  arrears: '欠费结清',
  other: '其他费用',
} as const;
export type UsageLineKind = keyof typeof USAGE_LINE_LABELS;
export const UsageLineKind = {
  map: USAGE_LINE_LABELS as Record<UsageLineKind, string>,
  values: Object.keys(USAGE_LINE_LABELS) as [UsageLineKind, ...UsageLineKind[]],
  label: (kind: UsageLineKind): string => USAGE_LINE_LABELS[kind],
};

/**
 * One line of a post-paid (按量计费) bill, built from the ledger's charges of the order: a run
 * segment (GPU time, no-card time; with its bandwidth share when bandwidth is charged), the data-disk
 * hours (rate: its daily price), a data-disk resize, arrears paid later. `amount` is what the ledger took for it.
 */
export const usageLineSchema = z.object({
  kind: z.enum(UsageLineKind.values),
  label: z.string().describe('费用项，如 GPU 运行、无卡模式运行、数据盘扩容'),
  resource: z.string().describe('实例名'),
  detail: z.string().describe('说明，如 RTX 4090 × 1、50 GB × 3 小时'),
  start: z.string().nullable(),
  end: z.string().nullable(),
  seconds: z.number().int().nullable().describe('计费时长（秒）'),
  rate: moneySchema.nullable().describe('单价'),
  rateUnit: z.enum(['小时', '天']).nullable(),
  amount: moneySchema.describe('实扣金额（赠送金 + 现金）'),
  charges: z.number().int().describe('对应的扣费笔数（收支明细中的账目）'),
});
export type UsageLine = z.infer<typeof usageLineSchema>;
/** GET …/:order_uid/usage: a post-paid order's bill, line by line; the lines add up to `total`, what was taken. */
export const usageBillSchema = z.object({
  orderUid: z.string(),
  lines: z.array(usageLineSchema),
  total: moneySchema.describe('各项合计 = 订单实扣'),
  billing: z.boolean().describe('仍在计费中'),
});
export type UsageBill = z.infer<typeof usageBillSchema>;
export const orderPageSchema = pageOf(orderSchema);
export type OrderPage = z.infer<typeof orderPageSchema>;
export const orderListQuerySchema = pagingQuerySchema.extend({
  filterBy: z
    .string()
    .trim()
    .max(500)
    .optional()
    .describe('逗号连接的 key,value 对，如 status,Unpaid,kind,Ai。同一个 key 可重复，表示取其中任一值：kind,Personal,kind,default,type,NewBuy,type,Renew'),
});

/** A gateway QR for an order: what to scan, until when. */
export const orderQrSchema = z.object({
  method: gatewayMethodSchema,
  amount: moneySchema.describe('扫码支付金额（整分）'),
  qrContent: z.string(),
  expiresAt: z.string(),
  status: z.enum(['Pending', 'Succeeded', 'Closed']),
});
export type OrderQr = z.infer<typeof orderQrSchema>;

/** GET …/{order_uid}/pay: where the payment stands. */
export const orderPayStatusSchema = z.object({
  orderUid: z.string(),
  status: z.enum(OrderStatus.values),
  payment: orderQrSchema.nullable(),
});
export type OrderPayStatus = z.infer<typeof orderPayStatusSchema>;

/** What a resource package product is (from the operator's catalogue). */
export const resourceProductSchema = z.object({
  id: z.string(),
  name: z.string(),
  unit: z.string(),
  quantity: z.string().describe('每份数量'),
  price: moneySchema,
  validDays: z.number().int(),
  description: z.string(),
  /** A GPU-hour package: its card type, and what its hours cost at that card's hourly rate (the discount is against it). */
  gpuTypeId: z.string().nullable().optional(),
  listPrice: moneySchema.nullable().optional(),
});
export type ResourceProduct = z.infer<typeof resourceProductSchema>;
export const resourceProductListSchema = z.object({ items: z.array(resourceProductSchema) });

export const resourcePackageSchema = z.object({
  id: z.string(),
  name: z.string(),
  unit: z.string(),
  total: z.string().describe('总量（单位见 unit；卡时可带 4 位小数）'),
  remain: z.string().describe('剩余量（卡时精确到毫秒计量，显示向下取到 0.0001 小时）'),
  gpuTypeId: z.string().nullable().describe('卡时包抵扣的 GPU 型号；null 为 Token 包'),
  expired: z.boolean().describe('已过期：不再抵扣'),
  expiresAt: z.string(),
  createdAt: z.string(),
  orderUid: z.string(),
});
export type ResourcePackage = z.infer<typeof resourcePackageSchema>;
export const resourcePackageListSchema = z.object({ items: z.array(resourcePackageSchema) });

/** What a package paid for (/compute/detail): an instance's post-paid run, a model call, a LoRA job or an image task. */
export const RESOURCE_USAGE_KINDS = { instance: '实例按量运行', model: '大模型调用', train: 'LoRA 训练', gen: 'AI 绘图' } as const;
export const resourceUsageSchema = z.object({
  kind: z.enum(Object.keys(RESOURCE_USAGE_KINDS) as [keyof typeof RESOURCE_USAGE_KINDS, ...(keyof typeof RESOURCE_USAGE_KINDS)[]]),
  /** The instance, call, job or task id. */
  ref: z.string(),
  amount: z.string().describe('抵扣量（单位同资源包；卡时可带 4 位小数）'),
  createdAt: z.string(),
});
export type ResourceUsage = z.infer<typeof resourceUsageSchema>;
export const resourcePackageParamsSchema = z.object({ id: z.uuid({ error: '资源包 ID 格式不正确' }) });
