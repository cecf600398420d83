/**
 * The tests' migrated PGlite database, made once and loaded by every in-memory test database.
 *
 * A fresh PGlite runs initdb (seconds of WebAssembly) and then every migration; the server suite
 * opens about a hundred of them, and on a 2-core machine that was most of its time. The vitest
 * global setup (test/global-setup.ts) dumps one migrated database to a file named by the hash of
 * the migrations and the PGlite version; openTestDatabase loads it (test/harness.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDatabase, migrationsFolder } from '../src/db/client.js';

/** Where the global setup tells the test workers the template is. */
export const TEMPLATE_ENV = 'CONSOLE_TEST_PGLITE_TEMPLATE';

/** The template's file: a new migration or PGlite version names a new one. */
export function templateFile(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(migrationsFolder, { recursive: true, encoding: 'utf8' }).sort()) {
    const full = path.join(migrationsFolder, file);
    if (file.endsWith('.sql') || file.endsWith('.json')) hash.update(`${file}\0`).update(readFileSync(full));
  }
  // The package's own package.json is not exported: found beside its entry (dist/).
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  hash.update((JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string }).version);
  return path.join(tmpdir(), `console-test-pglite-${hash.digest('hex').slice(0, 16)}.tar`);
}

/** Makes the template unless it is there; resolves to its file. */
export async function ensureTemplate(): Promise<string> {
  const file = templateFile();
  if (existsSync(file)) return file;
  const database = await openDatabase({});
  try {
    const client = (database.db as unknown as { $client: { dumpDataDir(c: 'none'): Promise<Blob> } }).$client;
    const dump = await client.dumpDataDir('none');
    // Written aside and renamed: suites started at once never read half a file.
    const part = `${file}.${process.pid}.part`;
    await writeFile(part, Buffer.from(await dump.arrayBuffer()));
    await rename(part, file);
  } finally {
    await database.close();
  }
  return file;
}

let loaded: Promise<Blob | undefined> | null = null;

/** The template the global setup made, read once per test file; undefined outside vitest's setup (a fresh database then). */
export function testTemplate(): Promise<Blob | undefined> {
  const file = process.env[TEMPLATE_ENV];
  if (!file || !existsSync(file)) return Promise.resolve(undefined);
  loaded ??= readFile(file).then((bytes) => new Blob([bytes]));
  return loaded;
}
