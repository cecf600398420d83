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
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).optional(),
});
export type PayOrderRequest = z.infer<typeof payOrderRequestSchema>;

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
  status: z.enum(OrderStatus.values),
  description: z.string(),
  amount: moneySchema.describe('应付（代金券前）'),
  voucherDeduction: moneySchema,
  payMethod: z.enum(PaymentMethod.values).nullable(),
  paid: z.array(orderPaymentPartSchema).describe('实付构成：代金券、赠送金、现金'),
  quote: orderPriceSchema,
  resourceId: z.string().nullable(),
  failReason: z.string().nullable(),
  expiresAt: z.string(),
  paidAt: z.string().nullable(),
  fulfilledAt: z.string().nullable(),
  refundedAt: z.string().nullable(),
  createdAt: z.string(),
});
export type Order = z.infer<typeof orderSchema>;
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
