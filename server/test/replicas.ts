/**
 * Two console replicas on one database, as behind a load balancer: two `buildApp`s, each with its own
 * connection pool (and bus listener) on one scratch PostgreSQL database when TEST_DATABASE_URL is
 * set; on PGlite (one process opens it) two apps on the same embedded database, sharing its bus.
 */
import { rmSync } from 'node:fs';
import { buildApp } from '../src/app.js';
import { ManualClock } from '../src/clock.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createScratchDatabase } from './scratch-db.js';
import { testTemplate } from './pglite-template.js';
import { TEST_START, testConfig, testDataDir, type TestServer } from './harness.js';

export interface Replicas {
  a: TestServer;
  b: TestServer;
  close(): Promise<void>;
}

/** `env` for both replicas, or per replica (`envB` replaces it for b). */
export async function twoReplicas(opts: { env?: Record<string, string>; envB?: Record<string, string> } = {}): Promise<Replicas> {
  const clock = new ManualClock(TEST_START);
  const adminUrl = process.env.TEST_DATABASE_URL;
  const scratch = adminUrl ? await createScratchDatabase(adminUrl, 'console_test') : null;
  const shared = scratch ? null : await openDatabase({ template: await testTemplate() });
  const open = async (): Promise<Database> => (scratch ? openDatabase({ url: scratch.url, poolSize: 5 }) : { ...shared!, close: async () => {} });
  const start = async (env: Record<string, string> | undefined): Promise<TestServer> => {
    const dataDir = testDataDir();
    const config = testConfig(dataDir, env);
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
