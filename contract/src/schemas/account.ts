/**
 * Accounts beyond login: real-name certification, student verification, child accounts
 * and the operator's reviews. The identity-number checks live here so the web form and the server
 * reject exactly the same inputs.
 */
import { z } from 'zod';
import { CertStatus, CertType, EducationLevel, PERMISSION_FLAGS, SpendLimitPeriod, type PermissionFlag } from '../enums.js';
import { mobileSchema, moneySchema, pagingQuerySchema, passwordSchema, smsCodeSchema, type PageOf } from './common.js';

// --- GB 11643: citizen identity number -------------------------------------------------------

const ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const ID_CHECK = '10X98765432';
/** First two digits of the province-level divisions that issue identity numbers (GB/T 2260). */
const ID_PROVINCES = new Set([
  11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83,
]);

/** Why an 18-character resident identity number is not valid, or null when it is. */
export function residentIdProblem(raw: string, today: Date = new Date()): string | null {
  const id = raw.trim().toUpperCase();
  if (!/^\d{17}[\dX]$/.test(id)) return '身份证号须为 18 位，最后一位可以是数字或 X';
  if (!ID_PROVINCES.has(Number(id.slice(0, 2)))) return '身份证号的地区码不正确';
  const y = Number(id.slice(6, 10));
  const m = Number(id.slice(10, 12));
  const d = Number(id.slice(12, 14));
  const birth = new Date(Date.UTC(y, m - 1, d));
  if (y < 1900 || birth.getUTCMonth() !== m - 1 || birth.getUTCDate() !== d) return '身份证号中的出生日期不正确';
  if (birth.getTime() > today.getTime()) return '身份证号中的出生日期不能晚于今天';
  const sum = ID_WEIGHTS.reduce((acc, w, i) => acc + w * Number(id[i]), 0);
  if (ID_CHECK[sum % 11] !== id[17]) return '身份证号校验位不正确，请核对后重新输入';
  return null;
}

// --- GB 32100: unified social credit code ----------------------------------------------------

const USCC_CHARS = '0123456789ABCDEFGHJKLMNPQRTUWXY';
const USCC_WEIGHTS = [1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28];

/** The check character GB 32100 puts in position 18 of the 17 characters before it. */
export function creditCodeCheckChar(first17: string): string {
  const sum = USCC_WEIGHTS.reduce((acc, w, i) => acc + w * USCC_CHARS.indexOf(first17[i]!), 0);
  return USCC_CHARS[(31 - (sum % 31)) % 31]!;
}

/** Why a unified social credit code is not valid, or null when it is. */
export function creditCodeProblem(raw: string): string | null {
  const code = raw.trim().toUpperCase();
  if (code.length !== 18) return '统一社会信用代码须为 18 位';
  if (![...code].every((c) => USCC_CHARS.includes(c))) return '统一社会信用代码含有无效字符（不使用 I、O、Z、S、V）';
  if (!/^[1-9A-GY][1-9]\d{6}/.test(code)) return '统一社会信用代码的登记管理部门、机构类别或地区码不正确';
  if (creditCodeCheckChar(code.slice(0, 17)) !== code[17]) return '统一社会信用代码校验位不正确，请核对后重新输入';
  return null;
}

// --- Certification ----------------------------------------------------------------------------

/**
 * One application (personal or enterprise) moves through spec §4's statuses:
 * submit → Init (filled in), confirm → Pending (sent to the verifier or the operator),
 * the verifier or operator decides → Succeed | Failed; a Failed application may be submitted again.
 */
export const CERT_TRANSITIONS = {
  submit: { from: ['none', 'Init', 'Failed'], to: 'Init' },
  upload: { from: ['Init'], to: 'Init' },
  confirm: { from: ['Init'], to: 'Pending' },
  approve: { from: ['Pending'], to: 'Succeed' },
  reject: { from: ['Pending'], to: 'Failed' },
} as const satisfies Record<string, { from: readonly (CertStatusValue | 'none')[]; to: CertStatusValue }>;
export type CertAction = keyof typeof CERT_TRANSITIONS;
type CertStatusValue = (typeof CertStatus.values)[number];

