/**
 * `npm run compute-agent -w server`: the compute agent of one GPU host (issue 31 §2). It serves the
 * compute agent protocol (drivers/compute/agent.ts, and GET /v1/host: host-report.ts) on top of the
 * real local driver — the host's bubblewrap sandboxes, images and GPUs — or of the simulated fleet
 * (a stand-alone simulated controller for staging), with its own database. A console with
 * COMPUTE_DRIVER=fleet drives many of these, one per catalogue host (COMPUTE_DRIVER=agent: one).
 *
 *   COMPUTE_AGENT_KEY_ID, COMPUTE_AGENT_SECRET   required; what the console registered for this host
 *   COMPUTE_AGENT_DRIVER   local | simulated; default local where bubblewrap works, else simulated
 *   COMPUTE_AGENT_HOST_ID  the catalogue host this agent is (its machines' folder; the console routes
 *                          that host's machines here); default `local`
 *   COMPUTE_AGENT_PORT (8090), COMPUTE_AGENT_HOST (127.0.0.1)
 *   COMPUTE_AGENT_DATA_DIR  the agent's own folder: its PGlite, machines' disks, images (default data/compute-agent)
 *   COMPUTE_AGENT_DATABASE_URL   postgres://… for the agent's state instead of the PGlite
 *   COMPUTE_AGENT_SIMULATED_GPUS   staging and tests only: cards reported as present though the host has none
 *                          ("NVIDIA GeForce RTX 4090=2:24564", model=count[:memory MB], comma-separated), so the
 *                          market sells GPU machines on a host without GPUs; their machines get no device (模拟)
 *   FILESTORE_ROOT         the operator's shared file system, mounted at the same path on every host
 *                          and on the console: the accounts' 文件存储 trees (default <data dir>/filestore)
 *   FILESTORE_QUOTA_GB     as for the console: each tree an ext4 image of that size, only without
 *                          FILESTORE_ROOT (a tree on the shared file system is a plain folder)
 *   REGISTRY_URL, REGISTRY_USER, REGISTRY_PASSWORD   the operator's registry, as for the console: the
 *                          same on every host — saved images and 迁移 between hosts travel through it
 *   COMPUTE_AGENT_SSH_HOST, COMPUTE_AGENT_SSH_PORT   what machines report as their SSH address: the
 *                          console's SSH gateway (default 127.0.0.1:2222)
 *   COMPUTE_AGENT_TLS_CERT, COMPUTE_AGENT_TLS_KEY   PEM files: serve HTTPS (needed when the console
 *                          is not on the same machine: it accepts http only on loopback)
 *   COMPUTE_SIM_DELAYS, COMPUTE_SIM_DOMAIN, LOG_LEVEL   as for the console
 *
 * Nothing of this environment reaches a machine: the local driver starts sandboxes with a minimal
 * environment of its own (sandbox.ts HOST_ENV).
 */
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { systemClock } from '../clock.js';
import { openDatabase } from '../db/client.js';
import { computeAgentServer } from '../drivers/compute/agent-server.js';
import { SimulatedComputeDriver, parseSimDelays, type SimDelays } from '../drivers/compute/simulated.js';
import { localComputeDir, registryOptionsOf } from '../drivers/compute/index.js';
import { buildHostReport } from '../drivers/compute/host-report.js';
import { LocalComputeDriver } from '../drivers/compute/local/driver.js';
import { localGpuHost } from '../drivers/compute/local/gpus.js';
import { bwrapWorks } from '../drivers/compute/local/sandbox.js';
import type { ComputeDriver } from '../drivers/compute/types.js';
import { serverLoggerOptions } from '../log-format.js';

