/**
 * The console as deployed, on this machine: three `src/main.ts` processes on one scratch PostgreSQL
 * database, STORAGE_DRIVER=s3 against an S3 server process, REDIS_URL to the local Redis,
 * COMPUTE_DRIVER=agent against the simulated compute agent (`npm run compute-agent`'s program), and
 * Debian's HAProxy in front (round robin, health checks on /readyz, websocket timeouts). The tests
 * talk to HAProxy only; HAProxy names the replica that answered in `x-replica` so they can tell
 * where a request landed.
 *
 * Between the payment gateway and the console sits a relay (PUBLIC_BASE_URL points to it): it
 * forwards every request to HAProxy and keeps the gateway's notifications, so a test can deliver one
 * again, as Alipay does when it is not sure the first arrived.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createScratchDatabase } from '../scratch-db.js';

const SERVER_DIR = fileURLToPath(new URL('../..', import.meta.url));
export const REPLICA_NAMES = ['r1', 'r2', 'r3'] as const;
export type ReplicaName = (typeof REPLICA_NAMES)[number];
/** How long a stopping replica keeps serving with /readyz at 503: several of HAProxy's checks (every 300 ms). */
export const SHUTDOWN_DRAIN_MS = 2000;
const CHECK_INTERVAL_MS = 300;
/** Debian's haproxy (.ci/run installs it); in /usr/sbin, which a non-root PATH may lack. */
const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));

export interface Replica {
  name: ReplicaName;
  port: number;
  process: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  log: string;
  /** Its DATA_DIR: a pod's own volume, gone with the pod. */
  dataDir: string;
}

export interface Notification {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface Cluster {
  /** HAProxy's address: the only one the tests talk to. */
  url: string;
  replicas: Map<ReplicaName, Replica>;
  /** The gateway's notifications as they crossed the relay. */
  notifications: Notification[];
  databaseUrl: string;
  s3: { endpoint: string; bucket: string };
  /** The S3 server's folder: where the objects really are. */
  s3Dir: string;
  /** Seconds each replica took from spawn to its first 200 on /readyz. */
  coldStartSeconds: Record<string, number>;
  /** What HAProxy says of each server (its stats socket): UP, DOWN, MAINT… */
  serverStates(): Promise<Record<string, string>>;
  /** `npm run ledger:check` on the database: its exit code and output. */
  ledgerCheck(): Promise<{ code: number | null; output: string }>;
  close(): Promise<void>;
}

/** A free loopback port (closed again before it is used: a small race the machine's tests accept). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts a program of this package with tsx's loader (no npm in between: its signals reach the program itself). */
function startNode(script: string, env: Record<string, string>, logFile: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: SERVER_DIR,
    env: { ...process.env, ...env, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return child;
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** The first line a process prints, parsed as JSON (the S3 server's address). */
function firstLine(child: ChildProcess): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\n');
      if (end >= 0) resolve(JSON.parse(text.slice(0, end)) as Record<string, string>);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before saying where it listens`)));
  });
}

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, alive?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (alive && alive.exitCode !== null) throw new Error(`${what}: the process exited (${alive.exitCode})`);
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

const answers200 = (url: string) => () => fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok);

function haproxyConfig(opts: { port: number; statsSocket: string; replicas: { name: string; port: number }[] }): string {
  return `global
  maxconn 2000
  stats socket ${opts.statsSocket} mode 600 level admin

defaults
  mode http
  log global
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  # WebSockets (web terminal, 云桌面) and SSE streams stay open long after their request.
  timeout tunnel 1h
  timeout http-keep-alive 10s
  timeout check 1s
  # A request whose replica died before it could be sent goes to another one (connection failures)…
  retries 3
  option redispatch 1
  # …and a GET whose replica died before answering is sent again to another one: what a browser would do
  # itself. Never a POST (below): a payment sent twice is the application's idempotency's job, not the proxy's.
  retry-on conn-failure empty-response response-timeout

frontend console
  bind 127.0.0.1:${opts.port}
  default_backend replicas

backend replicas
  balance roundrobin
  http-request disable-l7-retry unless METH_GET || METH_HEAD
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter ${CHECK_INTERVAL_MS}ms fastinter ${CHECK_INTERVAL_MS}ms downinter ${CHECK_INTERVAL_MS}ms fall 2 rise 2
  # Which replica answered: the tests tell replicas apart by it (a user does not see it).
  http-response set-header x-replica %s
${opts.replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.port} check`).join('\n')}
`;
}

/** Keeps the gateway's notifications and forwards every request to HAProxy as it came. */
function startRelay(target: string, notifications: Notification[]): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<
        string,
        string
      >;
      if (req.url!.startsWith('/billing/api/v1/payment/notify/')) notifications.push({ path: req.url!, headers, body: body.toString() });
      fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => {
          res.writeHead(502);
          res.end();
        });
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) });
    }),
  );
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child);
  child.kill('SIGTERM');
  const late = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(late);
}

