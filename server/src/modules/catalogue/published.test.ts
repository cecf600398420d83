/**
 * One catalogue across replicas (issue 31): the database holds the catalogue's version, a file is
 * applied only when it is newer, and a replica started with a stale file serves the database's
 * catalogue instead of reverting prices.
 *
 * "Another replica" is a second app (or database handle) with its own connection pool on the same
 * PostgreSQL database when TEST_DATABASE_URL is set; on PGlite (one process) a second one on the same
 * embedded database.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { buildApp } from '../../app.js';
import { ManualClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { openDatabase, type Database } from '../../db/client.js';
import { createScratchDatabase } from '../../../test/scratch-db.js';
import { testTemplate } from '../../../test/pglite-template.js';
import { json, openTestDatabase, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { catalogueState, cataloguePrices } from './schema.js';
import { applyCatalogue, DEFAULT_CATALOGUE_FILE, describeApply, readCatalogueFile, type ApplyOutcome } from './seed-file.js';
import type { PublishedCatalogue } from './published.js';

const GPU_PRICE = '/infra/api/v2.1/gpu/order/price';
const QUOTE = { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Hour', duration: 1, dataDiskGb: 0 };
const SHIPPED = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as { version?: number; gpuTypes: { id: string; prices: object }[] };

/** The shipped catalogue at `version` (undefined: without one) with the RTX 4090 at `hourYuan` an hour. */
function catalogue(version: number | undefined, hourYuan: string) {
  const c = structuredClone(SHIPPED);
  if (version === undefined) delete c.version;
  else c.version = version;
  const g = c.gpuTypes.find((t) => t.id === 'rtx4090')!;
  g.prices = { ...g.prices, Hour: { list: hourYuan }, Usage: { list: hourYuan } };
  return c;
}

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function newFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'catalogue-version-'));
  dirs.push(dir);
  return path.join(dir, 'catalogue.json');
}
function write(file: string, content: object, indent?: number) {
  writeFileSync(file, JSON.stringify(content, null, indent));
  return file;
}

/** What a visitor is quoted for one RTX 4090 hour, in units. */
async function hourPrice(s: TestServer): Promise<string> {
  return json<{ listTotal: string }>(await post(s.app, GPU_PRICE, QUOTE)).listTotal;
}
const units = (yuan: string) => String(yuanToUnits(yuan));

async function stateOf(db: Database['db'], key: string): Promise<unknown> {
  const [row] = await db.select().from(catalogueState).where(eq(catalogueState.key, key));
  return row?.value;
}
const publishedOf = async (db: Database['db']) => (await stateOf(db, 'published')) as PublishedCatalogue | undefined;
async function storedHourPrice(db: Database['db']): Promise<bigint | undefined> {
  const [row] = await db
    .select()
    .from(cataloguePrices)
    .where(and(eq(cataloguePrices.productKind, 'gpu'), eq(cataloguePrices.productId, 'rtx4090'), eq(cataloguePrices.cycle, 'Hour')));
  return row?.listPrice;
}

