/**
 * Sessions are read fresh for every request (concurrent requests share one statement): whatever
 * changed the session or its user before a request arrived — through the API, through any other
 * writer, in this server or another one on the same database — is what that request sees.
 *
 * "Another server" is a second app context with its own connection pool on the same PostgreSQL
 * database when TEST_DATABASE_URL is set; on PGlite (one process) a second context on the same
 * embedded database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { API, yuanToUnits, type Child } from '@console/contract';
import { buildApp } from '../../app.js';
import { ManualClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { openDatabase, type Database } from '../../db/client.js';
import { createScratchDatabase } from '../../../test/scratch-db.js';
import { PASSWORD, get, json, post, put, registerUser, type TestServer } from '../../../test/harness.js';
import { testTemplate } from '../../../test/pglite-template.js';

const CHILD_PASSWORD = 'Kid12345';
const QUOTE = { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1, dataDiskGb: 0 };

/** Two servers on one database, sharing a clock. */
async function twoServers(): Promise<{ a: TestServer; b: TestServer; close(): Promise<void> }> {
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const adminUrl = process.env.TEST_DATABASE_URL;
  const scratch = adminUrl ? await createScratchDatabase(adminUrl, 'console_test') : null;
  const shared = scratch ? null : await openDatabase({ template: await testTemplate() });
  const open = async (): Promise<Database> => (scratch ? openDatabase({ url: scratch.url, poolSize: 5 }) : { ...shared!, close: async () => {} });
  const start = async (): Promise<TestServer> => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      CODE_IP_LIMIT_PER_HOUR: '10000',
      WEB_DIST: path.join(dataDir, 'web'),
      DEV_TOOLS: 'true',
      COMPUTE_DRIVER: 'simulated',
    });
    const { app, ctx } = await buildApp({ config, database: await open(), clock, logger: false });
    await app.ready();
    const close = async () => {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    };
    return { app, ctx, clock, dataDir, close };
  };
  const a = await start();
  const b = await start();
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

describe('sessions read fresh for every request', () => {
  let servers: Awaited<ReturnType<typeof twoServers>>;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    servers = await twoServers();
    ({ a, b } = servers);
  });
  afterAll(async () => servers.close());

  const me = (s: TestServer, token: string) => get(s.app, API.meInfo, token);
  const login = async (s: TestServer, mobile: string, password = PASSWORD) =>
    json<{ token: string }>(await post(s.app, API.login, { account: mobile, password })).token;

  async function childOf(parent: { token: string; mobile: string }, name: string, permissions = {}) {
    const res = await post(a.app, API.children, { childName: name, password: CHILD_PASSWORD, permissions }, parent.token);
    expect(res.statusCode, res.body).toBe(200);
    const child = json<Child>(res);
    const token = json<{ token: string }>(await post(a.app, API.childLogin, { parentMobile: parent.mobile, childName: name, password: CHILD_PASSWORD })).token;
    return { ...child, token };
  }

  it('answers each of many concurrent requests for its own session: live, logged out or unknown', async () => {
    const u = await registerUser(a);
    const other = await registerUser(a);
    const gone = await login(a, u.mobile);
    expect((await post(a.app, API.logout, undefined, gone)).statusCode).toBe(200);
    const forgotten = await registerUser(a);
    await a.ctx.db.execute(sql`delete from sessions where user_id = ${forgotten.user.id}`);
    const unknown = forgotten.token;

    const expected = new Map<string, { id: string } | { code: number }>([
      [u.token, { id: u.user.id }],
      [other.token, { id: other.user.id }],
      [gone, { code: 40100004 }],
      [unknown, { code: 40100002 }],
    ]);
    const asked = Array.from({ length: 40 }, (_, i) => [...expected.keys()][i % expected.size]!);
    const answers = await Promise.all(asked.map((token) => me(a, token)));
    answers.forEach((res, i) => expect(json(res)).toMatchObject(expected.get(asked[i]!)!));
  });

  it('refuses a session logged out on the other server on the very next request', async () => {
    const u = await registerUser(a);
    expect((await me(b, u.token)).statusCode).toBe(200);
    expect((await post(a.app, API.logout, undefined, u.token)).statusCode).toBe(200);
    const res = await me(b, u.token);
    expect(res.statusCode).toBe(401);
    expect(json(res).code).toBe(40100004);
  });

  it('ends the other sessions at once on the other server when the password changes', async () => {
    const u = await registerUser(a);
    const elsewhere = await login(b, u.mobile);
    expect((await me(b, elsewhere)).statusCode).toBe(200);
    expect((await put(a.app, API.mePassword, { oldPassword: PASSWORD, password: 'Newpass123' }, u.token)).statusCode).toBe(200);
    expect(json(await me(b, elsewhere)).code).toBe(40100004);
    expect((await me(b, u.token)).statusCode).toBe(200);
  });

  it("applies a child's new grants and its disabling on the other server at once", async () => {
    const parent = await registerUser(a);
    const child = await childOf(parent, 'analyst');
    expect(json(await get(b.app, API.dataDisks, child.token)).code).toBe(40300002);

    expect((await put(a.app, API.child.replace(':id', child.id), { permissions: { image: true } }, parent.token)).statusCode).toBe(200);
    expect((await get(b.app, API.dataDisks, child.token)).statusCode).toBe(200);
    expect(json(await me(b, child.token))).toMatchObject({ image: true });

    expect((await put(a.app, API.child.replace(':id', child.id), { disabled: true }, parent.token)).statusCode).toBe(200);
    expect((await get(b.app, API.dataDisks, child.token)).statusCode).toBe(401);
  });

  it('refuses a live session whose account or parent account is disabled by any writer, at once', async () => {
    const parent = await registerUser(a);
    const child = await childOf(parent, 'ops');
    // No request of this server disabled them: an operator's script did, straight in the database.
    await a.ctx.db.execute(sql`update users set disabled = true where id = ${parent.user.id}`);
    expect(json(await me(b, parent.token)).code).toBe(40300003);
    const childAnswer = json(await me(b, child.token));
    expect(childAnswer).toMatchObject({ code: 40300003, detail: '主账号已停用' });

    await a.ctx.db.execute(sql`update users set disabled = false where id = ${parent.user.id}`);
    expect((await me(b, parent.token)).statusCode).toBe(200);
    expect((await me(b, child.token)).statusCode).toBe(200);
  });

  it('prices and shows what changed in the account and its balance on the very next request', async () => {
    const u = await registerUser(a);
    const before = json<{ total: string }>(await post(b.app, API.gpuOrderUserPrice, QUOTE, u.token));
    expect(json(await me(b, u.token))).toMatchObject({ isStudent: false, cash: '0' });

    // A student review approved elsewhere, and a compensation credited elsewhere.
    await a.ctx.db.execute(sql`update users set is_student = true where id = ${u.user.id}`);
    await a.ctx.ledger.post({
      key: `comp-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits('12.5') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits('12.5') },
      ],
    });

    expect(json(await me(b, u.token))).toMatchObject({ isStudent: true, cash: String(yuanToUnits('12.5')) });
    const after = json<{ total: string }>(await post(b.app, API.gpuOrderUserPrice, QUOTE, u.token));
    expect(BigInt(after.total)).toBeLessThan(BigInt(before.total));
  });
});
