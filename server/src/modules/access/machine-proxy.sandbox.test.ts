/**
 * The services of a real sandbox behind the proxy, on the machines' own origins. The console's
 * links are doors: the owner's console cookie gets a one-use ticket to the instance's origin
 * (`<id>.localhost:<MACHINE_PORT>`), which trades it for a cookie bound to that instance. The
 * notebook: pages, REST, a kernel over WebSocket evaluating 1+1; logging out ends the kernel
 * connection. 自定义服务: what the user serves on port 6006 inside. Nobody else gets in.
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
import { lacks } from '../../../test/host-packages.js';
import { enterMachine, listen, localEnv, localhostLookup, localKit, machineRequest } from '../../../test/local-kit.js';
import { execIn, runIn } from '../../drivers/compute/local/sandbox.js';

let s: TestServer;
let base: string;
const kit = localKit(() => s);
const consoleCookie = (token: string) => ({ cookie: `${SESSION_COOKIE}=${token}; other=1` });

/** The notebook answers about 1.5 s after the machine starts: 503 until then. */
async function untilUp(origin: string, id: string, cookie: string) {
  for (let i = 0; i < 100; i++) {
    const res = await machineRequest(`${origin}/jupyter/${id}/api/status`, { headers: { cookie } });
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
  s = await startTestServer({ env: localEnv() });
  base = await listen(s);
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap', 'python3'))('自定义服务 (port 6006) proxy', () => {
  it("says how to start a service until one listens, then serves it from its root on the instance's origin; only to the owner", async () => {
    const u = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const url = (await kit.instance(u.token, id)).access!.serviceUrl!;
    expect(url).toBe(`${s.ctx.config.publicBaseUrl}/service/${id}/`);
    const { url: page, origin, cookie } = await enterMachine(base, u.token, `/service/${id}/`);
    expect(origin).toBe(`http://${id}.localhost:${s.ctx.machineOrigins.port}`);
    expect(page).toBe(`${origin}/service/${id}/`);
    const local = `${origin}/service/${id}`;
    const get = (p: string, c = cookie) => machineRequest(`${local}${p}`, { headers: { cookie: c } });

    let hint = await get('/');
    for (let i = 0; i < 100 && hint.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      hint = await get('/');
    }
    expect(hint.status).toBe(502);
    expect(hint.text).toContain('6006 端口没有服务在监听');

    writeFileSync(path.join(await kit.dataDisk(id), 'hello.txt'), 'served-from-6006\n');
    execIn(kit.driver().sandbox(id)!, ['python3', '-m', 'http.server', '6006', '--bind', '127.0.0.1', '--directory', '/root/autodl-tmp'], { stdio: 'ignore' });
    let served = await get('/hello.txt');
    for (let i = 0; i < 100 && served.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      served = await get('/hello.txt');
    }
    expect(served.text).toBe('served-from-6006\n');
    expect((await fetch(`${base}/service/${id}/hello.txt`, { headers: consoleCookie(other.token), redirect: 'manual' })).status).toBe(403);
    expect((await fetch(`${base}/service/${id}/hello.txt`, { redirect: 'manual' })).status).toBe(401);
    // The console's own cookie means nothing on the machine origin; without the machine's, a page is sent to the door.
    const bare = await get('/hello.txt', consoleCookie(u.token).cookie);
    expect(bare.status).toBe(302);
    expect(bare.headers.location).toBe(`${s.ctx.config.publicBaseUrl}/service/${id}/hello.txt`);

    // The machine's root swaps its socket for a link to a socket of the host: the console does not follow it.
    const hostDir = mkdtempSync(path.join(tmpdir(), 'console-host-sock-'));
    const hostSocket = path.join(hostDir, 'secret.sock');
    const secret = createServer((c) => c.end('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhost-secret'));
    await new Promise<void>((r) => secret.listen(hostSocket, () => r()));
    await runIn(kit.driver().sandbox(id)!, ['/bin/sh', '-c', `rm -f /run/service.sock && ln -s ${hostSocket} /run/service.sock`]);
    const swapped = await get('/hello.txt');
    expect(swapped.status).toBe(503);
    expect(swapped.text).not.toContain('host-secret');
    secret.close();
  });
});

/** Answers with the Cookie header it was given, and tries to set cookies of its own and of the console's. */
const COOKIE_ECHO = `
import http.server
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (self.headers.get('Cookie') or '').encode()
        self.send_response(200)
        for c in ('machine-x=planted; Path=/', 'jweToken=planted; Path=/', 'theirs=kept; Path=/'):
            self.send_header('Set-Cookie', c)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(('127.0.0.1', 6006), Echo).serve_forever()
`;

describe.skipIf(lacks('bubblewrap', 'python3'))('what a service sees and sets', () => {
  it("never sees the console's cookie nor the machine origin's, and cannot set them; its own pass both ways", async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const { origin, cookie } = await enterMachine(base, u.token, `/service/${id}/`);
    execIn(kit.driver().sandbox(id)!, ['python3', '-c', COOKIE_ECHO], { stdio: 'ignore' });
    const ask = () => machineRequest(`${origin}/service/${id}/`, { headers: { cookie: `${cookie}; ${SESSION_COOKIE}=${u.token}; theirs=1` } });
    let res = await ask();
    for (let i = 0; i < 100 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      res = await ask();
    }
    expect(res.text).toBe('theirs=1');
    expect(res.headers['set-cookie']).toEqual(['theirs=kept; Path=/']);
  });
});

