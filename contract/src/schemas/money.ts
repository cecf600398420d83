import { z } from 'zod';
import { moneySchema, pageOf, pagingQuerySchema, type PageOf, numeric } from './common.js';

/** GET /billing/api/v1/user/money: what the header and the balance page show. */
export const userMoneySchema = z.object({
  cash: moneySchema.describe('现金余额'),
  gift: moneySchema.describe('赠送金余额'),
  voucher: moneySchema.describe('代金券余额'),
  deposit: moneySchema.describe('押金'),
  available: moneySchema.describe('可用于支付：现金 + 赠送金'),
});
export type UserMoney = z.infer<typeof userMoneySchema>;

export const gatewayMethodSchema = z.enum(['Alipay', 'Wechat'], { error: '支付方式必须是 Alipay 或 Wechat' });

/** Yuan as a person types it, to the fen: "100", "99.9", "0.01". */
export const yuanInputSchema = z
  .string({ error: '请输入金额' })
  .trim()
  .regex(/^\d{1,9}(\.\d{1,2})?$/, { error: '金额须为数字，最多两位小数' })
  .describe('金额（元），最多两位小数');

export const rechargeRequestSchema = z.object({ amount: yuanInputSchema, method: gatewayMethodSchema });
export type RechargeRequest = z.infer<typeof rechargeRequestSchema>;

export const rechargeSchema = z.object({
  id: z.string(),
  amount: moneySchema,
  bonus: moneySchema.describe('到账后赠送的赠送金'),
  method: gatewayMethodSchema,
  status: z.enum(['Unpaid', 'Paid', 'Expired', 'Cancelled']),
  outTradeNo: z.string(),
  qrContent: z.string().describe('二维码内容：用支付宝/微信扫码'),
  expiresAt: z.string(),
  paidAt: z.string().nullable(),
  createdAt: z.string(),
});
export type Recharge = z.infer<typeof rechargeSchema>;
export const rechargePageSchema = pageOf(rechargeSchema);
export type RechargePage = z.infer<typeof rechargePageSchema>;
export const rechargeIdParamsSchema = z.object({ id: z.uuid({ error: '充值编号格式不正确' }) });

/** What the recharge page offers, from the operator's configuration. */
export const rechargeOptionsSchema = z.object({
  min: moneySchema,
  max: moneySchema,
  presets: z.array(moneySchema),
  bonusRate: z.string().describe('充值赠送比例，如 0.18'),
  giftValidDays: z.number().int(),
  paymentTimeoutMinutes: z.number().int(),
});
export type RechargeOptions = z.infer<typeof rechargeOptionsSchema>;

export const voucherSchema = z.object({
  id: z.string(),
  name: z.string(),
  amount: moneySchema,
  minSpend: moneySchema,
  categories: z.array(z.string()).describe('适用产品，空为全部'),
  status: z.enum(['Unused', 'Used', 'Expired', 'Revoked']),
  validFrom: z.string(),
  expiresAt: z.string(),
});
export type Voucher = z.infer<typeof voucherSchema>;
export const vouchersQuerySchema = z.object({ usable: z.enum(['true', 'false']).optional(), category: z.string().trim().max(20).optional() });
export const vouchersResponseSchema = z.object({ items: z.array(voucherSchema) });
/** The header's 代金券 figure: how many usable vouchers, worth how much together. */
export const voucherSummarySchema = z.object({ count: z.number().int(), total: moneySchema });
export type VoucherSummary = z.infer<typeof voucherSummarySchema>;

/**
 * What each kind of ledger transfer means to the account holder: the one label map of the
 * statement (收支明细). The server posts only these kinds (its TransferInput is typed by them).
 */
const TRANSFER_KIND_LABELS = {
  gateway_in: '充值到账',
  gift_grant: '赠送金发放',
  voucher_grant: '代金券发放',
  compensation: '平台补偿',
  order: '订单支付',
  usage: '按量计费',
  refund: '订单退款',
  gift_expire: '赠送金过期',
  voucher_expire: '代金券过期',
  refund_out: '退回原支付渠道',
  refund_back: '退款失败退回',
  refund_settle: '退款完成',
  model_hold: '大模型调用预扣',
  model_usage: '大模型调用结算',
  train_hold: 'LoRA 训练预扣',
  train_usage: 'LoRA 训练结算',
  train_release: 'LoRA 训练退回',
  diffusion_hold: 'AI 绘图预扣',
  diffusion_usage: 'AI 绘图结算',
  diffusion_release: 'AI 绘图退回',
} as const;
export type TransferKind = keyof typeof TRANSFER_KIND_LABELS;
export const TransferKind = {
  map: TRANSFER_KIND_LABELS as Record<TransferKind, string>,
  values: Object.keys(TRANSFER_KIND_LABELS) as TransferKind[],
  /** The Chinese label; a kind this version does not know reads 其他收支, never the raw code. */
  label: (kind: string): string => (Object.hasOwn(TRANSFER_KIND_LABELS, kind) ? TRANSFER_KIND_LABELS[kind as TransferKind] : '其他收支'),
};

