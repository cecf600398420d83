/**
 * Configuration from environment variables, validated once at start. A bad value stops the
 * server with a message naming the variable, instead of failing later in a request.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_CATALOGUE_FILE } from './modules/catalogue/index.js';
import { COMPUTE_DRIVER_NAMES } from './drivers/compute/index.js';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no'], { error: '应为 true 或 false' }).transform((v) => ['true', '1', 'yes'].includes(v));

const envSchema = z.object({
  PORT: z.coerce.number({ error: '应为端口号' }).int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** Relative paths are taken from where the command was typed (npm runs workspace scripts elsewhere); default: the repository's data/. */
  DATA_DIR: z.string().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { error: '应为 postgres://user:pass@host:port/db 形式' })
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** 32 random bytes in base64url; when absent the key is generated once and kept in the database. */
  SESSION_SECRET: z
    .string()
    .refine((v) => Buffer.from(v, 'base64url').length === 32, { error: '应为 32 字节密钥的 base64url 编码' })
    .optional(),
  COOKIE_DOMAIN: z.string().optional(),
  COOKIE_SECURE: bool.default(false),
  TRUST_PROXY: bool.default(false),
  SEED_DEMO: bool.optional(),
  WEB_DIST: z.string().optional(),
  SMS_DRIVER: z.enum(['outbox', 'aliyun']).default('outbox'),
  ALIYUN_SMS_ACCESS_KEY_ID: z.string().optional(),
  ALIYUN_SMS_ACCESS_KEY_SECRET: z.string().optional(),
  ALIYUN_SMS_SIGN_NAME: z.string().optional(),
  ALIYUN_SMS_TEMPLATE_CODE: z.string().optional(),
  ALIYUN_SMS_ENDPOINT: z.string().url().default('https://dysmsapi.aliyuncs.com/'),
  MAIL_DRIVER: z.enum(['outbox', 'smtp']).default('outbox'),
  SMTP_URL: z.string().optional(),
  MAIL_FROM: z.string().default('算力云 <no-reply@example.com>'),
  CODE_IP_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(30),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(2 * 1024 * 1024),
  /** `sandbox`: the embedded gateway with its scan page; `real`: Alipay and WeChat Pay v3 as configured below. */
  PAYMENT_DRIVER: z.enum(['sandbox', 'real']).default('sandbox'),
  /** How payers' browsers and gateways reach this server (notify URLs, the sandbox scan page). */
  PUBLIC_BASE_URL: z
    .string()
    .regex(/^https?:\/\/[^/]+/, { error: '应为 http(s)://host[:port] 形式' })
    .optional(),
  ALIPAY_APP_ID: z.string().optional(),
  ALIPAY_PRIVATE_KEY: z.string().optional(),
  ALIPAY_PUBLIC_KEY: z.string().optional(),
  ALIPAY_GATEWAY: z.string().url().optional(),
  WECHAT_MCHID: z.string().optional(),
  WECHAT_APPID: z.string().optional(),
  WECHAT_SERIAL_NO: z.string().optional(),
  WECHAT_PRIVATE_KEY: z.string().optional(),
  WECHAT_APIV3_KEY: z.string().optional(),
  WECHAT_PLATFORM_CERT_SERIAL: z.string().optional(),
  WECHAT_PLATFORM_PUBLIC_KEY: z.string().optional(),
  WECHAT_BASE_URL: z.string().url().optional(),
  /** Where instances run: `simulated` is the embedded fleet (sim_* tables, /dev/compute); `agent` a host-agent controller over HTTPS (drivers/compute/agent.ts). */
  COMPUTE_DRIVER: z.enum(COMPUTE_DRIVER_NAMES).default('simulated'),
  /** The controller's base URL; plain http only to a loopback address (create carries SSH passwords). */
  COMPUTE_AGENT_URL: z
    .url({ error: '应为 https://host[:port][/path] 形式' })
    .refine((v) => isHttpsOrLoopback(v), { error: '必须是 https://（http:// 只允许 localhost / 127.0.0.1 / [::1]）' })
    .optional(),
  COMPUTE_AGENT_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, { error: '应为 1–64 位字母、数字或 . _ -' })
    .optional(),
  COMPUTE_AGENT_SECRET: z.string().min(32, { error: '至少 32 个字符' }).optional(),
  /** Milliseconds each simulated operation takes, e.g. "create=4000,boot=3000,stop=2000". */
  COMPUTE_SIM_DELAYS: z.string().optional(),
  COMPUTE_SIM_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/, { error: '应为域名' })
    .default('gpu.local'),
  /** Post-paid instances are charged this often; an instance runs on credit for at most one tick. */
  BILLING_TICK_SECONDS: z.coerce.number().int().min(5).max(3600).default(60),
  /** Prepaid instances with auto-renew on are renewed this many hours before they expire. */
  AUTO_RENEW_LEAD_HOURS: z.coerce.number().int().min(1).max(720).default(24),
  /** Share of the refundable amount kept as a fee when a prepaid instance is refunded early (0–0.5, at most 4 decimals). */
  PREPAID_REFUND_FEE_RATE: z
    .string()
    .regex(/^(0(\.\d{1,4})?|0?\.\d{1,4})$/, { error: '应为 0 到 0.5 之间、最多 4 位小数的比例，如 0.05' })
    .refine((v) => Number(v) <= 0.5, { error: '手续费比例不能超过 0.5' })
    .default('0'),
  /** How often driver events are read. */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  /** An operation without an outcome after this long is sent to the driver again. */
  COMPUTE_OP_RETRY_SECONDS: z.coerce.number().int().min(5).max(3600).default(120),
  /** The operator's catalogue (regions, GPU types, hosts, sizes, images, applications, prices). */
  CATALOGUE_FILE: z.string().optional(),
  /** Real-name verification: `sandbox` (embedded) or `aliyun` (cloudauth Id2MetaVerify). */
  REALNAME_DRIVER: z.enum(['sandbox', 'aliyun']).default('sandbox'),
  /** Identities the sandbox verifier fails: id numbers (no record) or "姓名:身份证号" (mismatch), comma-separated. */
  REALNAME_SANDBOX_REJECT: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ALIYUN_REALNAME_ACCESS_KEY_ID: z.string().optional(),
  ALIYUN_REALNAME_ACCESS_KEY_SECRET: z.string().optional(),
  ALIYUN_REALNAME_ENDPOINT: z.string().url().default('https://cloudauth.aliyuncs.com/'),
  /** Instance purchases need a certified account when true (spec §5's real-name gate). */
  REQUIRE_REALNAME_FOR_PURCHASE: bool.default(false),
  /** Most child accounts one main account may have. */
  CHILD_ACCOUNT_LIMIT: z.coerce.number().int().min(0).max(1000).default(20),
  /** Password hashes (scrypt) run at once; default one core fewer than the machine has (users/passwords.ts). */
  PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional(),
  /** Password hashes that may wait for a turn (default 64); one more is refused with 50300001. */
  PASSWORD_HASH_QUEUE: z.coerce.number().int().min(0).max(10000).optional(),
  OPERATOR_MOBILES: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
});

