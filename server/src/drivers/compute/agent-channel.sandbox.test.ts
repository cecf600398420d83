/**
 * Every way in for an instance behind a compute agent (issue 31 §2): the console on COMPUTE_DRIVER
 * agent, the agent serving the protocol on the real local driver (bubblewrap sandboxes), and the
 * web terminal, the SSH gateway (shell, exec, sftp) and 自定义服务 going through the agent's
 * signed channel. A bad, replayed or another machine's signature opens nothing.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { Client, type SFTPWrapper } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, type Order, type TerminalServerMessage } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { enterMachine, HOST_SYSTEM_IMAGE, listen, localEnv, localhostLookup, machineRequest } from '../../../test/local-kit.js';
import { instanceKit } from '../../../test/instances-kit.js';
import { testTemplate } from '../../../test/pglite-template.js';
import { systemClock } from '../../clock.js';
import { openDatabase, type Database } from '../../db/client.js';
import { AgentComputeDriver, agentAuthorization } from './agent.js';
import { computeAgentServer } from './agent-server.js';
import { shellTarget } from './agent-channel.js';
import { LocalComputeDriver } from './local/driver.js';
import { execIn } from './local/sandbox.js';

const KEY_ID = 'console-1';
const SECRET = 'a-shared-secret-of-at-least-32-characters';

let s: TestServer;
let base: string;
let agentUrl: string;
let agentApp: FastifyInstance;
let agentDb: Database;
let local: LocalComputeDriver;
let driver: AgentComputeDriver;
let agentDir: string;
const kit = instanceKit(() => s);

/** Lets the agent's driver finish, the console read its events and the channel's state, until the instance has `status`. */
async function reach(token: string, id: string, status: string) {
  for (let i = 0; i < 100; i++) {
    await local.settled();
    await s.ctx.reconciler.tick();
    await driver.refreshChannel();
    if ((await kit.instance(token, id)).status === status) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`instance ${id} never reached ${status}`);
}

async function runningInstance(token: string, sizeId = 'gen-c2m4'): Promise<string> {
  const order = { sizeId, regionId: 'bj-b', imageId: HOST_SYSTEM_IMAGE, dataDiskGb: 20, cycle: 'Usage', duration: 1 };
  const res = await post(s.app, API.orderCreate, order, token);
  expect(res.statusCode, res.body).toBe(200);
  const [o] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', token)).items;
  await reach(token, o!.resourceId!, 'Running');
  return o!.resourceId!;
}

/** Runs `code` in a notebook kernel over its WebSocket; the result's text. */
function execute(ws: WebSocket, code: string): Promise<string> {
  const msgId = randomUUID();
  const header = { msg_id: msgId, username: 'test', session: randomUUID(), msg_type: 'execute_request', version: '5.3', date: new Date().toISOString() };
  const content = { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true };
  ws.send(JSON.stringify({ header, parent_header: {}, metadata: {}, content, channel: 'shell', buffers: [] }));
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

/** The desktop socket's first RFB message (the server's protocol version), retrying while the desktop starts. */
async function rfbGreeting(id: string, token: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const greeting = await new Promise<string | null>((resolve) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceDesktop.replace(':id', id)}`, { headers: { authorization: `Bearer ${token}` } });
      ws.once('message', (data) => {
        resolve((data as Buffer).toString());
        ws.close();
      });
      ws.once('close', () => resolve(null));
      ws.once('error', () => resolve(null));
    });
    if (greeting) return greeting;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the desktop never answered');
}

/** A web terminal: what arrived so far, and waiting for text to appear. */
class Term {
  output = '';
  messages: TerminalServerMessage[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, binary) => {
      if (binary) this.output += (data as Buffer).toString();
      else this.messages.push(JSON.parse(data.toString()) as TerminalServerMessage);
    });
  }

  static open(id: string, token: string, query = ''): Promise<Term> {
    const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceTerminal.replace(':id', id)}${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const term = new Term(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(term));
      ws.once('error', reject);
    });
  }

  send(m: object) {
    this.ws.send(JSON.stringify(m));
  }

  type(line: string) {
    this.send({ type: 'input', data: `${line}\r` });
  }

  async waitFor(re: RegExp, ms = 15_000): Promise<RegExpMatchArray> {
    for (const end = Date.now() + ms; Date.now() < end;) {
      const m = re.exec(this.output);
      if (m) return m;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`never saw ${re}: ${JSON.stringify(this.output.slice(-500))}`);
  }
}

function sshConnect(port: number, username: string, password: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.once('ready', () => resolve(c));
    c.once('error', reject);
    c.connect({ host: '127.0.0.1', port, username, password, readyTimeout: 10_000 });
  });
}

function sshExec(c: Client, command: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) =>
    c.exec(command, (err, ch) => {
      if (err) return reject(err);
      let out = '';
      let code = -1;
      ch.on('data', (d: Buffer) => (out += d.toString()));
      ch.stderr.on('data', (d: Buffer) => (out += d.toString()));
      ch.on('exit', (n: number) => (code = n));
      ch.on('close', () => resolve({ code, out }));
    }),
  );
}

/** Opens a channel to the agent directly; resolves to the HTTP status of a refusal, or 101 once it opened. */
function openChannel(target: string, authorization: string | undefined): Promise<number> {
  const url = new URL(target, `${agentUrl}/`);
  const ws = new WebSocket(url.href.replace('http', 'ws'), { headers: authorization ? { authorization } : {} });
  return new Promise((resolve) => {
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!));
    ws.once('error', () => resolve(0));
  });
}

beforeAll(async () => {
  agentDb = await openDatabase({ template: await testTemplate() });
  agentDir = mkdtempSync(path.join(tmpdir(), 'agent-host-'));
  chmodSync(agentDir, 0o711);
  local = new LocalComputeDriver({
    db: agentDb.db,
    clock: systemClock,
    log: () => {},
    dir: path.join(agentDir, 'local-compute'),
    sshHost: '127.0.0.1',
    sshPort: () => s.ctx.sshEndpoint.port,
  });
  agentApp = Fastify({ logger: false });
  await agentApp.register(computeAgentServer, { driver: local, keys: { [KEY_ID]: SECRET } });
  await agentApp.listen({ port: 0, host: '127.0.0.1' });
  agentUrl = `http://127.0.0.1:${(agentApp.server.address() as { port: number }).port}`;
  driver = new AgentComputeDriver({ baseUrl: agentUrl, keyId: KEY_ID, secret: SECRET, channelRefreshMs: 200 });
  s = await startTestServer({
    env: localEnv({ COMPUTE_DRIVER: 'agent', COMPUTE_AGENT_URL: agentUrl, COMPUTE_AGENT_KEY_ID: KEY_ID, COMPUTE_AGENT_SECRET: SECRET }),
    drivers: { compute: driver },
  });
  base = await listen(s);
});

