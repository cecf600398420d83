/**
 * `npm run operator -- grant|revoke` while a server owns the embedded database: the command finds
 * the server in DATA_DIR/server.json and changes the role through it, and the role applies to the
 * user's very next request (sessions read the user afresh, they do not remember the role).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API } from '@console/contract';
import { eq } from 'drizzle-orm';
import { get, json, newMobile, registerUser, startTestServer, type TestServer } from '../../test/harness.js';
import { operatorAudit } from '../db/schema.js';

const SERVER_DIR = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(SERVER_DIR, 'src/cli/operator.ts');

function runCli(dataDir: string, ...args: string[]): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  // The embedded database: the command must find the running server, not open a database of its own.
  delete env.DATABASE_URL;
  delete env.OPERATOR_MOBILES;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: SERVER_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('npm run operator -- grant / revoke with the server running on PGlite', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    s.ctx.localOperatorToken = 'cli-test-token';
    const url = await s.app.listen({ port: 0, host: '127.0.0.1' });
    // What main.ts announces while it owns the embedded database.
    writeFileSync(path.join(s.dataDir, 'server.json'), JSON.stringify({ pid: process.pid, url, token: 'cli-test-token' }), { mode: 0o600 });
  });
  afterAll(async () => s.close());

  it('grants and revokes through the server, taking effect on the next request of an existing session', async () => {
    const u = await registerUser(s);
    const operatorArea = () => get(s.app, `${API.operatorUsers}?page=1&pageSize=10`, u.token);
    expect((await operatorArea()).statusCode).toBe(403);

    const granted = await runCli(s.dataDir, 'grant', u.mobile);
    expect(granted.out).toContain(`${u.mobile} 已获得运营权限`);
    expect(granted.code).toBe(0);
    expect(json(await get(s.app, API.meInfo, u.token))).toMatchObject({ isOperator: true });
    expect((await operatorArea()).statusCode).toBe(200);

    const revoked = await runCli(s.dataDir, 'revoke', u.mobile);
    expect(revoked.out).toContain(`${u.mobile} 已失去运营权限`);
    expect(revoked.code).toBe(0);
    const refused = await operatorArea();
    expect(refused.statusCode).toBe(403);
    expect(json(refused)).toMatchObject({ code: 40300002 });
    expect(json(await get(s.app, API.meInfo, u.token))).toMatchObject({ isOperator: false });
  }, 60_000);

  it('grants and revokes one role (财务), recorded in the audit trail as the local command', async () => {
    const u = await registerUser(s);
    const granted = await runCli(s.dataDir, 'role', 'grant', u.mobile, 'finance');
    expect(granted.out).toContain(`${u.mobile} 已获得「财务」角色；现有角色：财务`);
    expect((await get(s.app, `${API.operatorInvoices}?page=1`, u.token)).statusCode).toBe(200);
    expect((await get(s.app, API.operatorModelChannels, u.token)).statusCode).toBe(403);
    const [row] = await s.ctx.db.select().from(operatorAudit).where(eq(operatorAudit.targetId, u.user.id));
    expect(row).toMatchObject({ action: 'role.grant', actorId: null, after: { mobile: u.mobile, roles: ['finance'] } });
    const bad = await runCli(s.dataDir, 'role', 'grant', u.mobile, 'boss');
    expect(bad.code).toBe(2);
    expect(bad.out).toContain('role 须为');
  }, 60_000);

  it('says so when the number is not registered, changing nothing', async () => {
    const unknown = newMobile();
    const res = await runCli(s.dataDir, 'grant', unknown);
    expect(res.code).toBe(2);
    expect(res.out).toContain(`手机号 ${unknown} 未注册`);
  });
});