describe.skipIf(lacks('bubblewrap', 'python3-notebook'))('notebook proxy', () => {
  it('serves the owner the notebook: its page, a kernel that evaluates 1+1, and ends the kernel socket on logout', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    expect((await kit.instance(u.token, id)).access!.jupyterUrl).toBe(`${s.ctx.config.publicBaseUrl}/jupyter/${id}/tree`);
    const { url, origin, cookie } = await enterMachine(base, u.token, `/jupyter/${id}/tree`);
    expect(url).toBe(`${origin}/jupyter/${id}/tree`);
    await untilUp(origin, id, cookie);

    const page = await machineRequest(url, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Jupyter');

    const started = await machineRequest(`${origin}/jupyter/${id}/api/kernels`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'python3' }),
    });
    expect(started.status).toBe(201);
    const kernel = JSON.parse(started.text) as { id: string };

    const ws = new WebSocket(`${origin.replace('http', 'ws')}/jupyter/${id}/api/kernels/${kernel.id}/channels`, {
      headers: { cookie, origin },
      lookup: localhostLookup,
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect(await execute(ws, '1+1')).toBe('2');

    const closed = new Promise((resolve) => ws.once('close', resolve));
    expect((await post(s.app, API.logout, undefined, u.token)).statusCode).toBe(200);
    await closed;
    expect((await machineRequest(`${origin}/jupyter/${id}/api/status`, { headers: { cookie } })).status).toBe(401);
  });

  it('refuses another user, no session, a bearer header instead of the cookie, and a stopped machine at the door', async () => {
    const owner = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await kit.runningInstance(owner.token);
    const door = (headers: Record<string, string> = {}) => fetch(`${base}/jupyter/${id}/tree`, { headers, redirect: 'manual' });
    expect((await door(consoleCookie(other.token))).status).toBe(403);
    expect((await door()).status).toBe(401);
    expect((await door({ authorization: `Bearer ${owner.token}` })).status).toBe(401);
    await kit.act(owner.token, id, 'stop');
    await kit.reach(owner.token, id, 'Stopped');
    expect((await door(consoleCookie(owner.token))).status).toBe(409);
  });

  it('binds the machine origin to one instance: a ticket works once, a cookie opens only its own instance, forgeries nothing', async () => {
    const u = await kit.fundedUser('100');
    const a = await kit.runningInstance(u.token);
    const b = await kit.runningInstance(u.token);
    const door = await fetch(`${base}/jupyter/${a}/api/status`, { headers: consoleCookie(u.token), redirect: 'manual' });
    const ticketUrl = door.headers.get('location')!;
    const first = await machineRequest(ticketUrl);
    expect(first.status).toBe(302);
    expect(first.headers['set-cookie']![0]).toMatch(/HttpOnly/i);
    expect((await machineRequest(ticketUrl)).status).toBe(401);

    const cookieA = String(first.headers['set-cookie']![0]!.split(';')[0]);
    const originB = s.ctx.machineOrigins.originOf(b);
    // A's cookie, renamed for B and sent to B's origin: sealed for A, refused.
    const forgedForB = cookieA.replace(`machine-${a}`, `machine-${b}`);
    expect((await machineRequest(`${originB}/jupyter/${b}/api/status`, { method: 'POST', headers: { cookie: forgedForB } })).status).toBe(401);
    expect((await machineRequest(`${originB}/jupyter/${b}/api/status`, { method: 'POST', headers: { cookie: `machine-${b}=nonsense` } })).status).toBe(401);
    expect((await machineRequest(`${originB}${'/_console/enter'}?ticket=nonsense`)).status).toBe(401);

    // Each instance under its own host only: A's ticket is not traded under B's host, A's cookie
    // and path do not work there (a page of B cannot reach A's notebook), a garbage cookie sends a page back to the door.
    const again = (await fetch(`${base}/jupyter/${a}/api/status`, { headers: consoleCookie(u.token), redirect: 'manual' })).headers.get('location')!;
    const onB = new URL(again);
    onB.host = new URL(originB).host;
    expect((await machineRequest(onB.href)).status).toBe(401);
    expect((await machineRequest(`${originB}/jupyter/${a}/api/status`, { method: 'POST', headers: { cookie: cookieA } })).status).toBe(404);
    const garbage = await machineRequest(`${s.ctx.machineOrigins.originOf(a)}/jupyter/${a}/tree`, { headers: { cookie: `machine-${a}=stale` } });
    expect([garbage.status, garbage.headers.location]).toEqual([302, `${s.ctx.config.publicBaseUrl}/jupyter/${a}/tree`]);
    // Ids as the console writes them only (lower case): another spelling is another cookie, not this instance.
    expect((await fetch(`${base}/jupyter/${a.toUpperCase()}/tree`, { headers: consoleCookie(u.token), redirect: 'manual' })).status).toBe(404);

    // The console's origin serves none of it: a POST or a WebSocket to the notebook there is not found.
    const onConsole = await fetch(`${base}/jupyter/${a}/api/kernels`, { method: 'POST', headers: { authorization: `Bearer ${u.token}` } });
    expect(onConsole.status).toBe(404);
    // A WebSocket there reaches no kernel: it is closed without a message.
    const ws = new WebSocket(`${base.replace('http', 'ws')}/jupyter/${a}/api/kernels/x/channels`, { headers: consoleCookie(u.token) });
    const messages: unknown[] = [];
    ws.on('message', (m) => messages.push(m));
    ws.on('error', () => {});
    await new Promise((resolve) => ws.once('close', resolve));
    expect(messages).toEqual([]);
  });
});
