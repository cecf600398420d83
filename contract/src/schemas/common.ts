import { z } from 'zod';

/** Mainland mobile number: 11 digits starting with 1[3-9]. */
export const mobileSchema = z
  .string({ error: '请输入手机号' })
  .trim()
  .regex(/^1[3-9]\d{9}$/, { error: '请输入正确的 11 位手机号' })
  .describe('手机号');

export const emailSchema = z
  .string({ error: '请输入邮箱' })
  .trim()
  .toLowerCase()
  .max(254, { error: '邮箱过长' })
  .pipe(z.email({ error: '请输入正确的邮箱地址' }))
  .describe('邮箱');

export const smsCodeSchema = z
  .string({ error: '请输入验证码' })
  .trim()
  .regex(/^\d{6}$/, { error: '验证码为 6 位数字' })
  .describe('6 位数字验证码');

/** At least 8 and at most 32 characters, with both letters and digits. */
export const PASSWORD_RULE = { min: 8, max: 32 } as const;
export const passwordSchema = z
  .string({ error: '请输入密码' })
  .min(PASSWORD_RULE.min, { error: `密码至少 ${PASSWORD_RULE.min} 位` })
  .max(PASSWORD_RULE.max, { error: `密码最多 ${PASSWORD_RULE.max} 位` })
  .describe('8-32 位，同时包含字母和数字');

export function isStrongPassword(password: string): boolean {
  return (
    password.length >= PASSWORD_RULE.min && password.length <= PASSWORD_RULE.max && /[A-Za-z]/.test(password) && /\d/.test(password) && !/\s/.test(password)
  );
}

export const errorBodySchema = z
  .object({
    code: z.number().int().describe('8 位业务码，前三位为 HTTP 状态'),
    message: z.string().describe('给用户看的中文说明'),
    detail: z.string().optional().describe('具体原因'),
  })
  .describe('错误');

/** Money in 0.0001-yuan units as a decimal string. */
export const moneySchema = z
  .string()
  .regex(/^-?\d+$/)
  .describe('金额，单位 0.0001 元的整数字符串');

export const okSchema = z.object({ ok: z.literal(true) });
/** GET /healthz: 200 when the database answers, 503 when it does not. */
export const healthOkSchema = z.object({ status: z.literal('ok'), database: z.string() });
export const healthDownSchema = z.object({ status: z.literal('down'), database: z.string() });
/** GET /livez: 200 while the process's event loop turns; asks nothing of the database. */
export const livenessSchema = z.object({ status: z.literal('alive') });
/**
 * GET /readyz: 200 when this replica should get traffic, 503 otherwise. Each check: the database
 * answered a trivial query in time, every migration of this version is applied, the process is not
 * stopping; `reasons` says in Chinese what is not ready.
 */
export const readinessSchema = z.object({
  status: z.enum(['ready', 'unready']),
  database: z.string(),
  checks: z.object({
    database: z.enum(['ok', 'down', 'timeout']),
    migrations: z.enum(['ok', 'pending', 'unknown']),
    stopping: z.boolean(),
  }),
  reasons: z.array(z.string()),
});
export type Readiness = z.infer<typeof readinessSchema>;
/** GET /files/*: the stored file's key. */
export const fileParamsSchema = z.object({ '*': z.string().max(500) });

/** A list response as DESIGN.md fixes it. */
export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), total: z.number().int(), page: z.number().int(), pageSize: z.number().int() });
}
/** The inferred type of `pageOf(item)`: one page of a list of that item. */
export type PageOf<T extends z.ZodType> = z.infer<ReturnType<typeof pageOf<T>>>;

/**
 * A number field: a JSON number, or — from a query string or a form — a string of plain decimal
 * digits. Anything else (true, [2], "0x1", "1e0", "") is refused with the field's own message, where
 * z.coerce.number would have taken it as a number.
 */
export function numeric<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v), schema);
}

export const pagingQuerySchema = z.object({
  page: numeric(z.number().int().min(1).max(100000)).default(1),
  pageSize: numeric(z.number().int().min(1).max(100)).default(10),
});