/**
 * `env`: more of each replica's environment; `agentEnv`: more of the compute agent's
 * (COMPUTE_AGENT_DRIVER=local: real bubblewrap sandboxes with shells and desktops).
 */
export async function startCluster(opts: { env?: Record<string, string>; agentEnv?: Record<string, string> } = {}): Promise<Cluster> {
  const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const work = mkdtempSync(path.join(tmpdir(), 'console-deployed-'));
  // The local driver's machines run as their own uids and must pass through to their folders under the agent's.
  chmodSync(work, 0o711);
  const children: ChildProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  // A test run that dies without its afterAll leaves none of these processes behind.
  const killAll = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  process.once('exit', killAll);
  const close = async () => {
    // HAProxy (started last) first, then the rest together: each replica's stop waits out its drain.
    const [last, ...others] = [...children].reverse();
    await stopProcess(last);
    await Promise.all(others.map(stopProcess));
    process.off('exit', killAll);
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  };
  try {
    if (!HAPROXY) throw new Error('找不到 haproxy：先安装 Debian 的 haproxy（apt-get install haproxy）');
    const database = await createScratchDatabase(adminUrl, 'console_deployed');
    cleanups.push(database.drop);
    const agentDatabase = await createScratchDatabase(adminUrl, 'console_deployed_agent');
    cleanups.push(agentDatabase.drop);

    const s3Dir = path.join(work, 's3');
    const s3Process = startNode('test/deployed/s3-process.ts', { S3_DIR: s3Dir }, path.join(work, 's3.log'));
    children.push(s3Process);
    const agentPort = await freePort();
    mkdirSync(path.join(work, 'agent'), { mode: 0o711 });
    chmodSync(path.join(work, 'agent'), 0o711); // past the umask
    const agentKey = { id: 'deployed-test', secret: randomBytes(24).toString('hex') };
    const agent = startNode(
      'src/cli/compute-agent.ts',
      {
        COMPUTE_AGENT_PORT: String(agentPort),
        COMPUTE_AGENT_KEY_ID: agentKey.id,
        COMPUTE_AGENT_SECRET: agentKey.secret,
        COMPUTE_AGENT_DATABASE_URL: agentDatabase.url,
        // The simulated fleet behind the agent protocol (an agent on a real host would run the local driver).
        COMPUTE_AGENT_DRIVER: 'simulated',
        COMPUTE_AGENT_DATA_DIR: path.join(work, 'agent'),
        COMPUTE_SIM_DELAYS: 'create=300,boot=300,start=300,stop=300,restart=300,destroy=300',
        LOG_LEVEL: 'warn',
        ...opts.agentEnv,
      },
      path.join(work, 'agent.log'),
    );
    children.push(agent);
    const s3 = (await firstLine(s3Process)) as { endpoint: string; bucket: string };

    const notifications: Notification[] = [];
    const haproxyPort = await freePort();
    const url = `http://127.0.0.1:${haproxyPort}`;
    const relay = await startRelay(url, notifications);
    cleanups.push(relay.close);

    const replicaEnv = (port: number, name: string): Record<string, string> => ({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: path.join(work, name),
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '10',
      REDIS_URL: redisUrl,
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: s3.bucket,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
      COMPUTE_DRIVER: 'agent',
      COMPUTE_AGENT_URL: `http://127.0.0.1:${agentPort}`,
      COMPUTE_AGENT_KEY_ID: agentKey.id,
      COMPUTE_AGENT_SECRET: agentKey.secret,
      PUBLIC_BASE_URL: relay.url,
      PAYMENT_DRIVER: 'sandbox',
      DEV_TOOLS: 'true',
      SEED_DEMO: 'false',
      SSH_GATEWAY_PORT: '0',
      MACHINE_PORT: '0',
      SHUTDOWN_DRAIN_MS: String(SHUTDOWN_DRAIN_MS),
      SHUTDOWN_TIMEOUT_MS: '10000',
      CODE_IP_LIMIT_PER_HOUR: '100000',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      LOG_FORMAT: 'json',
      ...opts.env,
    });
    const ports = await Promise.all(REPLICA_NAMES.map(() => freePort()));
    const replicas = new Map<ReplicaName, Replica>();
    const coldStartSeconds: Record<string, number> = {};
    // All three at once, as a Deployment starts them: migrations run once under their advisory lock.
    await Promise.all(
      REPLICA_NAMES.map(async (name, i) => {
        const log = path.join(work, `${name}.log`);
        mkdirSync(path.join(work, name)); // the replica's volume: its SSH host key, caches
        const started = Date.now();
        const child = startNode('src/main.ts', replicaEnv(ports[i]!, name), log);
        children.push(child);
        replicas.set(name, { name, port: ports[i]!, process: child, exited: exitOf(child), log, dataDir: path.join(work, name) });
        await waitFor(`replica ${name} ready (log: ${log})`, answers200(`http://127.0.0.1:${ports[i]}/readyz`), 120_000, child);
        coldStartSeconds[name] = (Date.now() - started) / 1000;
      }),
    );
    await waitFor('the compute agent', async () => (await fetch(`http://127.0.0.1:${agentPort}/`).catch(() => null)) !== null, 30_000, agent);

    const statsSocket = path.join(work, 'haproxy.sock');
    const configFile = path.join(work, 'haproxy.cfg');
    writeFileSync(configFile, haproxyConfig({ port: haproxyPort, statsSocket, replicas: REPLICA_NAMES.map((name, i) => ({ name, port: ports[i]! })) }));
    const haproxy = spawn(HAPROXY, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout.pipe(createWriteStream(path.join(work, 'haproxy.log')));
    haproxy.stderr.pipe(createWriteStream(path.join(work, 'haproxy.err')));
    children.push(haproxy);

    const serverStates = () => haproxyStates(statsSocket);
    await waitFor(
      'HAProxy with every replica UP',
      async () => {
        const states = await serverStates();
        return REPLICA_NAMES.every((n) => states[n] === 'UP');
      },
      20_000,
      haproxy,
    );

    return {
      url,
      replicas,
      notifications,
      databaseUrl: database.url,
      s3,
      s3Dir,
      coldStartSeconds,
      serverStates,
      ledgerCheck: () => ledgerCheck(database.url),
      close,
    };
  } catch (e) {
    const logs = ['r1.log', 'r2.log', 'r3.log', 'agent.log', 's3.log', 'haproxy.err']
      .map((f) => {
        try {
          return `--- ${f}\n${readFileSync(path.join(work, f), 'utf8').slice(-3000)}`;
        } catch {
          return '';
        }
      })
      .join('\n');
    await close();
    throw new Error(`${(e as Error).message}\n${logs}`);
  }
}

/** `show stat` on HAProxy's socket: each server of the backend and its status. */
function haproxyStates(socket: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    let text = '';
    conn.on('data', (c: Buffer) => (text += c.toString()));
    conn.on('error', reject);
    conn.on('end', () => {
      const [header, ...rows] = text.replace(/^# /, '').trim().split('\n');
      const cols = header!.split(',');
      const states: Record<string, string> = {};
      for (const row of rows) {
        const cells = row.split(',');
        const at = (c: string) => cells[cols.indexOf(c)]!;
        if (at('pxname') === 'replicas' && !['FRONTEND', 'BACKEND'].includes(at('svname'))) states[at('svname')] = at('status');
      }
      resolve(states);
    });
    conn.end('show stat\n');
  });
}

function ledgerCheck(databaseUrl: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/ledger-check.ts'], {
      cwd: SERVER_DIR,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', COMPUTE_DRIVER: 'simulated' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}
