/**
 * `npm run compute-agent -w server`: a stand-alone simulated compute controller for staging. It
 * serves the compute agent protocol (drivers/compute/agent.ts) on top of the simulated fleet, with
 * its own database, so a console started with COMPUTE_DRIVER=agent runs its instances "elsewhere"
 * exactly as it would against real host agents.
 *
 *   COMPUTE_AGENT_KEY_ID, COMPUTE_AGENT_SECRET   required; the same values as the console's
 *   COMPUTE_AGENT_PORT (8090), COMPUTE_AGENT_HOST (127.0.0.1)
 *   COMPUTE_AGENT_DATABASE_URL   postgres://… for the fleet's state; default an embedded PGlite
 *                                under COMPUTE_AGENT_DATA_DIR (default data/compute-agent)
 *   COMPUTE_AGENT_TLS_CERT, COMPUTE_AGENT_TLS_KEY   PEM files: serve HTTPS (needed when the console
 *                                is not on the same machine: it accepts http only on loopback)
 *   COMPUTE_SIM_DELAYS, COMPUTE_SIM_DOMAIN, LOG_LEVEL   as for the console
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { systemClock } from '../clock.js';
import { openDatabase } from '../db/client.js';
import { computeAgentServer } from '../drivers/compute/agent-server.js';
import { SimulatedComputeDriver, parseSimDelays, type SimDelays } from '../drivers/compute/simulated.js';
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
const driver = new SimulatedComputeDriver(database.db, systemClock, delays, env.COMPUTE_SIM_DOMAIN);

const logger = serverLoggerOptions(env.LOG_LEVEL, 'auto');
// One type for both: the routes do not care whether TLS is in front of them.
const app = (https ? Fastify({ logger, https }) : Fastify({ logger })) as unknown as FastifyInstance;
await app.register(computeAgentServer, { driver, keys: { [env.COMPUTE_AGENT_KEY_ID]: env.COMPUTE_AGENT_SECRET } });
app.addHook('onClose', async () => database.close());

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
app.log.info(
  `模拟算力控制器已启动：${https ? 'https' : 'http'}://${env.COMPUTE_AGENT_HOST}:${env.COMPUTE_AGENT_PORT}（密钥 ${env.COMPUTE_AGENT_KEY_ID}，数据库：${database.kind === 'pglite' ? `内置 PGlite ${dataDir}` : 'PostgreSQL'}）`,
);
