/**
 * A real server for tests: the same buildApp as production, on an in-memory PGlite, or on a fresh
 * PostgreSQL database when TEST_DATABASE_URL is set (the suite runs against both).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { utils as sshUtils } from 'ssh2';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createScratchDatabase } from './scratch-db.js';
import type { AppContext, Drivers } from '../src/context.js';

export interface TestServer {
  app: FastifyInstance;
  ctx: AppContext;
  clock: ManualClock;
  dataDir: string;
  close(): Promise<void>;
}

export async function startTestServer(opts: { env?: Record<string, string>; drivers?: Partial<Drivers> } = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
  // Walkable by the machines' own uids (as root, a machine runs as one: drivers/compute/local/host-uids.ts).
  chmodSync(dataDir, 0o711);
  const { database, drop } = await openTestDatabase();
  const config = loadConfig({
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
    ...opts.env,
  });
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const { app, ctx } = await buildApp({ config, database, clock, logger: false, drivers: opts.drivers });
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

export async function openTestDatabase(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) return { database: await openDatabase({}), drop: async () => {} };
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