export function canCert(action: CertAction, from: CertStatusValue | 'none'): boolean {
  return (CERT_TRANSITIONS[action].from as readonly string[]).includes(from);
}

const trimmed = (label: string, max: number) =>
  z
    .string({ error: `请输入${label}` })
    .trim()
    .min(1, { error: `请输入${label}` })
    .max(max, { error: `${label}不能超过 ${max} 个字符` });

export const realNameSchema = trimmed('真实姓名', 30).regex(/^[\u3400-\u9fff·•A-Za-z ]{2,30}$/u, { error: '姓名须为 2-30 个汉字或字母' });

export const residentIdSchema = z
  .string({ error: '请输入身份证号' })
  .trim()
  .transform((v) => v.toUpperCase())
  .superRefine((v, ctx) => {
    const problem = residentIdProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const creditCodeSchema = z
  .string({ error: '请输入统一社会信用代码' })
  .trim()
  .transform((v) => v.toUpperCase())
  .superRefine((v, ctx) => {
    const problem = creditCodeProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const personalCertifySchema = z.object({ name: realNameSchema, idNumber: residentIdSchema });
export type PersonalCertify = z.infer<typeof personalCertifySchema>;

export const enterpriseCertifySchema = z.object({
  companyName: trimmed('企业名称', 100).min(2, { error: '企业名称至少 2 个字符' }),
  creditCode: creditCodeSchema,
  legalPerson: realNameSchema,
  contactName: trimmed('联系人', 30),
  contactMobile: mobileSchema,
});
export type EnterpriseCertify = z.infer<typeof enterpriseCertifySchema>;

const applicationBase = {
  status: z.enum(CertStatus.values),
  reason: z.string().describe('未通过的原因'),
  submittedAt: z.string().nullable(),
  decidedAt: z.string().nullable(),
};

export const certifyInfoSchema = z.object({
  certType: z.enum(CertType.values),
  certStatus: z.enum(CertStatus.values),
  certified: z.boolean(),
  personal: z.object({ ...applicationBase, name: z.string().describe('脱敏姓名'), idNumber: z.string().describe('脱敏身份证号') }).nullable(),
  enterprise: z
    .object({
      ...applicationBase,
      companyName: z.string(),
      creditCode: z.string(),
      legalPerson: z.string(),
      contactName: z.string(),
      contactMobile: z.string(),
      licenceUploaded: z.boolean(),
    })
    .nullable(),
});
export type CertifyInfo = z.infer<typeof certifyInfoSchema>;

/** Largest business-licence / student-card image accepted (bytes). */
export const REVIEW_IMAGE_MAX_BYTES = 5 * 1024 * 1024;

// --- Student verification ----------------------------------------------------------------------

/** Addresses of schools: *.edu.cn, *.edu, *.ac.cn and the like. */
export const SCHOOL_EMAIL = /^[^\s@]+@([a-z0-9-]+\.)*(edu|ac)(\.[a-z]{2})?$/i;

export const schoolEmailSchema = z
  .string({ error: '请输入学校邮箱' })
  .trim()
  .toLowerCase()
  .max(254, { error: '邮箱过长' })
  .regex(SCHOOL_EMAIL, { error: '请使用学校邮箱（如 name@xxx.edu.cn）' });

export const studentEmailCodeSchema = z.object({ email: schoolEmailSchema });

const year = (label: string) =>
  z
    .number({ error: `请选择${label}` })
    .int({ error: `${label}须为整数年份` })
    .min(1950, { error: `${label}不正确` })
    .max(2100, { error: `${label}不正确` });

export const studentVerificationRequestSchema = z
  .object({
    school: trimmed('学校名称', 60).min(2, { error: '学校名称至少 2 个字符' }),
    level: z.enum(EducationLevel.values, { error: '请选择学历：博士、硕士、本科、专科或其他' }),
    enrollYear: year('入学年份'),
    graduateYear: year('毕业年份'),
    email: schoolEmailSchema,
    code: smsCodeSchema,
  })
  .refine((v) => v.graduateYear >= v.enrollYear, { error: '毕业年份不能早于入学年份', path: ['graduateYear'] })
  .refine((v) => v.graduateYear - v.enrollYear <= 10, { error: '在读年限不能超过 10 年', path: ['graduateYear'] });
export type StudentVerificationRequest = z.infer<typeof studentVerificationRequestSchema>;

export const studentVerificationSchema = z.object({
  status: z.enum(CertStatus.values),
  isStudent: z.boolean(),
  school: z.string(),
  level: z.enum(EducationLevel.values).nullable(),
  enrollYear: z.number().int().nullable(),
  graduateYear: z.number().int().nullable(),
  email: z.string(),
  emailVerified: z.boolean(),
  imageUploaded: z.boolean(),
  reason: z.string(),
  submittedAt: z.string().nullable(),
  decidedAt: z.string().nullable(),
  discountRate: z.string().describe('学生价折扣，如 0.9；1 表示无优惠'),
});
export type StudentVerification = z.infer<typeof studentVerificationSchema>;

// --- Child accounts --------------------------------------------------------------------------

export const childNameSchema = z
  .string({ error: '请输入子账号名' })
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9_]{2,19}$/, { error: '子账号名须为 3-20 位字母、数字或下划线，以字母开头' });

const permissionsShape = Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, z.boolean().optional()])) as Record<PermissionFlag, z.ZodOptional<z.ZodBoolean>>;
export const childPermissionsSchema = z.strictObject(permissionsShape, {
  error: (i) => (i.code === 'unrecognized_keys' ? `未知的权限：${i.keys.join('、')}` : undefined),
});
export type ChildPermissions = Partial<Record<PermissionFlag, boolean>>;

