/**
 * Two (or more) hosts on this machine, each a real compute agent process (`npm run compute-agent`,
 * the local driver: its own data folder, PGlite and port), and a console on COMPUTE_DRIVER=fleet
 * with them registered (issue 31 §2). The console runs on PostgreSQL when TEST_DATABASE_URL is set.
 *
 *   const fleet = await startFleet({ hosts: [FLEET_HOST_1, FLEET_HOST_2] });
 *   const id = await fleet.runningOn(token, FLEET_HOST_2);   // bought on host 2, running on agent 2
 *   await fleet.agent(FLEET_HOST_2).stop();                  // the host stops answering
 *   await fleet.close();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Order } from '@console/contract';
import type { FleetComputeDriver } from '../src/drivers/compute/fleet.js';
import { readHostReport } from '../src/drivers/compute/host-report.js';
import { fileStoreRoot } from '../src/context.js';
import { get, json, post, startTestServer, type TestServer } from './harness.js';
import { instanceKit, GPU_ORDER, LIST } from './instances-kit.js';
import { sandboxCatalogue } from './local-kit.js';
import { parseOsRelease } from '../src/drivers/compute/local/host-offer.js';

/** Two RTX 4090 hosts of the shipped catalogue with free cards (bj-b-1-h02 is full there). */
export const FLEET_HOST_1 = 'bj-b-1-h01';
export const FLEET_HOST_2 = 'bj-b-1-h03';
/** A GPU image of the host's own system (no OCI image to build): what the fleet tests' GPU machines run, card-less where the host has none. */
export const HOST_SYSTEM_GPU_IMAGE = 'host-system-gpu';

const AGENT_START_MS = 240_000;
const SERVER_DIR = fileURLToPath(new URL('..', import.meta.url));

export interface AgentProcess {
  hostId: string;
  baseUrl: string;
  keyId: string;
  secret: string;
  dataDir: string;
  /** Starts the agent (again: the same folder and port, its machines recovered). */
  start(): Promise<void>;
  /** SIGTERM, and waits for it to end (its sandboxes end with it). */
  stop(): Promise<void>;
  /** What it printed so far (for failures). */
  log(): string;
  /** Its process id while it runs. */
  pid(): number | null;
  running(): boolean;
}

let fleetCatalogueFile: string | null = null;

/** sandboxCatalogue() with a GPU image of the host's own system (HOST_SYSTEM_GPU_IMAGE), and both fleet hosts with free cards. */
export function fleetCatalogue(): string {
  if (fleetCatalogueFile) return fleetCatalogueFile;
  const catalogue = JSON.parse(readFileSync(sandboxCatalogue(), 'utf8')) as { images: object[]; hosts: { id: string; gpuBusy: number }[] };
  const host = parseOsRelease(readFileSync('/etc/os-release', 'utf8'));
  catalogue.images.push({ id: HOST_SYSTEM_GPU_IMAGE, kind: 'os', name: host.name, os: `${host.id} ${host.versionId}`, forGpu: true, forCategories: ['Gpu'] });
  for (const h of catalogue.hosts) if (h.id === FLEET_HOST_1 || h.id === FLEET_HOST_2) h.gpuBusy = 0;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fleet-catalogue-')), 'catalogue.json');
  writeFileSync(file, JSON.stringify(catalogue));
  fleetCatalogueFile = file;
  return file;
}

/** A free loopback port (taken and given back: the agent keeps it across its restarts). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * One agent process of `hostId` (not started yet). `driver`: local (real sandboxes) or simulated;
 * `env`: more of its environment (FILESTORE_ROOT, COMPUTE_AGENT_SSH_PORT…).
 */
