/**
 * `npm run db:migrate`: applies the migrations to the configured database (DATABASE_URL, or the
 * embedded one under DATA_DIR) and exits; nothing else starts. The Kubernetes Job of deploy/k8s runs
 * it before a new version's replicas roll out. Replicas also migrate at start under the same
 * PostgreSQL advisory lock, so a migration is applied once however many run at the same time.
 */
import { readdirSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config.js';
import { migrationsFolder, openDatabase } from '../db/client.js';

let config;
try {
  config = loadConfig(process.env);
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.message);
  process.exit(78);
}
const started = Date.now();
const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 1 });
await database.close();
const count = readdirSync(migrationsFolder).filter((f) => f.endsWith('.sql')).length;
console.log(
  `数据库迁移完成（${database.kind === 'pglite' ? `内置 PGlite ${config.dataDir}` : 'PostgreSQL'}，共 ${count} 个迁移，用时 ${Date.now() - started} ms）`,
);