/**
 * A child's spending limit, set by its parent: what the child may take from the parent's balance
 * (gift credit and cash; vouchers do not count) per Beijing calendar month or in total. null: unlimited.
 */
export const spendLimitSchema = z.object({
  amount: z
    .string({ error: '请输入额度' })
    .regex(/^\d{1,15}$/, { error: '额度须为不小于 0 的整数（单位 0.0001 元）' })
    .describe('额度，单位 0.0001 元的整数字符串'),
  period: z.enum(SpendLimitPeriod.values, { error: '额度周期须为 Month（每月）或 Total（累计）' }),
});
export type SpendLimit = z.infer<typeof spendLimitSchema>;

export const createChildSchema = z.object({
  childName: childNameSchema,
  password: passwordSchema,
  remark: z.string().trim().max(50, { error: '备注不能超过 50 个字符' }).optional(),
  permissions: childPermissionsSchema.default({}),
  spendLimit: spendLimitSchema.nullable().optional().describe('消费额度，null 或不填为不限'),
});
export const updateChildSchema = z.object({
  remark: z.string().trim().max(50, { error: '备注不能超过 50 个字符' }).optional(),
  disabled: z.boolean().optional(),
  permissions: childPermissionsSchema.optional(),
  spendLimit: spendLimitSchema.nullable().optional().describe('消费额度；null 为不限，不填为不变'),
});
export const childPasswordSchema = z.object({ password: passwordSchema });
export const childIdParamsSchema = z.object({ id: z.uuid({ error: '子账号编号格式不正确' }) });

export const childSchema = z.object({
  id: z.string(),
  childName: z.string(),
  remark: z.string(),
  disabled: z.boolean(),
  permissions: z.object(Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, z.boolean()])) as Record<PermissionFlag, z.ZodBoolean>),
  createdAt: z.string(),
  lastLoginAt: z.string().nullable(),
  spendLimit: spendLimitSchema.nullable().describe('消费额度，null 为不限'),
  spent: z
    .object({ month: moneySchema.describe('本月（北京时间自然月）消费'), total: moneySchema.describe('累计消费') })
    .describe('子账号创建的订单从主账号余额扣除的金额（赠送金与现金，不含代金券；整单退款的不计）'),
});
export type Child = z.infer<typeof childSchema>;
export type ChildPage = PageOf<typeof childSchema>;

