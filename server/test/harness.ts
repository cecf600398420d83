/**
 * A real server for tests: the same buildApp as production, on an in-memory PGlite, or on a fresh
 * PostgreSQL database when TEST_DATABASE_URL is set (the suite runs against both).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { API, yuanToUnits, type PermissionFlag } from '@console/contract';
import { utils as sshUtils } from 'ssh2';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createScratchDatabase } from './scratch-db.js';
import { testTemplate } from './pglite-template.js';
import type { AppContext, Drivers } from '../src/context.js';
import type { FulfillerLine } from '../src/modules/orders/index.js';

export interface TestServer {
  app: FastifyInstance;
  ctx: AppContext;
  clock: ManualClock;
  dataDir: string;
  close(): Promise<void>;
}

export async function startTestServer(
  opts: { env?: Record<string, string>; drivers?: Partial<Drivers>; fulfillers?: FulfillerLine[] } = {},
): Promise<TestServer> {
  const dataDir = testDataDir();
  const { database, drop } = await openTestDatabase();
  const config = testConfig(dataDir, opts.env);
  const clock = new ManualClock(TEST_START);
  const { app, ctx } = await buildApp({ config, database, clock, logger: false, drivers: opts.drivers, fulfillers: opts.fulfillers });
  await app.ready();
  return {
    app,
    ctx,
    clock,
    dataDir,
    async close() {
      await app.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The moment every test server's clock starts at. */
export const TEST_START = new Date('2026-11-23T08:00:00Z');

/** A test server's own DATA_DIR, walkable by the machines' own uids (as root, a machine runs as one: drivers/compute/local/host-uids.ts). */
export function testDataDir(): string {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
  chmodSync(dataDir, 0o711);
  return dataDir;
}

/** The configuration of every test server (one, or a replica of several), `env` over it. */
export function testConfig(dataDir: string, env: Record<string, string> = {}) {
  return loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    CODE_IP_LIMIT_PER_HOUR: '10000',
    WEB_DIST: path.join(dataDir, 'web'),
    // The embedded stand-ins' pages (/dev/outbox, /dev/compute, the sandbox scan page) that tests read and click.
    DEV_TOOLS: 'true',
    // The simulated fleet unless a test asks for real sandboxes (its delays and faults are what the suites drive).
    COMPUTE_DRIVER: 'simulated',
    SSH_GATEWAY_PORT: '0',
    MACHINE_PORT: '0',
    ...env,
  });
}

export async function openTestDatabase(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) return { database: await openDatabase({ template: await testTemplate() }), drop: async () => {} };
  const scratch = await createScratchDatabase(adminUrl, 'console_test');
  return { database: await openDatabase({ url: scratch.url, poolSize: 5 }), drop: scratch.drop };
}

export function json<T = any>(res: LightMyRequestResponse): T {
  return JSON.parse(res.body) as T;
}