export async function agentProcess(opts: { hostId: string; driver?: 'local' | 'simulated'; env?: Record<string, string> }): Promise<AgentProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), `fleet-agent-${opts.hostId}-`));
  chmodSync(dataDir, 0o711);
  const keyId = `k-${opts.hostId}`;
  const secret = randomBytes(32).toString('base64url');
  const baseUrl = `http://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let output = '';
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    COMPUTE_AGENT_KEY_ID: keyId,
    COMPUTE_AGENT_SECRET: secret,
    COMPUTE_AGENT_PORT: String(port),
    COMPUTE_AGENT_HOST_ID: opts.hostId,
    COMPUTE_AGENT_DATA_DIR: dataDir,
    COMPUTE_AGENT_DRIVER: opts.driver ?? 'local',
    // This machine has no cards: the agents report the catalogue's RTX 4090s as 模拟 ones, which the market then sells.
    COMPUTE_AGENT_SIMULATED_GPUS: 'NVIDIA GeForce RTX 4090=8:24564',
    LOG_LEVEL: 'warn',
    ...opts.env,
  };
  const agent: AgentProcess = {
    hostId: opts.hostId,
    baseUrl,
    keyId,
    secret,
    dataDir,
    log: () => output,
    pid: () => (agent.running() ? child!.pid! : null),
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
    async start() {
      if (agent.running()) return;
      const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/compute-agent.ts'], { cwd: SERVER_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      c.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      c.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      // Generous: tsx compiles the agent at each start, slow on a loaded machine.
      const deadline = Date.now() + AGENT_START_MS;
      while (Date.now() < deadline) {
        if (!agent.running()) throw new Error(`compute agent ${opts.hostId} ended at start:\n${output}`);
        try {
          await readHostReport({ baseUrl, keyId, secret, timeoutMs: 1000 });
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      throw new Error(`compute agent ${opts.hostId} did not answer within ${AGENT_START_MS / 1000} s:\n${output}`);
    },
    async stop() {
      const c = child;
      if (!c || !agent.running()) return;
      const ended = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
      await ended;
      clearTimeout(timer);
    },
  };
  return agent;
}

export interface Fleet {
  server: TestServer;
  driver: () => FleetComputeDriver;
  agents: AgentProcess[];
  agent(hostId: string): AgentProcess;
  kit: ReturnType<typeof instanceKit>;
  /** Polls the hosts and applies their events until the instance has `status` (up to `tries` rounds of ~100 ms). */
  reach(token: string, id: string, status: string, tries?: number): Promise<void>;
  /** Buys a post-paid one-card RTX 4090 of HOST_SYSTEM_GPU_IMAGE placed on `hostId` and waits until it runs; its id. */
  runningOn(token: string, hostId: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The console (COMPUTE_DRIVER=fleet, the fleet catalogue, its clock moved to now: the agents stamp
 * their events with the real time) and one started agent per host, registered.
 */
export async function startFleet(opts: {
  hosts: string[];
  driver?: 'local' | 'simulated';
  env?: Record<string, string>;
  agentEnv?: Record<string, string>;
}): Promise<Fleet> {
  const server = await startTestServer({
    env: { COMPUTE_DRIVER: 'fleet', CATALOGUE_FILE: fleetCatalogue(), FLEET_HOST_GRACE_SECONDS: '5', ...opts.env },
  });
  server.clock.advance(Date.now() - server.clock.now().getTime());
  const fileStore = fileStoreRoot(server.ctx.config);
  mkdirSync(fileStore, { recursive: true });
  const agents: AgentProcess[] = [];
  try {
    for (const hostId of opts.hosts) agents.push(await agentProcess({ hostId, driver: opts.driver, env: { FILESTORE_ROOT: fileStore, ...opts.agentEnv } }));
    await Promise.all(agents.map((a) => a.start()));
  } catch (e) {
    await Promise.all(agents.map((a) => a.stop()));
    for (const a of agents) rmSync(a.dataDir, { recursive: true, force: true });
    await server.close();
    throw e;
  }
  const driver = () => server.ctx.drivers.compute as FleetComputeDriver;
  for (const a of agents) await driver().addHost({ hostId: a.hostId, baseUrl: a.baseUrl, keyId: a.keyId, secret: a.secret });
  await driver().poll();
  const kit = instanceKit(() => server);
  const fleet: Fleet = {
    server,
    driver,
    agents,
    kit,
    agent: (hostId) => agents.find((a) => a.hostId === hostId)!,
    async reach(token, id, status, tries = 600) {
      for (let i = 0; i < tries; i++) {
        await server.ctx.reconciler.tick();
        if ((await kit.instance(token, id)).status === status) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      const now = await kit.instance(token, id);
      throw new Error(`instance ${id} never reached ${status}: ${now.status} (${now.lastError ?? ''})\n${agents.map((a) => a.log()).join('\n')}`);
    },
    async runningOn(token, hostId) {
      const res = await post(
        server.app,
        GPU_ORDER,
        { gpuTypeId: 'rtx4090', gpuCount: 1, hostId, imageId: HOST_SYSTEM_GPU_IMAGE, cycle: 'Usage', duration: 1 },
        token,
      );
      expect(res.statusCode, res.body).toBe(200);
      const [order] = json<{ items: Order[] }>(await get(server.app, '/order/api/v2.1/orders?pageSize=1', token)).items;
      const id = order!.resourceId!;
      await fleet.reach(token, id, 'Running');
      return id;
    },
    async close() {
      // The agents first: their machines hold the console's 文件存储 trees mounted.
      await Promise.all(agents.map((a) => a.stop()));
      await server.close();
      for (const a of agents) rmSync(a.dataDir, { recursive: true, force: true });
    },
  };
  return fleet;
}

/** The processes started under `pid` (its children, theirs…), not `pid` itself: on an agent, its machines' sandboxes. */
export function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields after its last ')'.
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parents) {
      if (parent !== p) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

/** The instance as the list shows it (status and the reason beside it). */
export async function listed(s: TestServer, token: string, id: string) {
  const res = await get(s.app, `${LIST}/${id}`, token);
  expect(res.statusCode, res.body).toBe(200);
  return json<{ status: string; lastError?: string | null }>(res);
}
