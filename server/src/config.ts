/**
 * Configuration from environment variables, validated once at start. A bad value stops the
 * server with a message naming the variable, instead of failing later in a request.
 */
import { createPrivateKey } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_CATALOGUE_FILE } from './modules/catalogue/index.js';
import { chooseComputeDriver, COMPUTE_DRIVER_NAMES, type ComputeDriverName, type SandboxProbe } from './drivers/compute/index.js';
import { parseAllowNets } from './drivers/compute/local/network-policy.js';
import { NOTICE_KINDS, type NoticeKind } from '@console/contract';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no'], { error: '应为 true 或 false' }).transform((v) => ['true', '1', 'yes'].includes(v));

const envSchema = z.object({
  PORT: z.coerce.number({ error: '应为端口号' }).int().min(0).max(65535).default(8080),
  /** Loopback by default: a developer's `npm start` is reachable from that machine only, with dev tools on. */
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  /** `/dev/outbox`, `/dev/compute` and the sandbox scan page: unset, on only on a loopback or private HOST (devToolsDecision). */
  DEV_TOOLS: bool.optional(),
  /** Relative paths are taken from where the command was typed (npm runs workspace scripts elsewhere); default: the repository's data/. */
  DATA_DIR: z.string().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { error: '应为 postgres://user:pass@host:port/db 形式' })
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Where the limits every replica shares are counted (drivers/counters). Unset: in PostgreSQL (DATABASE_URL), or in memory on the embedded database. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/[^\s/]+(\/\d{1,2})?$/, { error: '应为 redis://[:密码@]主机:端口[/库号] 形式（TLS 用 rediss://）' })
    .optional(),
  /** On SIGTERM: how long /readyz says 503 while requests are still served, so the load balancer stops sending any (default: shutdownDrainMs). */
  SHUTDOWN_DRAIN_MS: z.coerce.number({ error: '应为毫秒数' }).int().min(0).max(300_000).optional(),
  /** On SIGTERM: from the signal, how long requests in flight may take before they are cut (below the orchestrator's grace period: Kubernetes 30 s). */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number({ error: '应为毫秒数' }).int().min(100).max(600_000).default(25_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** auto: readable lines when standard output is a terminal, JSON lines otherwise (log-format.ts). */
  LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
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
  /**
   * The approved template of each kind of notice sent by Aliyun SMS, e.g.
   * "StoppedForArrears=SMS_1001,ReleaseCountdown=SMS_1002" (kinds: contract NOTICE_KINDS). A kind
   * without one goes by e-mail and 站内信 only (logged once).
   */
  ALIYUN_SMS_NOTICE_TEMPLATES: z
    .string()
    .default('')
    .transform((v, ctx) => parseNoticeTemplates(v, ctx)),
  /** A payer is told once when the spendable balance would not pay their running post-paid instances for this many hours. */
  NOTICE_BALANCE_LOW_HOURS: z.coerce.number().int().min(1).max(720).default(2),
  MAIL_DRIVER: z.enum(['outbox', 'smtp']).default('outbox'),
  SMTP_URL: z.string().optional(),
  MAIL_FROM: z.string().default('算力云 <no-reply@example.com>'),
  CODE_IP_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(30),
  /** Failed password logins one address may make over all accounts in 15 minutes (behind a proxy, set TRUST_PROXY so this is per client). */
  LOGIN_IP_FAILURE_LIMIT: z.coerce.number().int().min(1).max(100000).default(50),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(2 * 1024 * 1024),
  /** Where uploads are kept: `local` files under DATA_DIR/files (one process); `s3` an S3-compatible bucket every replica reads (drivers/storage/s3.ts). */
  STORAGE_DRIVER: z.enum(['local', 's3']).default('local'),
  /** Unset: AWS S3. Aliyun OSS, Tencent COS, MinIO, Ceph RGW: their S3 endpoint. */
  S3_ENDPOINT: z.url({ protocol: /^https?$/, error: '应为 http(s)://host[:port] 形式' }).optional(),
  /** Where browsers reach the store for signed downloads, when not at S3_ENDPOINT (an in-cluster MinIO behind an ingress). */
  S3_PUBLIC_ENDPOINT: z.url({ protocol: /^https?$/, error: '应为 http(s)://host[:port] 形式' }).optional(),
  S3_REGION: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: '应为区域名，如 us-east-1、cn-hangzhou、ap-guangzhou' })
    .default('us-east-1'),
  S3_BUCKET: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: '应为 3–63 位小写字母、数字、. 或 - 组成的存储桶名' })
    .optional(),
  S3_ACCESS_KEY_ID: z.string().trim().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  /** Path-style addressing (endpoint/bucket/key): MinIO and Ceph RGW without wildcard DNS. */
  S3_FORCE_PATH_STYLE: bool.default(false),
  /** Put before every key ("console-a"): several consoles in one bucket. */
  S3_PREFIX: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9._-]+)*\/?$/, { error: '应为字母、数字、. _ - 组成的路径，如 console-a 或 prod/console' })
    .optional(),
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
  /**
   * Where instances run: `local` sandboxes on this host (drivers/compute/local); `simulated` the embedded
   * fleet (sim_* tables, /dev/compute); `agent` a host-agent controller over HTTPS (drivers/compute/agent.ts);
   * `auto` local where bubblewrap works, otherwise simulated (chooseComputeDriver).
   */
  COMPUTE_DRIVER: z.enum([...COMPUTE_DRIVER_NAMES, 'auto']).default('auto'),
  /** Where the consoles on this host record the uid ranges their local machines run as (drivers/compute/local/host-uids.ts). */
  LOCAL_HOST_UIDS_DIR: z.string().trim().min(1).optional(),
  /** As root where machines cannot have uids of their own: run them as the server's uid instead of refusing to start them. */
  LOCAL_MACHINES_AS_SERVER_USER: bool.default(false),
  /** 文件存储: the free space of each account's file tree (mounted at /root/shared in its local instances), in GB. */
  FILESTORE_QUOTA_GB: z.coerce.number({ error: '应为整数（GB）' }).int().min(1).max(100_000).default(20),
  /**
   * Local instances reach the internet but neither this host's own addresses nor private ranges
   * (drivers/compute/local/network-policy.ts); these comma-separated addresses or CIDR ranges they reach after all.
   */
  SANDBOX_ALLOW_NETS: z
    .string()
    .default('')
    .transform((v, ctx) => {
      try {
        return parseAllowNets(v);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return [];
      }
    }),
  /** The SSH gateway into instances whose driver gives shells (local): `ssh -p <port> root@<PUBLIC_BASE_URL's host>`; 0: any free port. */
  SSH_GATEWAY_PORT: z.coerce.number({ error: '应为端口号' }).int().min(0).max(65535).default(2222),
  /**
   * The SSH gateway's host key (PEM). Replicas behind one address must share it, or `ssh` warns that the host's identity
   * changed whenever it lands on another replica; unset: one made once under DATA_DIR (ssh_host_rsa_key).
   */
  SSH_HOST_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || sshHostKeyParses(v), { error: '应为 PEM 格式的私钥（如 ssh-keygen -m PEM -t rsa 生成的）' }),
  /**
   * JupyterLab and 自定义服务 are served on a listener of their own (MACHINE_PORT), never on the console's
   * origin: a page a machine serves must not read the console's storage or call its API as the user.
   * 0: any free port; unset: the one after PORT.
   */
  MACHINE_PORT: z.coerce.number({ error: '应为端口号' }).int().min(0).max(65535).optional(),
  /**
   * Where browsers reach that listener, `{id}` standing for the instance: `https://{id}.m.example.com`
   * (wildcard DNS and certificate) gives every instance an origin of its own. Unset: `{id}.localhost:MACHINE_PORT`
   * when PUBLIC_BASE_URL is on localhost (browsers resolve it to this machine), otherwise its host at
   * MACHINE_PORT, one origin shared by all instances (machineOrigins).
   */
  MACHINE_BASE_URL: z
    .url({ protocol: /^https?$/, error: '应为 http(s)://host[:port] 形式，可含 {id}' })
    .refine((v) => !v.includes('{id}') || /^https?:\/\/\{id\}\./.test(v), { error: '{id} 只能作为主机名的第一段，如 https://{id}.m.example.com' })
    .refine((v) => /^https?:\/\/[^/?#]+\/?$/.test(v), { error: '只写协议、主机和端口，不带路径' })
    .optional(),
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
  /**
   * The operator's image registry (Harbor, Aliyun ACR, a distribution server): http(s)://host[:port][/project].
   * Local hosts pull images from it into their OCI layout and push saved images to it
   * (drivers/compute/local/oci/registry.ts); http:// speaks plain HTTP. Unset: images live in DATA_DIR's layout only.
   */
  REGISTRY_URL: z
    .url({ protocol: /^https?$/, error: '应为 http(s)://host[:port][/路径] 形式' })
    .refine((v) => !/[?#]/.test(v), { error: '不能带查询参数或 #' })
    .optional(),
  /** The registry login, given to skopeo in a private file (never on a command line). */
  REGISTRY_USER: z.string().min(1).optional(),
  REGISTRY_PASSWORD: z.string().min(1).optional(),
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
  /** COMPUTE_DRIVER=fleet: how long a host's agent may miss heartbeats before its instances show 主机异常 (drivers/compute/fleet.ts). */
  FLEET_HOST_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
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
  /** The embedded model's output pace in tokens per second (default 40). */
  MODEL_EMBEDDED_TOKENS_PER_SECOND: z.coerce.number().int().min(1).max(1_000_000).optional(),
  /** The embedded image backend's pace: how many times faster than an RTX 4090 its LoRA jobs run (demonstrations, tests). */
  IMAGE_BACKEND_SPEEDUP: z.coerce.number().min(0.01).max(100_000).default(1),
  /**
   * A ComfyUI server (http://host:8188) that makes the images: txt2img tasks and /comfyui workflows.
   * Unset: the embedded painter and the embedded ComfyUI on a loopback port.
   */
  COMFYUI_URL: z.string().url().optional(),
  /** ComfyUI's models/loras folder as the console sees it (a shared disk): the accounts' own LoRAs are put there. Unset: only public LoRAs with COMFYUI_URL. */
  COMFYUI_LORA_DIR: z.string().min(1).optional(),
  /**
   * Who trains LoRAs: `embedded` (this machine's CPU, the reference card's pace) or `kohya` (kohya
   * sd-scripts on a GPU machine: the instance KOHYA_INSTANCE_ID through the compute driver, or this
   * host when unset).
   */
  TRAINER_DRIVER: z.enum(['embedded', 'kohya']).default('embedded'),
  KOHYA_INSTANCE_ID: z.uuid({ error: 'KOHYA_INSTANCE_ID 应为实例 ID' }).optional(),
  KOHYA_SCRIPTS_DIR: z.string().min(1).default('/opt/sd-scripts'),
  KOHYA_WORK_DIR: z.string().min(1).default('/root/console-train'),
  KOHYA_ACCELERATE: z.string().min(1).default('accelerate'),
  KOHYA_SD15_MODEL: z.string().min(1).default('/opt/models/v1-5-pruned-emaonly.safetensors'),
  KOHYA_SDXL_MODEL: z.string().min(1).default('/opt/models/sd_xl_base_1.0.safetensors'),
  /** LoRA jobs the image backend runs at once (all processes together); more wait 排队中. */
  TRAINER_CAPACITY: z.coerce.number().int().min(1).max(64).default(2),
  /** Image generation tasks the backend runs at once (all processes together). */
  PAINTER_CAPACITY: z.coerce.number().int().min(1).max(64).default(2),
  /** How often running LoRA jobs and image generations are moved forward (and their live pages read). */
  IMAGE_BACKEND_TICK_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  /** Days the model gateway's call log is kept (their hourly sums stay for the stats). */
  MODEL_CALL_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
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
  /** Credits, debits and refunds above this (yuan) by an operator who is not 管理员 wait for a second operator's approval. */
  OPERATOR_APPROVAL_THRESHOLD_YUAN: z.coerce.number().int().min(0).max(100_000_000).default(1000),
});

/** "Kind=SMS_123,Kind2=SMS_456": each kind a NoticeKind, each code an Aliyun template code, each kind once. */
function parseNoticeTemplates(v: string, ctx: z.RefinementCtx): Partial<Record<NoticeKind, string>> {
  const out: Partial<Record<NoticeKind, string>> = {};
  for (const part of v
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z]+)\s*=\s*(\S+)$/.exec(part);
    const kind = m?.[1] as NoticeKind | undefined;
    if (!m || !kind || !(NOTICE_KINDS as readonly string[]).includes(kind)) {
      ctx.addIssue({ code: 'custom', message: `「${part}」应为 类型=模板编号，类型为 ${NOTICE_KINDS.join('、')} 之一` });
      continue;
    }
    if (!/^SMS_\d{1,20}$/.test(m[2]!)) ctx.addIssue({ code: 'custom', message: `${kind} 的模板编号「${m[2]}」应为 SMS_ 加数字，如 SMS_123456789` });
    else if (out[kind]) ctx.addIssue({ code: 'custom', message: `${kind} 重复配置了模板` });
    else out[kind] = m[2]!;
  }
  return out;
}

