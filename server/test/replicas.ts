/**
 * Two console replicas on one database, as behind a load balancer: two `buildApp`s, each with its own
 * connection pool (and bus listener) on one scratch PostgreSQL database when TEST_DATABASE_URL is
 * set; on PGlite (one process opens it) two apps on the same embedded database, sharing its bus.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createScratchDatabase } from './scratch-db.js';
import { testTemplate } from './pglite-template.js';
import type { TestServer } from './harness.js';

export interface Replicas {
  a: TestServer;
  b: TestServer;
  close(): Promise<void>;
}

/** `env` for both replicas, or per replica (`envB` replaces it for b). */
export async function twoReplicas(opts: { env?: Record<string, string>; envB?: Record<string, string> } = {}): Promise<Replicas> {
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const adminUrl = process.env.TEST_DATABASE_URL;
  const scratch = adminUrl ? await createScratchDatabase(adminUrl, 'console_test') : null;
  const shared = scratch ? null : await openDatabase({ template: await testTemplate() });
  const open = async (): Promise<Database> => (scratch ? openDatabase({ url: scratch.url, poolSize: 5 }) : { ...shared!, close: async () => {} });
  const start = async (env: Record<string, string> | undefined): Promise<TestServer> => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      CODE_IP_LIMIT_PER_HOUR: '10000',
      WEB_DIST: path.join(dataDir, 'web'),
      DEV_TOOLS: 'true',
      COMPUTE_DRIVER: 'simulated',
      SSH_GATEWAY_PORT: '0',
      MACHINE_PORT: '0',
      ...env,
    });
    const { app, ctx } = await buildApp({ config, database: await open(), clock, logger: false });
    await app.ready();
    const close = async () => {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    };
    return { app, ctx, clock, dataDir, close };
  };
  const a = await start(opts.env);
  const b = await start(opts.envB ?? opts.env);
  return {
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      await shared?.close();
      await scratch?.drop();
    },
  };
}
