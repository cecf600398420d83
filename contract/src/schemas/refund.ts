/**
 * Refunds to the original payment method (退回原支付渠道): the operator asks for part or all of a
 * gateway payment back; the user sees each refund in the bill with its status.
 */
import { z } from 'zod';
import { moneySchema, pageOf, pagingQuerySchema } from './common.js';
import { gatewayMethodSchema, yuanInputSchema } from './money.js';

/** A refund's life: 退款中 until the gateway says it is done, then 已退款, or 退款失败 (the money is back in cash). */
const REFUND_STATUS_LABELS = { Processing: '退款中', Succeeded: '已退款', Failed: '退款失败' } as const;
export type RefundStatus = keyof typeof REFUND_STATUS_LABELS;
export const RefundStatus = {
  map: REFUND_STATUS_LABELS as Record<RefundStatus, string>,
  values: Object.keys(REFUND_STATUS_LABELS) as RefundStatus[],
  label: (s: RefundStatus): string => REFUND_STATUS_LABELS[s],
};
export const refundStatusSchema = z.enum(['Processing', 'Succeeded', 'Failed']);

/** POST /api/v1/operator/refunds. */
export const refundRequestSchema = z.object({
  outTradeNo: z
    .string({ error: '请填写交易号' })
    .trim()
    .regex(/^[A-Za-z0-9_]{1,32}$/, { error: '交易号格式不正确' })
    .describe('要退款的支付的商户交易号（充值或订单的扫码支付）'),
  amount: yuanInputSchema.refine((v) => /[1-9]/.test(v), { error: '退款金额须大于 0' }).describe('本次退款金额（元），不超过该笔支付尚未退还的金额'),
  reason: z.string({ error: '请填写退款原因' }).trim().min(2, { error: '退款原因至少 2 个字' }).max(80, { error: '退款原因最多 80 字' }),
  /** The caller's id for this refund: a retried request refunds once. */
  requestId: z.uuid({ error: 'requestId 须为 UUID' }),
});
export type RefundRequest = z.infer<typeof refundRequestSchema>;

export const refundSchema = z.object({
  id: z.string().describe('退款编号（即请求的 requestId）'),
  refundNo: z.string().describe('发给支付渠道的退款请求号'),
  outTradeNo: z.string().describe('原支付的商户交易号'),
  method: gatewayMethodSchema,
  amount: moneySchema.describe('退回原支付渠道的金额'),
  bonusTaken: moneySchema.describe('按退款比例收回的充值赠送金（赠送金不足时从现金扣除的部分也计在内）'),
  reason: z.string(),
  status: refundStatusSchema,
  statusText: z.string().describe('退款中 / 已退款 / 退款失败'),
  failReason: z.string(),
  createdAt: z.string(),
  settledAt: z.string().nullable(),
});
export type Refund = z.infer<typeof refundSchema>;
export const refundPageSchema = pageOf(refundSchema);
export type RefundPage = z.infer<typeof refundPageSchema>;
/** POST answers the refund and whether it had already been asked under this requestId. */
export const refundResultSchema = refundSchema.extend({ replayed: z.boolean() });

export const refundListQuerySchema = pagingQuerySchema.extend({
  outTradeNo: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_]{1,32}$/, { error: '交易号格式不正确' })
    .optional(),
});