export type Config = Omit<z.infer<typeof envSchema>, 'COMPUTE_DRIVER'> & {
  /** The driver in use (`auto` resolved) and why, for the start-up log. */
  COMPUTE_DRIVER: ComputeDriverName;
  computeDriverReason: string;
  /** The machine listener's port: MACHINE_PORT, or the one after PORT. */
  machinePort: number;
  /** SHUTDOWN_DRAIN_MS, or 5 s — none on a loopback HOST (a developer's Ctrl-C: no load balancer to tell). */
  shutdownDrainMs: number;
  seedDemo: boolean;
  webDist: string;
  dataDir: string;
  catalogueFile: string;
  publicBaseUrl: string;
  /** Whether the embedded stand-ins' dev tools exist (devToolsDecision), and why, for the start-up log. */
  devTools: boolean;
  devToolsReason: string;
};

export class ConfigError extends Error {}

/** Without a probe nothing on the host is run: COMPUTE_DRIVER=auto then means the simulated fleet. */
const NOT_PROBED: SandboxProbe = () => ({ ok: false, why: '未检查本机能否创建沙箱' });

/**
 * Reads the environment; nothing else. Whether the host can run sandboxes (COMPUTE_DRIVER=auto) is the
 * local driver's to find out: the server's entry points pass its probe (drivers/compute/local/sandbox.ts bwrapWorks).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, probeSandboxes: SandboxProbe = NOT_PROBED): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`配置有误，请检查环境变量：\n${lines.join('\n')}`);
  }
  const compute = chooseComputeDriver(parsed.data.COMPUTE_DRIVER, probeSandboxes);
  const c = { ...parsed.data, COMPUTE_DRIVER: compute.name };
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
  requireTogether(c.STORAGE_DRIVER === 's3', 'STORAGE_DRIVER=s3', { S3_BUCKET: c.S3_BUCKET });
  // Both keys, or neither (the SDK's own chain: AWS_* variables, web identity, instance role).
  requireTogether(Boolean(c.S3_ACCESS_KEY_ID || c.S3_SECRET_ACCESS_KEY), '设置了 S3_ACCESS_KEY_ID 或 S3_SECRET_ACCESS_KEY', {
    S3_ACCESS_KEY_ID: c.S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY: c.S3_SECRET_ACCESS_KEY,
  });
  requireTogether(c.REALNAME_DRIVER === 'aliyun', 'REALNAME_DRIVER=aliyun', {
    ALIYUN_REALNAME_ACCESS_KEY_ID: c.ALIYUN_REALNAME_ACCESS_KEY_ID,
    ALIYUN_REALNAME_ACCESS_KEY_SECRET: c.ALIYUN_REALNAME_ACCESS_KEY_SECRET,
  });
  const devTools = devToolsDecision(c);
  if (c.PAYMENT_DRIVER === 'sandbox' && !devTools.on) {
    throw new ConfigError(
      `配置有误：PAYMENT_DRIVER=sandbox（内置沙箱支付）只能靠开发工具中的沙箱支付页完成付款，而开发工具已关闭（${devTools.reason}）。` +
        '对外提供服务请设置 PAYMENT_DRIVER=real 并配置支付宝 / 微信支付；仅作演示或测试时设置 DEV_TOOLS=true，或让 HOST 只监听本机或内网地址。',
    );
  }
  return {
    ...c,
    computeDriverReason: compute.why,
    machinePort: c.MACHINE_PORT ?? (c.PORT && c.PORT < 65535 ? c.PORT + 1 : 0),
    shutdownDrainMs: shutdownDrain(c),
    devTools: devTools.on,
    devToolsReason: devTools.reason,
    dataDir: c.DATA_DIR ? path.resolve(env.INIT_CWD ?? process.cwd(), c.DATA_DIR) : fileURLToPath(new URL('../../data', import.meta.url)),
    // Demo data is for the embedded database; a real PostgreSQL gets it only when asked.
    seedDemo: c.SEED_DEMO ?? !c.DATABASE_URL,
    publicBaseUrl: (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/$/, ''),
    catalogueFile: path.resolve(c.CATALOGUE_FILE ?? DEFAULT_CATALOGUE_FILE),
    webDist: path.resolve(c.WEB_DIST ?? new URL('../../web/dist', import.meta.url).pathname),
  };
}

/**
 * The one decision about the embedded stand-ins that hand out secrets or money — `/dev/outbox`
 * (anyone's verification codes), `/dev/compute` (the simulated fleet's faults) and the sandbox scan
 * page (marks an order paid): DEV_TOOLS=true or false decides; unset, they are on only while an
 * embedded driver is in use and the server listens on a loopback or private address. 0.0.0.0 and
 * :: (every interface) and host names other than localhost are public: going live with the tools
 * takes DEV_TOOLS=true. Each tool also exists only while its own driver is the embedded one.
 */