export type Config = z.infer<typeof envSchema> & { seedDemo: boolean; webDist: string; dataDir: string; catalogueFile: string; publicBaseUrl: string };

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`配置有误，请检查环境变量：\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  requireTogether(c.SMS_DRIVER === 'aliyun', 'SMS_DRIVER=aliyun', {
    ALIYUN_SMS_ACCESS_KEY_ID: c.ALIYUN_SMS_ACCESS_KEY_ID,
    ALIYUN_SMS_ACCESS_KEY_SECRET: c.ALIYUN_SMS_ACCESS_KEY_SECRET,
    ALIYUN_SMS_SIGN_NAME: c.ALIYUN_SMS_SIGN_NAME,
    ALIYUN_SMS_TEMPLATE_CODE: c.ALIYUN_SMS_TEMPLATE_CODE,
  });
  requireTogether(c.MAIL_DRIVER === 'smtp', 'MAIL_DRIVER=smtp', { SMTP_URL: c.SMTP_URL });
  requireTogether(c.COMPUTE_DRIVER === 'agent', 'COMPUTE_DRIVER=agent', {
    COMPUTE_AGENT_URL: c.COMPUTE_AGENT_URL,
    COMPUTE_AGENT_KEY_ID: c.COMPUTE_AGENT_KEY_ID,
    COMPUTE_AGENT_SECRET: c.COMPUTE_AGENT_SECRET,
  });
  requireTogether(c.REALNAME_DRIVER === 'aliyun', 'REALNAME_DRIVER=aliyun', {
    ALIYUN_REALNAME_ACCESS_KEY_ID: c.ALIYUN_REALNAME_ACCESS_KEY_ID,
    ALIYUN_REALNAME_ACCESS_KEY_SECRET: c.ALIYUN_REALNAME_ACCESS_KEY_SECRET,
  });
  return {
    ...c,
    dataDir: c.DATA_DIR ? path.resolve(env.INIT_CWD ?? process.cwd(), c.DATA_DIR) : fileURLToPath(new URL('../../data', import.meta.url)),
    // Demo data is for the embedded database; a real PostgreSQL gets it only when asked.
    seedDemo: c.SEED_DEMO ?? !c.DATABASE_URL,
    publicBaseUrl: (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/$/, ''),
    catalogueFile: path.resolve(c.CATALOGUE_FILE ?? DEFAULT_CATALOGUE_FILE),
    webDist: path.resolve(c.WEB_DIST ?? new URL('../../web/dist', import.meta.url).pathname),
  };
}

function isHttpsOrLoopback(v: string): boolean {
  const u = URL.canParse(v) ? new URL(v) : null;
  if (!u) return false;
  return u.protocol === 'https:' || (u.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname));
}

function requireTogether(active: boolean, why: string, values: Record<string, string | undefined>) {
  if (!active) return;
  const missing = Object.entries(values)
    .filter(([, v]) => !v)
    .map(([k]) => k);
  if (missing.length) throw new ConfigError(`配置有误：${why} 时必须设置 ${missing.join('、')}`);
}