afterAll(async () => {
  await s?.close();
  await driver?.shutdown();
  await agentApp?.close();
  await local?.shutdown();
  await agentDb?.close();
  rmSync(agentDir, { recursive: true, force: true });
});

describe.skipIf(lacks('bubblewrap', 'desktop'))('the desktop through the agent', () => {
  it("relays the owner's noVNC socket to the 云桌面's VNC server on the agent's host", async () => {
    const token = (await kit.fundedUser('100')).token;
    const id = await runningInstance(token, 'dsk-c4m8');
    expect(await rfbGreeting(id, token)).toMatch(/^RFB 003\.00\d\n$/);
  });
});

describe.skipIf(lacks('bubblewrap', 'openssh-sftp-server', 'python3-notebook'))('ways in through the agent', () => {
  let token: string;
  let id: string;
  beforeAll(async () => {
    token = (await kit.fundedUser('100')).token;
    id = await runningInstance(token);
  });

  it('web terminal: a login shell in the machine on the agent, typed into and resized', async () => {
    const term = await Term.open(id, token, '?cols=100&rows=30');
    term.type('echo hi-from-$((40+2))');
    await term.waitFor(/hi-from-42/);
    term.type('stty size');
    await term.waitFor(/30 100/);
    term.send({ type: 'resize', cols: 132, rows: 43 });
    term.type('stty size');
    await term.waitFor(/43 132/);
    expect(term.output).not.toContain('\r\r\n'); // line ends as the machine's pty makes them, not turned twice
    term.ws.close();
  });

  it('SSH gateway: a command with its exit status, a pty shell, and sftp', async () => {
    const access = (await kit.instance(token, id)).access!;
    const c = await sshConnect(access.sshPort!, access.sshUser, access.sshPassword!);
    try {
      expect(await sshExec(c, 'echo out; echo err >&2; exit 3')).toEqual({ code: 3, out: expect.stringMatching(/out\n[\s\S]*err\n|err\n[\s\S]*out\n/) });
      const piped = await new Promise<string>((resolve, reject) =>
        c.exec('wc -c', (err, ch) => {
          if (err) return reject(err);
          let out = '';
          ch.on('data', (d: Buffer) => (out += d.toString()));
          ch.on('close', () => resolve(out.trim()));
          ch.end(Buffer.alloc(300_000, 'x'));
        }),
      );
      expect(piped).toBe('300000');
      const shellOut = await new Promise<string>((resolve, reject) =>
        c.shell({ cols: 90, rows: 20 }, (err, ch) => {
          if (err) return reject(err);
          let out = '';
          ch.on('data', (d: Buffer) => {
            out += d.toString();
            if (/20 90/.test(out)) ch.end('exit\n');
          });
          ch.on('close', () => resolve(out));
          ch.write('stty size\n');
        }),
      );
      expect(shellOut).toMatch(/20 90/);
      const sftp = await new Promise<SFTPWrapper>((resolve, reject) => c.sftp((err, w) => (err ? reject(err) : resolve(w))));
      await new Promise<void>((resolve, reject) => sftp.writeFile('/root/via-sftp.txt', 'through the agent\n', (err) => (err ? reject(err) : resolve())));
      const back = await new Promise<string>((resolve, reject) => sftp.readFile('/root/via-sftp.txt', (err, b) => (err ? reject(err) : resolve(b.toString()))));
      expect(back).toBe('through the agent\n');
      expect((await sshExec(c, 'cat /root/via-sftp.txt')).out).toBe('through the agent\n');
    } finally {
      c.end();
    }
  });

  it("自定义服务: the machine's port 6006 through the console's proxy and the agent", async () => {
    execIn(local.sandbox(id)!, ['python3', '-m', 'http.server', '6006', '--bind', '127.0.0.1', '--directory', '/etc'], { stdio: 'ignore' });
    const { origin, cookie } = await enterMachine(base, token, `/service/${id}/`);
    let served = await machineRequest(`${origin}/service/${id}/hostname`, { headers: { cookie } });
    for (let i = 0; i < 100 && served.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      served = await machineRequest(`${origin}/service/${id}/hostname`, { headers: { cookie } });
    }
    expect(served.status, served.text).toBe(200);
    expect(served.text.trim().length).toBeGreaterThan(0);
  });

  it('JupyterLab through the machine proxy and the agent: the page, and a kernel over its WebSocket evaluating 1+1', async () => {
    const { url, origin, cookie } = await enterMachine(base, token, `/jupyter/${id}/tree`);
    let status = await machineRequest(`${origin}/jupyter/${id}/api/status`, { headers: { cookie } });
    for (let i = 0; i < 150 && status.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await machineRequest(`${origin}/jupyter/${id}/api/status`, { headers: { cookie } });
    }
    expect(status.status, status.text).toBe(200);
    expect((await machineRequest(url, { headers: { cookie } })).text).toContain('Jupyter');
    const started = await machineRequest(`${origin}/jupyter/${id}/api/kernels`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'python3' }),
    });
    expect(started.status, started.text).toBe(201);
    const kernel = JSON.parse(started.text) as { id: string };
    const ws = new WebSocket(`${origin.replace('http', 'ws')}/jupyter/${id}/api/kernels/${kernel.id}/channels`, {
      headers: { cookie, origin },
      lookup: localhostLookup,
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect(await execute(ws, '1+1')).toBe('2');
    ws.close();
  });

  it("refuses a channel without a valid signature, a replayed one, and another machine's with this one's", async () => {
    const target = `/${shellTarget(id)}?nonce=n1`;
    const now = Math.floor(Date.now() / 1000);
    const good = agentAuthorization(KEY_ID, SECRET, 'GET', target, now, '');
    expect(await openChannel(target, undefined)).toBe(401);
    expect(await openChannel(target, agentAuthorization(KEY_ID, 'another-secret-of-at-least-32-characters', 'GET', target, now, ''))).toBe(401);
    expect(await openChannel(target, agentAuthorization(KEY_ID, SECRET, 'GET', target, now - 600, ''))).toBe(401);
    expect(await openChannel(target, good)).toBe(101);
    expect(await openChannel(target, good)).toBe(401); // replayed
    const other = await runningInstance(token);
    const otherTarget = target.replace(id, other);
    expect(await openChannel(otherTarget, agentAuthorization(KEY_ID, SECRET, 'GET', target, now, ''))).toBe(401);
    // The console's own bridge gets a signed URL for one machine, never the secret.
    const line = driver.shell(other)!;
    expect(JSON.stringify(line)).not.toContain(SECRET);
    expect(line.env.AGENT_CHANNEL_URL).toContain(other);
  });

  it('a stopped machine has no way in: the shell and its sockets are gone', async () => {
    const other = await runningInstance(token);
    expect(driver.shell(other)).not.toBeNull();
    expect((await kit.act(token, other, 'stop')).statusCode).toBe(200);
    await reach(token, other, 'Stopped');
    expect(driver.runningIds()).not.toContain(other);
    // The console's gate refuses a stopped instance first; the agent refuses the bridge itself as well.
    const line = driver.shell(other)!;
    const bridge = spawn(line.file, line.args, { env: line.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    bridge.stderr.on('data', (c: Buffer) => (said += c.toString()));
    const [status] = (await once(bridge, 'exit')) as [number | null];
    expect(status).not.toBe(0);
    expect(said).toContain('实例已不在运行中');
    expect(driver.socketOf(other, 'service')).toBeNull();
  });
});