describe('the catalogue version of the file', () => {
  let s: TestServer;
  let file: string;
  beforeAll(async () => {
    file = write(newFile(), catalogue(3, '2'));
    s = await startTestServer({ env: { CATALOGUE_FILE: file } });
  });
  afterAll(async () => s.close());

  it('applies a newer file, refuses an older one and one of the same version with other content, and leaves prices as they were', async () => {
    expect(await hourPrice(s)).toBe(units('2'));
    expect(await publishedOf(s.ctx.db)).toMatchObject({ version: 3, source: 'file' });

    // The operator raises the version with the edit: applied (the watcher calls this on a change).
    write(file, catalogue(4, '2.5'));
    expect(await s.ctx.reloadCatalogue()).toBe(true);
    expect(await hourPrice(s)).toBe(units('2.5'));
    expect(await publishedOf(s.ctx.db)).toMatchObject({ version: 4 });
    const changes = await stateOf(s.ctx.db, 'version');

    // The same version with the same content, written differently: nothing written.
    write(file, catalogue(4, '2.5'), 2);
    expect(await s.ctx.reloadCatalogue()).toBe(false);
    expect(await stateOf(s.ctx.db, 'version')).toBe(changes);

    // An edit without raising the version: refused, saying what to do.
    write(file, catalogue(4, '3'));
    const edited = readCatalogueFile(file);
    const conflict = await applyCatalogue(s.ctx.db, edited, s.clock.now());
    expect(conflict).toEqual({ result: 'conflict', version: 4, databaseVersion: 4 } satisfies ApplyOutcome);
    expect(describeApply(file, edited, conflict)).toEqual([
      { level: 'warn', message: expect.stringMatching(/版本 4 与数据库中已生效的版本相同，但内容不同，未应用.*把 version 改为 5/) },
    ]);
    expect(await s.ctx.reloadCatalogue()).toBe(false);
    expect(await hourPrice(s)).toBe(units('2.5'));

    // A stale file (a replica restarted with the old one): refused, prices stay.
    write(file, catalogue(3, '2'));
    const stale = readCatalogueFile(file);
    const older = await applyCatalogue(s.ctx.db, stale, s.clock.now());
    expect(older).toEqual({ result: 'older', version: 3, databaseVersion: 4 } satisfies ApplyOutcome);
    expect(describeApply(file, stale, older)[0]!.message).toMatch(/版本 3 低于数据库中已生效的版本 4，未应用，继续使用版本 4/);
    expect(await s.ctx.reloadCatalogue()).toBe(false);
    expect(await hourPrice(s)).toBe(units('2.5'));
    expect(await storedHourPrice(s.ctx.db)).toBe(yuanToUnits('2.5'));
    expect(await stateOf(s.ctx.db, 'version')).toBe(changes);

    // The old prices again, on purpose: a newer version.
    write(file, catalogue(5, '2'));
    expect(await s.ctx.reloadCatalogue()).toBe(true);
    expect(await hourPrice(s)).toBe(units('2'));
    expect(await publishedOf(s.ctx.db)).toMatchObject({ version: 5 });
  });

  it('refuses a broken file before looking at its version', async () => {
    write(file, { ...catalogue(9, '2'), version: 'nine' });
    await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/第 version 项有误：version 须为正整数/);
    write(file, { ...catalogue(9, '2'), version: 0 });
    await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/第 version 项有误/);
    expect(await publishedOf(s.ctx.db)).toMatchObject({ version: 5 });
  });
});

describe('a file without a version', () => {
  let database: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ database, drop } = await openTestDatabase()));
  afterAll(async () => {
    await database.close();
    await drop();
  });
  const now = new Date('2026-11-23T08:00:00Z');

  it('is version 0: applied where nothing was published, refused once edited, and any versioned file is newer', async () => {
    const file = newFile();
    const first = readCatalogueFile(write(file, catalogue(undefined, '2')));
    const applied = await applyCatalogue(database.db, first, now);
    expect(applied).toEqual({ result: 'applied', version: 0, previous: null } satisfies ApplyOutcome);
    expect(describeApply(file, first, applied).map((l) => l.level)).toEqual(['info', 'warn']);
    expect(describeApply(file, first, applied)[1]!.message).toMatch(/没有 version，按版本 0 处理.*"version": 1/);

    expect(await applyCatalogue(database.db, first, now)).toEqual({ result: 'unchanged', version: 0 });
    const edited = readCatalogueFile(write(file, catalogue(undefined, '3')));
    expect(await applyCatalogue(database.db, edited, now)).toEqual({ result: 'conflict', version: 0, databaseVersion: 0 });
    expect(await storedHourPrice(database.db)).toBe(yuanToUnits('2'));

    expect(await applyCatalogue(database.db, readCatalogueFile(write(file, catalogue(1, '3'))), now)).toMatchObject({ result: 'applied', previous: 0 });
    expect(await storedHourPrice(database.db)).toBe(yuanToUnits('3'));
    expect(await applyCatalogue(database.db, edited, now)).toEqual({ result: 'older', version: 0, databaseVersion: 1 });
  });

  it('on a database last written before versions existed (a seedHash, no version): the file is applied', async () => {
    const legacy = await openTestDatabase();
    try {
      await legacy.database.db.insert(catalogueState).values({ key: 'seedHash', value: 'abc', updatedAt: now });
      const file = readCatalogueFile(write(newFile(), catalogue(undefined, '2')));
      expect(await applyCatalogue(legacy.database.db, file, now)).toMatchObject({ result: 'applied', previous: null });
      expect(await stateOf(legacy.database.db, 'seedHash')).toBeUndefined();
    } finally {
      await legacy.database.close();
      await legacy.drop();
    }
  });
});

