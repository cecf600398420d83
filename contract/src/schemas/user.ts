import { z } from 'zod';
import { AccountType, CertStatus, CertType, EmailScene, SmsScene } from '../enums.js';
import { emailSchema, mobileSchema, moneySchema, passwordSchema, smsCodeSchema } from './common.js';
import { giftItemSchema } from './money.js';

export const smsCodeRequestSchema = z.object({
  mobile: mobileSchema,
  scene: z.enum(SmsScene.values, { error: '场景必须是 register、login、mobile 或 reset' }),
});
export type SmsCodeRequest = z.infer<typeof smsCodeRequestSchema>;

export const emailCodeRequestSchema = z.object({
  email: emailSchema,
  scene: z.enum(EmailScene.values, { error: '场景必须是 email' }),
});

export const codeSentSchema = z.object({
  expiresIn: z.number().int().describe('验证码有效期（秒）'),
  resendIn: z.number().int().describe('多少秒后可再次获取'),
});
export type CodeSent = z.infer<typeof codeSentSchema>;

export const registerValidateSchema = z.object({ mobile: mobileSchema, code: smsCodeSchema });
/** Registration needs the visitor's consent to the operator's 用户协议 and 隐私政策 (GET /api/v1/site/agreements/:kind). */
export const AGREEMENT_REQUIRED_MESSAGE = '请阅读并同意用户协议和隐私政策';
export const registerSchema = z.object({
  mobile: mobileSchema,
  code: smsCodeSchema,
  password: passwordSchema,
  agreed: z.literal(true, { error: AGREEMENT_REQUIRED_MESSAGE }).describe('已阅读并同意用户协议和隐私政策（须为 true）'),
});
export type RegisterRequest = z.infer<typeof registerSchema>;

export const loginByPasswordSchema = z.object({
  account: z.string({ error: '请输入手机号或邮箱' }).trim().min(1, { error: '请输入手机号或邮箱' }).max(254, { error: '账号过长' }),
  password: z.string({ error: '请输入密码' }).min(1, { error: '请输入密码' }).max(128, { error: '密码过长' }),
});
export const loginByCodeSchema = z.object({ mobile: mobileSchema, code: smsCodeSchema });
export const loginSchema = z.union([loginByPasswordSchema, loginByCodeSchema], {
  error: '请提供 account 与 password，或 mobile 与 code',
});
export type LoginRequest = z.infer<typeof loginSchema>;

export const passwordResetSchema = z.object({ mobile: mobileSchema, code: smsCodeSchema, password: passwordSchema });
export const changePasswordSchema = z.object({
  oldPassword: z.string({ error: '请输入原密码' }).min(1, { error: '请输入原密码' }).max(128),
  password: passwordSchema,
});
export const changeMobileSchema = z.object({ mobile: mobileSchema, code: smsCodeSchema });
export const changeEmailSchema = z.object({ email: emailSchema, code: smsCodeSchema });

/** The user object of spec §3 as the server sends it. Money fields arrive with the money domain. */
export const userSchema = z.object({
  id: z.string(),
  logo: z.string(),
  certStatus: z.enum(CertStatus.values),
  certType: z.enum(CertType.values),
  accountType: z.enum(AccountType.values),
  createAt: z.string().describe('ISO 8601'),
  credit: z.number().int().describe('信用分'),
  from: z.string().describe('注册来源'),
  mobile: z.string(),
  email: z.string(),
  name: z.string(),
  nickname: z.string(),
  childName: z.string(),
  isStudent: z.boolean(),
  isChild: z.boolean(),
  certified: z.boolean(),
  userVersion: z.number().int(),
  firstVisit: z.boolean(),
  openModal: z.boolean(),
  isOperator: z.boolean(),
  createGPUInstance: z.boolean(),
  createImageAPP: z.boolean(),
  openYunBucket: z.boolean(),
  gpu: z.boolean(),
  app: z.boolean(),
  image: z.boolean(),
  usingLLM: z.boolean(),
  finance: z.boolean().describe('财务权限：子账号可查看主账号的余额、充值记录、全部账单与操作日志（主账号总是 true）'),
  // The money fields of spec §3 (the payer's: a child account with the finance permission sees its
  // parent's, one without sees none). me/info sends them (userInfoSchema); login, register and profile
  // edits answer without them and the console reads me/info next.
  cash: moneySchema.optional().describe('现金余额'),
  obtained: z.boolean().optional().describe('已领取新人赠送金'),
  recharged: moneySchema.optional().describe('累计充值'),
  remain: moneySchema.optional().describe('有效赠送金合计：只计 remain > 0、未过期且 status 为 1 的赠送金'),
  renewStatus: z.boolean().optional().describe('有待续期（status 0）的赠送金'),
  expireAt: z.string().nullable().optional().describe('最早到期的有效赠送金的到期时间'),
  gift: z.array(giftItemSchema).optional().describe('赠送金明细，最早到期在前'),
});
export type User = z.infer<typeof userSchema>;

/**
 * GET /userapi/api/v2.1/users/me/info: the user with its money fields, which are the payer's. A child
 * account without the 财务 (finance) permission gets none of them: its parent's money is not its to see.
 */
export const userInfoSchema = userSchema;
export type UserInfo = z.infer<typeof userInfoSchema>;

export const authResultSchema = z.object({ token: z.string(), user: userSchema });
export type AuthResult = z.infer<typeof authResultSchema>;

export const outboxItemSchema = z.object({
  to: z.string(),
  channel: z.enum(['sms', 'email']),
  text: z.string(),
  code: z.string(),
  createdAt: z.string(),
});
export const outboxQuerySchema = z.object({ to: z.string().trim().min(1, { error: '请提供 to（手机号或邮箱）' }).max(254) });
export const outboxResponseSchema = z.object({ items: z.array(outboxItemSchema) });
export type OutboxResponse = z.infer<typeof outboxResponseSchema>;

/** The largest balance floor: 100,000 yuan, in 0.0001 yuan units. */
export const BALANCE_FLOOR_MAX_UNITS = 1_000_000_000n;

/**
 * GET / PUT /userapi/api/v2.1/users/me/balance-floor (余额保底, a main account's setting): when the
 * spendable balance (cash + gift credit) falls below `floor`, the billing tick stops the account's
 * running post-paid instances, before the balance is empty. Child accounts spend the parent's
 * balance, so the parent's floor applies to them. `null` is off.
 */
export const balanceFloorSchema = z.object({
  floor: z
    .string({ error: '保底金额须为金额字符串（单位 0.0001 元）或 null' })
    .trim()
    .regex(/^\d{1,10}$/, { error: '保底金额须为 0 到 100000 元之间的金额（单位 0.0001 元的整数）' })
    // Checked only once the format holds (zod runs every check): BigInt('1.5') would throw.
    .refine((v) => !/^\d{1,10}$/.test(v) || BigInt(v) <= BALANCE_FLOOR_MAX_UNITS, { error: '保底金额最多 100000 元' })
    .nullable()
    .describe('保底金额，单位 0.0001 元的整数字符串；null 为不设保底'),
});
export type BalanceFloor = z.infer<typeof balanceFloorSchema>;
