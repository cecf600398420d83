/**
 * 发票: an account holder asks for a VAT invoice over money it actually paid in; the operator issues
 * it (with the invoice number) or rejects it (with a reason); a pending request may be cancelled.
 */
import { z } from 'zod';
import { emailSchema, moneySchema, pageOf, pagingQuerySchema } from './common.js';
import { yuanInputSchema } from './money.js';

function labelled<T extends string>(map: Record<T, string>) {
  return { values: Object.keys(map) as T[], label: (v: T) => map[v], map };
}

export const InvoiceKind = labelled({ normal: '增值税普通发票', special: '增值税专用发票' });
export type InvoiceKind = keyof typeof InvoiceKind.map;
export const InvoiceTitleType = labelled({ personal: '个人', enterprise: '企业' });
export type InvoiceTitleType = keyof typeof InvoiceTitleType.map;
export const InvoiceStatus = labelled({ Pending: '待开票', Issued: '已开票', Rejected: '已驳回', Cancelled: '已取消' });
export type InvoiceStatus = keyof typeof InvoiceStatus.map;
export const InvoiceStatusColor: Record<InvoiceStatus, 'gold' | 'green' | 'red' | 'default'> = {
  Pending: 'gold',
  Issued: 'green',
  Rejected: 'red',
  Cancelled: 'default',
};

/** GB 32100-2015 统一社会信用代码: its alphabet (no I, O, Z, S, V) and the weights of the check character. */
const USCC_CHARS = '0123456789ABCDEFGHJKLMNPQRTUWXY';
const USCC_WEIGHTS = [1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28];

/** Whether an 18-character code is a 统一社会信用代码 whose last character is its GB 32100 check character. */
export function isUnifiedSocialCreditCode(code: string): boolean {
  if (!/^[0-9A-HJ-NPQRTUWXY]{18}$/.test(code)) return false;
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += USCC_CHARS.indexOf(code[i]!) * USCC_WEIGHTS[i]!;
  const check = (31 - (sum % 31)) % 31;
  return code[17] === USCC_CHARS[check];
}

/**
 * 纳税人识别号: 15 (old tax registration number), 18 (统一社会信用代码, check character verified) or
 * 20 alphanumerics (a person's ID number plus a suffix). Upper case.
 */
export function isValidTaxNo(taxNo: string): boolean {
  if (taxNo.length === 18) return isUnifiedSocialCreditCode(taxNo);
  return /^[0-9A-Z]{15}$/.test(taxNo) || /^[0-9A-Z]{20}$/.test(taxNo);
}

export const TAX_NO_MESSAGE = '纳税人识别号须为 15、18 或 20 位字母或数字；18 位统一社会信用代码须通过校验位校验';

export const invoiceRequestSchema = z
  .object({
    kind: z.enum(InvoiceKind.values, { error: '请选择发票类型' }),
    titleType: z.enum(InvoiceTitleType.values, { error: '请选择抬头类型' }),
    title: z.string({ error: '请输入发票抬头' }).trim().min(2, { error: '发票抬头至少 2 个字' }).max(100, { error: '发票抬头最多 100 个字' }),
    taxNo: z.string().trim().toUpperCase().max(20, { error: TAX_NO_MESSAGE }).default(''),
    email: emailSchema.describe('接收电子发票的邮箱'),
    amount: yuanInputSchema.refine((v) => /[1-9]/.test(v), { error: '开票金额须大于 0' }).describe('开票金额（元），不超过可开票金额'),
  })
  .superRefine((v, ctx) => {
    if (v.titleType === 'enterprise' && !v.taxNo) ctx.addIssue({ code: 'custom', path: ['taxNo'], message: '企业抬头须填写纳税人识别号' });
    else if (v.taxNo && !isValidTaxNo(v.taxNo)) ctx.addIssue({ code: 'custom', path: ['taxNo'], message: TAX_NO_MESSAGE });
    if (v.kind === 'special' && v.titleType !== 'enterprise') ctx.addIssue({ code: 'custom', path: ['titleType'], message: '增值税专用发票仅能开给企业抬头' });
  });
export type InvoiceRequest = z.input<typeof invoiceRequestSchema>;

export const invoiceSchema = z.object({
  id: z.string(),
  kind: z.enum(InvoiceKind.values),
  titleType: z.enum(InvoiceTitleType.values),
  title: z.string(),
  taxNo: z.string(),
  email: z.string(),
  amount: moneySchema,
  status: z.enum(InvoiceStatus.values),
  invoiceNo: z.string().nullable().describe('发票号码（已开票）'),
  rejectReason: z.string().nullable().describe('驳回原因（已驳回）'),
  createdAt: z.string(),
  closedAt: z.string().nullable().describe('开票、驳回或取消的时间'),
});
export type Invoice = z.infer<typeof invoiceSchema>;
export const invoicePageSchema = pageOf(invoiceSchema);
export type InvoicePage = z.infer<typeof invoicePageSchema>;

/** The operator's view of a request: whose it is. */
export const operatorInvoiceSchema = invoiceSchema.extend({ userId: z.string(), mobile: z.string() });
export type OperatorInvoice = z.infer<typeof operatorInvoiceSchema>;
export const operatorInvoicePageSchema = pageOf(operatorInvoiceSchema);
export type OperatorInvoicePage = z.infer<typeof operatorInvoicePageSchema>;

export const invoiceListQuerySchema = pagingQuerySchema.extend({
  status: z.enum(InvoiceStatus.values, { error: '状态须为 Pending、Issued、Rejected 或 Cancelled' }).optional(),
});

/**
 * What may still be invoiced: the cash consumed (spent on orders and post-paid charges, less refunds
 * back to the balance), at most the money paid in through gateways less refunds out, less what is
 * invoiced or pending.
 */
export const invoiceableSchema = z.object({
  invoiceable: moneySchema.describe('可开票金额'),
  paidIn: moneySchema.describe('充值与扫码支付实付到账'),
  refunded: moneySchema.describe('已退回原支付渠道'),
  consumed: moneySchema.describe('现金消费（订单与按量计费，扣除退款退回余额的部分）'),
  invoiced: moneySchema.describe('已开票'),
  pending: moneySchema.describe('待开票'),
});
export type Invoiceable = z.infer<typeof invoiceableSchema>;

export const invoiceIdParamsSchema = z.object({ id: z.uuid({ error: '发票申请编号格式不正确' }) });
export const invoiceIssueSchema = z.object({
  invoiceNo: z
    .string({ error: '请输入发票号码' })
    .trim()
    .regex(/^[0-9A-Za-z-]{8,32}$/, { error: '发票号码须为 8-32 位字母、数字或连字符' }),
});
export const invoiceRejectSchema = z.object({
  reason: z.string({ error: '请填写驳回原因' }).trim().min(2, { error: '驳回原因至少 2 个字' }).max(200, { error: '驳回原因最多 200 字' }),
});
