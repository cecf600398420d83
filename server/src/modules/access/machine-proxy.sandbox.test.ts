/**
 * The services of a real sandbox behind the console's proxy. The notebook: the owner's browser
 * session reaches it (pages, REST, a kernel over WebSocket evaluating 1+1); nobody else does, and
 * logging out ends the kernel connection. 自定义服务: what the user serves on port 6006 inside.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, SESSION_COOKIE } from '@console/contract';
import { post, startTestServer, type TestServer } from '../../../test/harness.js';
import { listen, localKit } from '../../../test/local-kit.js';
import { execIn, runIn } from '../../drivers/compute/local/sandbox.js';

let s: TestServer;
let base: string;
const kit = localKit(() => s);
const cookie = (token: string) => ({ cookie: `${SESSION_COOKIE}=${token}; other=1` });

/** The notebook answers about 1.5 s after the machine starts: 503 until then. */
async function untilUp(id: string, token: string) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${base}/jupyter/${id}/api/status`, { headers: cookie(token) });
    if (res.status === 200) return;
    expect(res.status).toBe(503);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the notebook never came up');
}

function execute(ws: WebSocket, code: string): Promise<string> {
  const msgId = randomUUID();
  ws.send(
    JSON.stringify({
      header: { msg_id: msgId, username: 'test', session: randomUUID(), msg_type: 'execute_request', version: '5.3', date: new Date().toISOString() },
      parent_header: {},
      metadata: {},
      content: { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true },
      channel: 'shell',
      buffers: [],
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no execute_result')), 20_000);
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as { msg_type: string; parent_header: { msg_id?: string }; content: { data?: Record<string, string> } };
      if (m.msg_type === 'execute_result' && m.parent_header.msg_id === msgId) {
        clearTimeout(timer);
        resolve(m.content.data!['text/plain']!);
      }
    });
  });
}

beforeAll(async () => {
  s = await startTestServer({ env: { COMPUTE_DRIVER: 'local' } });
  base = await listen(s);
});
afterAll(async () => s.close());

describe('自定义服务 (port 6006) proxy', () => {
  it('says how to start a service until one listens, then serves it from its root; only to the owner', async () => {
    const u = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const url = (await kit.instance(u.token, id)).access!.serviceUrl!;
    expect(url).toBe(`${s.ctx.config.publicBaseUrl}/service/${id}/`);
    const local = `${base}/service/${id}`;

    let hint: Response | null = null;
    for (let i = 0; i < 100 && (hint = await fetch(`${local}/`, { headers: cookie(u.token) })).status === 503; i++) await new Promise((r) => setTimeout(r, 50));
    expect(hint!.status).toBe(502);
    expect(await hint!.text()).toContain('6006 端口没有服务在监听');

    writeFileSync(path.join(s.dataDir, 'local-compute', 'hosts', (await kit.row(id)).hostId!, id, 'data', 'hello.txt'), 'served-from-6006\n');
    execIn(kit.driver().sandbox(id)!, ['python3', '-m', 'http.server', '6006', '--bind', '127.0.0.1', '--directory', '/root/autodl-tmp'], { stdio: 'ignore' });
    let served: Response | null = null;
    for (let i = 0; i < 100 && (served = await fetch(`${local}/hello.txt`, { headers: cookie(u.token) })).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await served!.text()).toBe('served-from-6006\n');
    expect((await fetch(`${local}/hello.txt`, { headers: cookie(other.token) })).status).toBe(403);
    expect((await fetch(`${local}/hello.txt`)).status).toBe(401);

    // The machine's root swaps its socket for a link to a socket of the host: the console does not follow it.
    const hostDir = mkdtempSync(path.join(tmpdir(), 'console-host-sock-'));
    const hostSocket = path.join(hostDir, 'secret.sock');
    const secret = createServer((c) => c.end('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhost-secret'));
    await new Promise<void>((r) => secret.listen(hostSocket, () => r()));
    await runIn(kit.driver().sandbox(id)!, ['/bin/sh', '-c', `rm -f /run/service.sock && ln -s ${hostSocket} /run/service.sock`]);
    const swapped = await fetch(`${local}/hello.txt`, { headers: cookie(u.token) });
    expect(swapped.status).toBe(503);
    expect(await swapped.text()).not.toContain('host-secret');
    secret.close();
  });
});

describe('notebook proxy', () => {
  it('serves the owner the notebook: its page, a kernel that evaluates 1+1, and ends the kernel socket on logout', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    expect((await kit.instance(u.token, id)).access!.jupyterUrl).toBe(`${s.ctx.config.publicBaseUrl}/jupyter/${id}/tree`);
    await untilUp(id, u.token);

    const page = await fetch(`${base}/jupyter/${id}/tree`, { headers: cookie(u.token) });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Jupyter');

    const started = await fetch(`${base}/jupyter/${id}/api/kernels`, {
      method: 'POST',
      headers: { ...cookie(u.token), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'python3' }),
    });
    expect(started.status).toBe(201);
    const kernel = (await started.json()) as { id: string };

    const ws = new WebSocket(`${base.replace('http', 'ws')}/jupyter/${id}/api/kernels/${kernel.id}/channels`, {
      headers: { ...cookie(u.token), origin: base },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect(await execute(ws, '1+1')).toBe('2');

    const closed = new Promise((resolve) => ws.once('close', resolve));
    expect((await post(s.app, API.logout, undefined, u.token)).statusCode).toBe(200);
    await closed;
    expect((await fetch(`${base}/jupyter/${id}/api/status`, { headers: cookie(u.token) })).status).toBe(401);
  });

  it('refuses another user, no session, a bearer header instead of the cookie, and a stopped machine', async () => {
    const owner = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await kit.runningInstance(owner.token);
    expect((await fetch(`${base}/jupyter/${id}/tree`, { headers: cookie(other.token) })).status).toBe(403);
    expect((await fetch(`${base}/jupyter/${id}/tree`)).status).toBe(401);
    expect((await fetch(`${base}/jupyter/${id}/tree`, { headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(401);
    await kit.act(owner.token, id, 'stop');
    await kit.reach(owner.token, id, 'Stopped');
    expect((await fetch(`${base}/jupyter/${id}/tree`, { headers: cookie(owner.token) })).status).toBe(409);
  });
});
