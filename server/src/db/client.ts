/**
 * One database handle for the whole server: embedded PGlite under DATA_DIR by default, or a
 * PostgreSQL pool when DATABASE_URL is set. Both speak the same schema and migrations.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import * as schema from './schema.js';
import { localBus, postgresBus, type Bus } from './bus.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything a query can run on: the database or an open transaction. */
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Events every process on this database hears (db/bus.ts). */
  bus: Bus;
  close(): Promise<void>;
}

export const migrationsFolder = fileURLToPath(new URL('../../drizzle', import.meta.url));
/** Serialises migrations when several server processes start against one PostgreSQL. */
const MIGRATION_LOCK = 724_001;

/**
 * `template` (in memory only): a PGlite data folder dump to start from instead of an empty
 * cluster; the tests' one migrated database (test/pglite-template.ts). Migrations still run after
 * it, so a template behind the migrations folder is brought up to date.
 */
export async function openDatabase(opts: { url?: string; dataDir?: string; poolSize?: number; template?: Blob }): Promise<Database> {
  if (opts.url) return openPostgres(opts.url, opts.poolSize ?? 10);
  return openPglite(opts.dataDir, opts.template);
}

async function openPglite(dataDir: string | undefined, template: Blob | undefined): Promise<Database> {
  let client: PGlite;
  if (dataDir) {
    const dir = path.join(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    client = new PGlite(dir);
  } else {
    client = new PGlite(template ? { loadDataDir: template } : {}); // in memory: tests
  }
  await client.waitReady;
  const db = drizzlePglite(client, { schema });
  await migratePglite(db, { migrationsFolder });
  const bus = localBus();
  return { db: db as unknown as Db, kind: 'pglite', bus, close: () => bus.close().then(() => client.close()) };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that errors (server restart) must not crash the process; nor may a checked-out one
  // between two statements of a transaction (the pool listens only to idle ones): the error reaches
  // that transaction through its next query instead.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const conn = await pool.connect();
  try {
    await conn.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migratePg(drizzlePg(conn, { schema }), { migrationsFolder });
  } finally {
    await conn.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    conn.release();
  }
  const db = drizzlePg(pool, { schema });
  const bus = await postgresBus(url, pool);
  return { db: db as unknown as Db, kind: 'postgres', bus, close: () => bus.close().then(() => pool.end()) };
}