export function devToolsDecision(c: {
  HOST: string;
  DEV_TOOLS?: boolean;
  SMS_DRIVER: string;
  MAIL_DRIVER: string;
  PAYMENT_DRIVER: string;
  COMPUTE_DRIVER: string;
}): { on: boolean; reason: string } {
  if (c.DEV_TOOLS === true) return { on: true, reason: '已设置 DEV_TOOLS=true' };
  if (c.DEV_TOOLS === false) return { on: false, reason: '已设置 DEV_TOOLS=false' };
  const embedded = [
    c.SMS_DRIVER === 'outbox' && 'SMS_DRIVER=outbox',
    c.MAIL_DRIVER === 'outbox' && 'MAIL_DRIVER=outbox',
    c.PAYMENT_DRIVER === 'sandbox' && 'PAYMENT_DRIVER=sandbox',
    c.COMPUTE_DRIVER === 'simulated' && 'COMPUTE_DRIVER=simulated',
  ].filter((v): v is string => Boolean(v));
  if (!embedded.length) return { on: false, reason: '未使用任何内置驱动' };
  if (!isLoopbackOrPrivate(c.HOST)) return { on: false, reason: `HOST=${c.HOST} 不是本机或内网地址，需要时设置 DEV_TOOLS=true` };
  return { on: true, reason: `HOST=${c.HOST} 是本机或内网地址，且使用内置驱动（${embedded.join('、')}）` };
}