/** Replicas' handles on one database: a pool each on PostgreSQL, one shared PGlite otherwise. */
async function sharedDatabase() {
  const adminUrl = process.env.TEST_DATABASE_URL;
  const scratch = adminUrl ? await createScratchDatabase(adminUrl, 'console_test') : null;
  const shared = scratch ? null : await openDatabase({ template: await testTemplate() });
  const handles: Database[] = [];
  const open = async () => (scratch ? openDatabase({ url: scratch.url, poolSize: 5 }) : { ...shared!, close: async () => {} });
  return {
    /** For an app, which closes it. */
    open,
    /** For the test itself, closed by close(). */
    async handle() {
      const d = await open();
      handles.push(d);
      return d;
    },
    async close() {
      for (const d of handles) await d.close();
      await shared?.close();
      await scratch?.drop();
    },
  };
}

describe('replicas on one database', () => {
  let shared: Awaited<ReturnType<typeof sharedDatabase>>;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    shared = await sharedDatabase();
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  afterAll(async () => shared.close());

  async function replica(catalogueFile: string): Promise<TestServer> {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
    dirs.push(dataDir);
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      WEB_DIST: path.join(dataDir, 'web'),
      DEV_TOOLS: 'true',
      COMPUTE_DRIVER: 'simulated',
      SSH_GATEWAY_PORT: '0',
      MACHINE_PORT: '0',
      CATALOGUE_FILE: catalogueFile,
    });
    const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
    const { app, ctx } = await buildApp({ config, database: await shared.open(), clock, logger: false });
    await app.ready();
    const s: TestServer = { app, ctx, clock, dataDir, close: () => app.close() };
    servers.push(s);
    return s;
  }

  it('a replica started with an older file serves the newer price, and a newer file applied by one reaches the other', async () => {
    const fileA = write(newFile(), catalogue(6, '3'));
    const a = await replica(fileA);
    const b = await replica(write(newFile(), catalogue(5, '2')));
    expect(await hourPrice(b)).toBe(units('3'));
    expect(await hourPrice(a)).toBe(units('3'));
    expect(await publishedOf(b.ctx.db)).toMatchObject({ version: 6 });

    // The operator rolls a new file out; replica A sees it first.
    write(fileA, catalogue(7, '4'));
    expect(await a.ctx.reloadCatalogue()).toBe(true);
    // B notices the version within its check interval (store.ts VERSION_CHECK_MS), with no reload of its own.
    await vi.waitFor(async () => expect(await hourPrice(b)).toBe(units('4')), { timeout: 15_000, interval: 200 });
    // B's watcher firing on its old file changes nothing.
    expect(await b.ctx.reloadCatalogue()).toBe(false);
    expect(await hourPrice(b)).toBe(units('4'));
  });

  it('two replicas applying versions 5 and 6 at once end at 6, whichever starts first', async () => {
    const one = await shared.handle();
    const two = await shared.handle();
    const dir = path.dirname(newFile());
    const fileAt = (version: number) => readCatalogueFile(write(path.join(dir, `v${version}.json`), catalogue(version, `${version}.5`)));
    const now = new Date('2026-11-23T08:00:00Z');
    let base = (await publishedOf(one.db))?.version ?? 0;
    for (let round = 0; round < 6; round++) {
      const [low, high] = [fileAt(base + 5), fileAt(base + 6)];
      const [first, second] = round % 2 === 0 ? [low, high] : [high, low];
      const outcomes = await Promise.all([applyCatalogue(one.db, first, now), applyCatalogue(two.db, second, now)]);
      const of = (version: number) => outcomes.find((o) => o.version === version)!.result;
      expect(of(base + 6)).toBe('applied');
      expect(['applied', 'older']).toContain(of(base + 5));
      expect(await publishedOf(two.db)).toMatchObject({ version: base + 6, hash: high.hash });
      expect(await storedHourPrice(one.db)).toBe(yuanToUnits(`${base + 6}.5`));
      base += 6;
    }
  });
});