const envSchema = z.object({
  COMPUTE_AGENT_PORT: z.coerce.number({ error: '应为端口号' }).int().min(0).max(65535).default(8090),
  COMPUTE_AGENT_HOST: z.string().default('127.0.0.1'),
  COMPUTE_AGENT_KEY_ID: z.string({ error: '必须设置' }).regex(/^[A-Za-z0-9._-]{1,64}$/, { error: '应为 1–64 位字母、数字或 . _ -' }),
  COMPUTE_AGENT_SECRET: z.string({ error: '必须设置' }).min(32, { error: '至少 32 个字符' }),
  COMPUTE_AGENT_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, { error: '应为 postgres://user:pass@host:port/db 形式' })
    .optional(),
  COMPUTE_AGENT_DATA_DIR: z.string().optional(),
  COMPUTE_AGENT_DRIVER: z.enum(['local', 'simulated', 'auto']).default('auto'),
  COMPUTE_AGENT_HOST_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,128}$/, { error: '应为 1–128 位字母、数字或 . _ -' })
    .default('local'),
  COMPUTE_AGENT_SSH_HOST: z.string().min(1).default('127.0.0.1'),
  COMPUTE_AGENT_SSH_PORT: z.coerce.number({ error: '应为端口号' }).int().min(1).max(65535).default(2222),
  COMPUTE_AGENT_SIMULATED_GPUS: z
    .string()
    .regex(/^[^=,]+=\d+(:\d+)?(,[^=,]+=\d+(:\d+)?)*$/, { error: '应为 型号=张数[:显存MB]，多个以逗号分隔，如 NVIDIA GeForce RTX 4090=2:24564' })
    .optional(),
  FILESTORE_ROOT: z.string().optional(),
  FILESTORE_QUOTA_GB: z.coerce.number({ error: '应为整数（GB）' }).int().min(1).max(100_000).default(20),
  REGISTRY_URL: z.url({ protocol: /^https?$/, error: '应为 http(s)://host[:port][/路径] 形式' }).optional(),
  REGISTRY_USER: z.string().min(1).optional(),
  REGISTRY_PASSWORD: z.string().min(1).optional(),
  COMPUTE_AGENT_TLS_CERT: z.string().optional(),
  COMPUTE_AGENT_TLS_KEY: z.string().optional(),
  COMPUTE_SIM_DELAYS: z.string().optional(),
  COMPUTE_SIM_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/, { error: '应为域名' })
    .default('gpu.local'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

function fail(message: string): never {
  console.error(`配置有误，请检查环境变量：\n${message}`);
  process.exit(78);
}

const parsed = envSchema.safeParse(process.env);
if (!parsed.success) fail(parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n'));
const env = parsed.data;
if (!!env.COMPUTE_AGENT_TLS_CERT !== !!env.COMPUTE_AGENT_TLS_KEY) fail('  COMPUTE_AGENT_TLS_CERT、COMPUTE_AGENT_TLS_KEY 必须同时设置');
let delays: SimDelays;
try {
  delays = parseSimDelays(env.COMPUTE_SIM_DELAYS);
} catch (e) {
  fail(`  ${(e as Error).message}`);
}
let https: { cert: Buffer; key: Buffer } | null = null;
try {
  if (env.COMPUTE_AGENT_TLS_CERT && env.COMPUTE_AGENT_TLS_KEY)
    https = { cert: readFileSync(env.COMPUTE_AGENT_TLS_CERT), key: readFileSync(env.COMPUTE_AGENT_TLS_KEY) };
} catch (e) {
  fail(`  COMPUTE_AGENT_TLS_CERT / COMPUTE_AGENT_TLS_KEY: 无法读取（${(e as Error).message}）`);
}

const dataDir = env.COMPUTE_AGENT_DATA_DIR
  ? path.resolve(process.env.INIT_CWD ?? process.cwd(), env.COMPUTE_AGENT_DATA_DIR)
  : fileURLToPath(new URL('../../../data/compute-agent', import.meta.url));
const database = await openDatabase({ url: env.COMPUTE_AGENT_DATABASE_URL, dataDir, poolSize: 5 });
const logger = serverLoggerOptions(env.LOG_LEVEL, 'auto');
// One type for both: the routes do not care whether TLS is in front of them.
const app = (https ? Fastify({ logger, https }) : Fastify({ logger })) as unknown as FastifyInstance;
const sandboxes = bwrapWorks();
const kind = env.COMPUTE_AGENT_DRIVER === 'auto' ? (sandboxes.ok ? 'local' : 'simulated') : env.COMPUTE_AGENT_DRIVER;
const computeDir = localComputeDir(dataDir);
const sharedFileStore = env.FILESTORE_ROOT ? path.resolve(env.FILESTORE_ROOT) : null;
if (sharedFileStore) {
  // Machines run as uids of their own: they walk down to their account's tree (without listing the others).
  mkdirSync(sharedFileStore, { recursive: true, mode: 0o711 });
  chmodSync(sharedFileStore, 0o711);
}
const driver: ComputeDriver =
  kind === 'local'
    ? new LocalComputeDriver({
        db: database.db,
        clock: systemClock,
        log: (m) => app.log.warn(m),
        dir: computeDir,
        sshHost: env.COMPUTE_AGENT_SSH_HOST,
        sshPort: () => env.COMPUTE_AGENT_SSH_PORT,
        fileStoreRoot: sharedFileStore ?? path.join(dataDir, 'filestore'),
        // On the shared file system every host mounts, a tree is a plain folder: an ext4 image of it
        // mounted by two hosts at once would be corrupted. Its quota is then the shared file system's.
        fileStoreQuotaGb: env.FILESTORE_ROOT ? undefined : env.FILESTORE_QUOTA_GB,
        registry: registryOptionsOf(env),
      })
    : new SimulatedComputeDriver(database.db, systemClock, delays, env.COMPUTE_SIM_DOMAIN);
const gpuHost = localGpuHost();
const hostReport = () =>
  buildHostReport({
    hostId: env.COMPUTE_AGENT_HOST_ID,
    driver,
    dir: kind === 'local' ? computeDir : null,
    sandboxes: () => (kind === 'local' ? sandboxes : { ok: true, why: '模拟机群' }),
    gpus: () => readableGpus(),
    simulatedGpus: simulatedGpus(env.COMPUTE_AGENT_SIMULATED_GPUS),
  });

/** COMPUTE_AGENT_SIMULATED_GPUS: cards reported without a device behind them (staging, tests on hosts without GPUs). */
function simulatedGpus(v: string | undefined): { model: string; memoryMb: number; count: number }[] {
  return (v ?? '')
    .split(',')
    .filter(Boolean)
    .map((item) => {
      const [model, rest] = item.split('=') as [string, string];
      const [count, memoryMb] = rest.split(':');
      return { model: model.trim(), count: Number(count), memoryMb: Number(memoryMb ?? 0) };
    });
}

/** Whether the host's cards can be read now (a host without cards is fine: its machines run without). */
function readableGpus(): { ok: boolean; why: string } {
  try {
    const cards = gpuHost.cards();
    return { ok: true, why: cards.length ? `${cards.length} 张 GPU` : '无 GPU' };
  } catch (e) {
    return { ok: false, why: `无法读取 GPU：${(e as Error).message}` };
  }
}

await app.register(computeAgentServer, { driver, keys: { [env.COMPUTE_AGENT_KEY_ID]: env.COMPUTE_AGENT_SECRET }, hostReport });
app.addHook('onClose', async () => {
  await driver.shutdown?.();
  await database.close();
});

let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await app.close();
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());

await app.listen({ port: env.COMPUTE_AGENT_PORT, host: env.COMPUTE_AGENT_HOST });
const address = app.server.address();
const port = address && typeof address === 'object' ? address.port : env.COMPUTE_AGENT_PORT;
const what = kind === 'local' ? `主机 ${env.COMPUTE_AGENT_HOST_ID} 的算力代理（本机沙箱）` : `模拟算力控制器（${sandboxes.why}）`;
if (env.COMPUTE_AGENT_SIMULATED_GPUS)
  app.log.warn(`COMPUTE_AGENT_SIMULATED_GPUS：上报模拟 GPU（${env.COMPUTE_AGENT_SIMULATED_GPUS}），其实例没有真实显卡，仅用于测试与预发环境`);
app.log.info(
  `${what}已启动：${https ? 'https' : 'http'}://${env.COMPUTE_AGENT_HOST}:${port}（密钥 ${env.COMPUTE_AGENT_KEY_ID}，数据库：${database.kind === 'pglite' ? `内置 PGlite ${dataDir}` : 'PostgreSQL'}）`,
);