export const statementKindSchema = z.enum(['cash', 'gift', 'voucher', 'deposit'], { error: '账户须为 cash、gift、voucher 或 deposit' });
export const statementQuerySchema = pagingQuerySchema.extend({ kind: statementKindSchema.default('cash') });
/** Which account a statement lists. */
export type StatementKind = z.infer<typeof statementQuerySchema>['kind'];

/**
 * One row of a statement. Post-paid charges (transfers of kind usage) are rolled up per instance
 * and Beijing hour: `group` names the roll-up (its ledger entries come from the group endpoint),
 * `entries` counts them, `amount` is their sum and `balanceAfter` the balance after the last one.
 * Any other entry is a row of its own (`group` null, `entries` 1).
 */
export const statementEntrySchema = z.object({
  id: z.number().int().describe('账目编号；汇总行为其中最后一条的编号'),
  amount: moneySchema,
  balanceAfter: moneySchema,
  kind: z.string().describe('流水类型，中文名见 TransferKind'),
  memo: z.string(),
  orderId: z.string().nullable(),
  createdAt: z.string().describe('发生时间；汇总行为其中最后一条的时间'),
  group: z.string().nullable().describe('按量计费汇总行的编号（实例 + 北京时间小时）；单条流水为 null'),
  entries: z.number().int().describe('汇总的账目条数'),
  periodStart: z.string().nullable().describe('汇总行所在小时的开始（ISO 8601）'),
});
export type StatementEntry = z.infer<typeof statementEntrySchema>;
export const statementPageSchema = pageOf(statementEntrySchema);
export type StatementPage = z.infer<typeof statementPageSchema>;
/** GET …/user/statement/group: the ledger entries under one roll-up row, newest first. */
export const statementGroupQuerySchema = pagingQuerySchema.extend({
  kind: statementKindSchema.default('cash'),
  group: z
    .string({ error: '请指定汇总行' })
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}@\d{10}$/, { error: '汇总行编号格式不正确' })
    .describe('汇总行的 group'),
});

/** A gift-credit item (spec §3): counts toward remain only if remain > 0, not expired and status 1. */
export const giftItemSchema = z.object({
  id: z.string(),
  source: z.string(),
  amount: moneySchema,
  remain: moneySchema,
  expireAt: z.string(),
  status: z.union([z.literal(0), z.literal(1)]).describe('1 生效，0 待续期'),
  createdAt: z.string(),
});
/** The gift fields of the user (spec §3) with the items. */
export const giftListSchema = z.object({
  items: z.array(giftItemSchema),
  remain: moneySchema.describe('有效赠送金合计'),
  obtained: z.boolean().describe('已领取新人赠送金'),
  recharged: moneySchema.describe('累计充值'),
  renewStatus: z.boolean().describe('有待续期的赠送金'),
  expireAt: z.string().nullable().describe('最早到期的有效赠送金的到期时间'),
});
export type GiftList = z.infer<typeof giftListSchema>;
export const giftEligibilitySchema = z.object({
  eligible: z.boolean(),
  obtained: z.boolean(),
  amount: moneySchema,
  validDays: z.number().int(),
  reason: z.string().describe('不能领取时的原因'),
});
export type GiftEligibility = z.infer<typeof giftEligibilitySchema>;
export const giftIdParamsSchema = z.object({ id: z.uuid({ error: '赠送金编号格式不正确' }) });

/** An operator's adjustment: compensation to a user's cash or gift credit, with the reason recorded. */
export const operatorCreditSchema = z.object({
  mobile: z
    .string()
    .trim()
    .regex(/^1[3-9]\d{9}$/, { error: '请输入正确的 11 位手机号' }),
  amount: yuanInputSchema,
  reason: z.string({ error: '请填写原因' }).trim().min(2, { error: '原因至少 2 个字' }).max(200, { error: '原因最多 200 字' }),
  to: z.enum(['cash', 'gift']).default('cash'),
  giftValidDays: numeric(z.number().int().min(1).max(3650)).default(365),
  /** The caller's id for this adjustment: a retried request credits once. */
  requestId: z.uuid({ error: 'requestId 须为 UUID' }),
});
export type OperatorCredit = z.infer<typeof operatorCreditSchema>;
export const operatorCreditResultSchema = z.object({
  userId: z.string(),
  mobile: z.string(),
  to: z.enum(['cash', 'gift']),
  amount: moneySchema,
  balance: moneySchema.describe('调整后的该账户余额'),
  replayed: z.boolean(),
});

/** One daily data-disk charge (storage bill detail): what was paid for one instance's disk beyond its free size, for one day. */
export const storageChargeSchema = z.object({
  id: z.string(),
  instanceId: z.string(),
  instanceName: z.string().describe('实例名（已释放的实例也保留）'),
  periodStart: z.string().describe('计费时段开始（ISO 8601）：按小时扣费的一小时（此前按天扣费的为一天）'),
  memo: z.string(),
  amount: moneySchema.describe('实付金额（现金 + 赠送金）'),
  chargedAt: z.string(),
});
export type StorageCharge = z.infer<typeof storageChargeSchema>;
export type StorageChargePage = PageOf<typeof storageChargeSchema>;