export async function post(app: FastifyInstance, url: string, payload?: unknown, token?: string) {
  return app.inject({ method: 'POST', url, payload: payload as object, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

export async function put(app: FastifyInstance, url: string, payload?: unknown, token?: string) {
  return app.inject({ method: 'PUT', url, payload: payload as object, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

export async function del(app: FastifyInstance, url: string, token?: string) {
  return app.inject({ method: 'DELETE', url, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

export async function get(app: FastifyInstance, url: string, token?: string) {
  return app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** Asks for a code and reads it back from the embedded outbox, as a script or browser test would. */
export async function requestCode(app: FastifyInstance, mobile: string, scene: string, token?: string): Promise<string> {
  const sent = await post(app, '/api/v1/users/verify/smscode', { mobile, scene }, token);
  if (sent.statusCode !== 200) throw new Error(`smscode ${sent.statusCode}: ${sent.body}`);
  return latestCode(app, mobile);
}

export async function latestCode(app: FastifyInstance, to: string): Promise<string> {
  const res = await get(app, `/dev/outbox?to=${encodeURIComponent(to)}`);
  return json<{ items: { code: string }[] }>(res).items[0]!.code;
}

let mobileSeq = 0;
/** A distinct valid mobile number per call within a test file. */
export function newMobile(): string {
  mobileSeq += 1;
  return `139${String(Date.now() % 100000).padStart(5, '0')}${String(mobileSeq).padStart(3, '0')}`;
}

export const PASSWORD = 'Abcd1234';

export async function registerUser(s: TestServer, mobile = newMobile(), password = PASSWORD) {
  const code = await requestCode(s.app, mobile, 'register');
  const res = await post(s.app, '/userapi/api/v2.1/register', { mobile, code, password, agreed: true });
  if (res.statusCode !== 200) throw new Error(`register ${res.statusCode}: ${res.body}`);
  // Later codes for the same number must wait out the 60 s window.
  s.clock.advance(61_000);
  return { mobile, password, ...json<{ token: string; user: { id: string } }>(res) };
}

export async function countRows(s: TestServer, table: string): Promise<number> {
  const res = await s.ctx.db.execute(`select count(*)::int as n from ${table}`);
  const rows = (res as unknown as { rows: { n: number }[] }).rows;
  return rows[0]!.n;
}

/** A multipart/form-data body with one `file` field, as a browser's upload sends it. */
export function multipart(name: string, content: Buffer, type = 'application/octet-stream') {
  const boundary = '----console-test';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), content, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

/** A multipart/form-data body with several `file` fields (a bulk upload). */
export function multipartFiles(files: { name: string; content: Buffer; type?: string }[]) {
  const boundary = '----console-test-files';
  const parts = files.map((f) =>
    Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${f.name}"\r\nContent-Type: ${f.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      f.content,
      Buffer.from('\r\n'),
    ]),
  );
  return {
    payload: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

/** A real PNG of `width`×`height` in one colour (browsers draw it), e.g. for datasets. */
export function pngImage(width: number, height: number, rgb: [number, number, number] = [120, 80, 200]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([PNG.subarray(0, 8), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

export const CHILD_PASSWORD = 'Kid12345';

/** A child account of `parent` with the given permissions, logged in. */
export async function childAccount(
  s: TestServer,
  parent: { token: string; mobile: string },
  childName: string,
  permissions: Partial<Record<PermissionFlag, boolean>>,
) {
  const made = await post(s.app, API.children, { childName, password: CHILD_PASSWORD, permissions }, parent.token);
  if (made.statusCode !== 200) throw new Error(`child ${made.statusCode}: ${made.body}`);
  const login = await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName, password: CHILD_PASSWORD });
  return { id: json<{ id: string }>(made).id, token: json<{ token: string }>(login).token };
}

/** Real-name certification (personal) through the API, with the sandbox driver's accepted identity. */
export async function certify(s: TestServer, token: string): Promise<void> {
  await post(s.app, API.certifyPersonal, { name: '张三丰', idNumber: '11010519491231002X' }, token);
  const done = await post(s.app, API.certifyPersonalConfirm, undefined, token);
  if (done.statusCode !== 200) throw new Error(`certify ${done.statusCode}: ${done.body}`);
}

/** The smallest byte string the server recognises as a PNG. */
export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);

/**
 * An ed25519 key pair in OpenSSH format. ssh2's generator drops a leading zero byte of the public
 * key about once in 256 (a 31-byte key no SSH server takes): such a pair is drawn again.
 */
export function ed25519KeyPair(): { public: string; private: string } {
  for (;;) {
    const pair = sshUtils.generateKeyPairSync('ed25519');
    if (pair.public.startsWith('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI')) return pair;
  }
}

/** Buys the RTX 4090 时长包 through the API (paid from the balance) and sets what it holds to `ms` of card time; returns its id. */
export async function buyCardTime(s: TestServer, token: string, ms: bigint): Promise<string> {
  const order = json<{ orderUid: string }>(await post(s.app, API.aiOrderCreate, { productId: 'gpu-hours-4090-100' }, token));
  const paid = await post(s.app, `/order/api/v2.1/tiio/resource/${order.orderUid}/pay`, { method: 'Balance' }, token);
  if (json(paid).status !== 'Success') throw new Error(`package ${paid.statusCode}: ${paid.body}`);
  const res = await s.ctx.db.execute(
    `update resource_packages p set total = ${ms}, remain = ${ms} from orders o where o.id = p.order_id and o.order_uid = '${order.orderUid}' returning p.id`,
  );
  return (res as unknown as { rows: { id: string }[] }).rows[0]!.id;
}

/** What a 时长包 has left, in card-milliseconds. */
export async function cardTimeLeft(s: TestServer, packageId: string): Promise<bigint> {
  const res = await s.ctx.db.execute(`select remain::text as r from resource_packages where id = '${packageId}'`);
  return BigInt((res as unknown as { rows: { r: string }[] }).rows[0]!.r);
}

/** A new account with this much cash (yuan), put there as a compensation. */
export async function fundedUser(s: TestServer, yuan: string) {
  const u = await registerUser(s);
  if (yuan !== '0') {
    await s.ctx.ledger.post({
      key: `test:${u.user.id}:cash`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(yuan) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits(yuan) },
      ],
    });
  }
  return u;
}