/** A child logs in with its parent's mobile number, its own name and its password. */
export const childLoginSchema = z.object({
  parentMobile: mobileSchema,
  childName: z.string({ error: '请输入子账号名' }).trim().min(1, { error: '请输入子账号名' }).max(20, { error: '子账号名过长' }),
  password: z.string({ error: '请输入密码' }).min(1, { error: '请输入密码' }).max(128, { error: '密码过长' }),
});
export type ChildLogin = z.infer<typeof childLoginSchema>;

// --- Operator reviews ------------------------------------------------------------------------

export const ReviewKind = { enterprise: '企业认证', student: '学生认证' } as const;
export type ReviewKind = keyof typeof ReviewKind;

export const reviewDecisionSchema = z.discriminatedUnion(
  'decision',
  [
    z.object({ decision: z.literal('approve') }),
    z.object({
      decision: z.literal('reject'),
      reason: z.string({ error: '请填写驳回原因' }).trim().min(2, { error: '驳回原因至少 2 个字符' }).max(200, { error: '驳回原因不能超过 200 个字符' }),
    }),
  ],
  { error: 'decision 须为 approve 或 reject' },
);
export type ReviewDecision = z.infer<typeof reviewDecisionSchema>;
/** …/reviews/:kind/:id: an enterprise certification by its id, a student application by its user's. */
export const reviewParamsSchema = z.object({
  kind: z.enum(['enterprise', 'student'], { error: 'kind 须为 enterprise 或 student' }),
  id: z.uuid({ error: '申请编号格式不正确' }),
});

export const reviewItemSchema = z.object({
  id: z.string(),
  kind: z.enum(['enterprise', 'student']),
  userId: z.string(),
  mobile: z.string(),
  status: z.enum(CertStatus.values),
  submittedAt: z.string().nullable(),
  decidedAt: z.string().nullable(),
  reason: z.string(),
  /** What the operator compares against the image. */
  fields: z.array(z.object({ label: z.string(), value: z.string() })),
  imageUrl: z.string().describe('营业执照或学生证图片（运营方可见）'),
});
export type ReviewItem = z.infer<typeof reviewItemSchema>;
export type ReviewItemPage = PageOf<typeof reviewItemSchema>;

export const operatorUserSchema = z.object({
  id: z.string(),
  mobile: z.string(),
  email: z.string(),
  accountType: z.string(),
  certType: z.enum(CertType.values),
  certStatus: z.enum(CertStatus.values),
  isStudent: z.boolean(),
  isOperator: z.boolean(),
  disabled: z.boolean(),
  children: z.number().int(),
  createdAt: z.string(),
});
export type OperatorUser = z.infer<typeof operatorUserSchema>;
export type OperatorUserPage = PageOf<typeof operatorUserSchema>;

export const reviewLogSchema = z.object({
  id: z.string(),
  kind: z.enum(['personal', 'enterprise', 'student']),
  userMobile: z.string(),
  decision: z.enum(['approve', 'reject']),
  reason: z.string(),
  actor: z.string().describe('运营方手机号，或“实名核验服务”'),
  createdAt: z.string(),
});
export type ReviewLogEntry = z.infer<typeof reviewLogSchema>;
export type ReviewLogPage = PageOf<typeof reviewLogSchema>;

export const reviewQuerySchema = pagingQuerySchema.extend({
  kind: z.enum(['enterprise', 'student'], { error: 'kind 须为 enterprise 或 student' }),
  status: z.enum(CertStatus.values).optional(),
});
export const operatorUserQuerySchema = pagingQuerySchema.extend({ q: z.string().trim().max(50).optional() });

/** `npm run operator -- grant|revoke <mobile>`: give or take the operator role of a main account. */
export const operatorRoleSchema = z.object({ mobile: mobileSchema, isOperator: z.boolean({ error: 'isOperator 须为 true 或 false' }) });
export type OperatorRoleRequest = z.infer<typeof operatorRoleSchema>;
export const operatorRoleResultSchema = z.object({
  userId: z.string(),
  mobile: z.string(),
  isOperator: z.boolean().describe('此后是否为运营方（OPERATOR_MOBILES 中的号码收回后仍是）'),
});
export type OperatorRoleResult = z.infer<typeof operatorRoleResultSchema>;
