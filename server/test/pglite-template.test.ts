import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrationsFolder, openDatabase } from '../src/db/client.js';
import { ensureTemplate, testTemplate } from './pglite-template.js';

const rows = async (db: { execute(q: string): Promise<unknown> }, q: string) => (await db.execute(q)) as { rows: Record<string, unknown>[] };

describe('the migrated PGlite template of the tests', () => {
  it('loads as a database with every migration applied, and each load is a database of its own', async () => {
    const template = new Blob([readFileSync(await ensureTemplate())]);
    // On PGlite the global setup (vitest.config.ts) made it and told this worker where it is; with
    // TEST_DATABASE_URL the suite's databases are PostgreSQL's and it makes none.
    if (process.env.TEST_DATABASE_URL) expect(await testTemplate()).toBeUndefined();
    else expect(await testTemplate()).toBeDefined();
    const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] };
    const a = await openDatabase({ template });
    const b = await openDatabase({ template });
    try {
      const applied = await rows(a.db, 'select count(*)::int as n from drizzle.__drizzle_migrations');
      expect(applied.rows[0]!.n).toBe(journal.entries.length);
      await a.db.execute(`create table only_in_a (x int)`);
      const inB = await rows(b.db, `select count(*)::int as n from information_schema.tables where table_name = 'only_in_a'`);
      expect(inB.rows[0]!.n).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