/** Loopback (127/8, ::1, localhost) or private (10/8, 172.16/12, 192.168/16, 169.254/16, fc00::/7, fe80::/10); a listen-on-all address is neither. */
export function isLoopbackOrPrivate(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)?.[1];
  if (mapped) return isLoopbackOrPrivate(mapped);
  if (isIP(h) === 4) {
    const [a, b] = h.split('.').map(Number) as [number, number];
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  if (isIP(h) === 6) return h === '::1' || /^f[cd][0-9a-f]{2}:/.test(h) || /^fe[89ab][0-9a-f]:/.test(h);
  return false;
}

function sshHostKeyParses(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType !== undefined;
  } catch {
    return false;
  }
}

function isHttpsOrLoopback(v: string): boolean {
  const u = URL.canParse(v) ? new URL(v) : null;
  if (!u) return false;
  return u.protocol === 'https:' || (u.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname));
}

/** The drain delay of a stop: what SHUTDOWN_DRAIN_MS says, else 5 s behind a load balancer and none on a loopback HOST; below the timeout. */
function shutdownDrain(c: { HOST: string; SHUTDOWN_DRAIN_MS?: number; SHUTDOWN_TIMEOUT_MS: number }): number {
  const host = c.HOST.trim().toLowerCase();
  const loopback = host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
  const drain = c.SHUTDOWN_DRAIN_MS ?? (loopback ? 0 : Math.min(5000, Math.floor(c.SHUTDOWN_TIMEOUT_MS / 2)));
  if (drain >= c.SHUTDOWN_TIMEOUT_MS) {
    throw new ConfigError(
      `配置有误：SHUTDOWN_DRAIN_MS（${drain}）应小于 SHUTDOWN_TIMEOUT_MS（${c.SHUTDOWN_TIMEOUT_MS}）：停止时先等待负载均衡摘除本副本，再在剩下的时间里完成进行中的请求`,
    );
  }
  return drain;
}

function requireTogether(active: boolean, why: string, values: Record<string, string | undefined>) {
  if (!active) return;
  const missing = Object.entries(values)
    .filter(([, v]) => !v)
    .map(([k]) => k);
  if (missing.length) throw new ConfigError(`配置有误：${why} 时必须设置 ${missing.join('、')}`);
}
