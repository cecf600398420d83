import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { yuanToUnits, type Instance } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { createScratchDatabase } from '../../../test/scratch-db.js';
import { ManualClock } from '../../clock.js';
import { loadConfig, ConfigError } from '../../config.js';
import { openDatabase, type Database } from '../../db/client.js';
import { AgentComputeDriver, ComputeAgentError, agentAuthorization } from './agent.js';
import { computeAgentServer } from './agent-server.js';
import { SimulatedComputeDriver } from './simulated.js';
import type { MachineSpec } from './types.js';
import { testTemplate } from '../../../test/pglite-template.js';

const KEY_ID = 'console-1';
const SECRET = 'a-shared-secret-of-at-least-32-characters';
const DELAYS = {
  create: 4000,
  boot: 3000,
  start: 3000,
  stop: 2000,
  restart: 4000,
  destroy: 2000,
  resizeDisk: 3000,
  migrate: 8000,
  saveImage: 6000,
  changeBandwidth: 2000,
};

/** The controller's own database: in-memory PGlite, or a scratch PostgreSQL database under TEST_DATABASE_URL. */
async function openControllerDb(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) return { database: await openDatabase({ template: await testTemplate() }), drop: async () => {} };
  const scratch = await createScratchDatabase(adminUrl, 'console_agent');
  return { database: await openDatabase({ url: scratch.url, poolSize: 3 }), drop: scratch.drop };
}

interface Controller {
  sim: SimulatedComputeDriver;
  clock: ManualClock;
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** A simulated controller on an ephemeral port; `signingNow` is the agent's clock for signatures. */
async function startController(signingNow?: () => Date): Promise<Controller> {
  const { database, drop } = await openControllerDb();
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const sim = new SimulatedComputeDriver(database.db, clock, DELAYS);
  const app = Fastify({ logger: false });
  await app.register(computeAgentServer, { driver: sim, keys: { [KEY_ID]: SECRET }, now: signingNow ?? (() => clock.now()) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return {
    sim,
    clock,
    url: `http://127.0.0.1:${port}`,
    app,
    async close() {
      await app.close();
      await database.close();
      await drop();
    },
  };
}

function spec(over: Partial<MachineSpec> = {}): MachineSpec {
  return {
    hostId: 'bj-b-1-h03',
    regionId: 'bj-b',
    gpuCount: 1,
    cpu: 16,
    memoryGb: 64,
    imageId: 'ubuntu-22.04-cuda-12',
    userImageRef: null,
    dataDiskGb: 50,
    bandwidthMbps: 0,
    sshUser: 'root',
    sshPassword: 'Pa55wordPa55word',
    jupyterToken: 'tok',
    appPort: null,
    ...over,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('AgentComputeDriver against the agent server on the simulated fleet', () => {
  let c: Controller;
  let driver: AgentComputeDriver;
  const agentFor = (over: Partial<ConstructorParameters<typeof AgentComputeDriver>[0]> = {}) =>
    new AgentComputeDriver({ baseUrl: c.url, keyId: KEY_ID, secret: SECRET, now: () => c.clock.now(), retryDelayMs: 5, ...over });

  /** Time passes on the controller and someone reads: the fleet finishes what is due (a create's boot starts then). */
  async function pass(ms: number) {
    c.clock.advance(ms);
    await driver.events(0, 1);
  }

  beforeAll(async () => {
    c = await startController();
    driver = agentFor();
  });
  afterAll(async () => c.close());

  it('creates a machine: create (with access) then boot arrive as events, status follows', async () => {
    const id = randomUUID();
    const op = `op-${randomUUID()}`;
    const from = (await driver.events(0, 1000)).at(-1)?.seq ?? 0;
    await driver.create(op, id, spec());
    expect(await driver.status(id)).toEqual({ power: 'creating', gpu: false, lost: false, hostId: null, pendingOpId: op });
    expect(await driver.events(from, 100)).toEqual([]);

    c.clock.advance(DELAYS.create);
    const [created, ...rest] = await driver.events(from, 100);
    expect(rest).toEqual([]);
    expect(created).toMatchObject({ opId: op, instanceId: id, kind: 'create', ok: true, error: null, access: { sshHost: 'connect.bj-b.gpu.local' } });
    expect(created!.access!.sshPort).toBeGreaterThanOrEqual(20000);
    expect(created!.at).toBeInstanceOf(Date);
    expect(created!.at.toISOString()).toBe(c.clock.now().toISOString());
    expect(await driver.status(id)).toMatchObject({ power: 'creating', hostId: 'bj-b-1-h03', pendingOpId: `${op}:boot` });

    c.clock.advance(DELAYS.boot);
    const boot = await driver.events(created!.seq, 100);
    expect(boot).toEqual([{ seq: created!.seq + 1, opId: `${op}:boot`, instanceId: id, kind: 'boot', ok: true, error: null, at: c.clock.now() }]);
    expect(await driver.status(id)).toEqual({ power: 'running', gpu: true, lost: false, hostId: 'bj-b-1-h03', pendingOpId: null });
  });

  it('stops, starts without GPU, reports disk usage, destroys; a failed operation is a failed event', async () => {
    const id = randomUUID();
    await driver.create(`c-${id}`, id, spec({ dataDiskGb: 100 }));
    await pass(DELAYS.create);
    await pass(DELAYS.boot);
    const from = (await driver.events(0, 1000)).at(-1)!.seq;

    await driver.stop(`s-${id}`, id);
    c.clock.advance(DELAYS.stop);
    expect(await driver.status(id)).toMatchObject({ power: 'stopped', pendingOpId: null });
    await driver.start(`g-${id}`, id, { gpu: false });
    c.clock.advance(DELAYS.start);
    expect(await driver.status(id)).toMatchObject({ power: 'running', gpu: false });
    await driver.stop(`t-${id}`, id);
    await driver.restart(`r-${id}`, id); // due after the stop: refused by the fleet, the machine is stopped by then
    c.clock.advance(DELAYS.restart);

    const usage = await driver.diskUsage([id, randomUUID(), id]);
    expect([...usage.keys()]).toEqual([id]);
    expect(usage.get(id)).toBeGreaterThan(0);
    expect(usage.get(id)).toBeLessThanOrEqual(100);
    expect(usage).toEqual(await c.sim.diskUsage([id]));

    await driver.destroy(`d-${id}`, id);
    c.clock.advance(DELAYS.destroy);
    expect(await driver.status(id)).toMatchObject({ power: 'destroyed' });
    expect((await driver.diskUsage([id])).size).toBe(0);

    const events = (await driver.events(from, 100)).filter((e) => e.instanceId === id);
    expect(events.map((e) => [e.kind, e.ok])).toEqual([
      ['stop', true],
      ['start', true],
      ['stop', true],
      ['restart', false],
      ['destroy', true],
    ]);
    expect(events[3]!.error).toMatch(/stopped/);
  });

  it('changes the bandwidth of a running machine live; the machine was created with its own', async () => {
    const id = randomUUID();
    await driver.create(`c-${id}`, id, spec({ gpuCount: 0, bandwidthMbps: 5 }));
    await pass(DELAYS.create);
    await pass(DELAYS.boot);
    const from = (await driver.events(0, 1000)).at(-1)!.seq;
    const mbps = async () => (await c.sim.machine(id))?.bandwidthMbps;
    expect(await mbps()).toBe(5);
    await driver.changeBandwidth(`b-${id}`, id, 20);
    c.clock.advance(DELAYS.changeBandwidth);
    expect(await driver.status(id)).toMatchObject({ power: 'running', pendingOpId: null });
    expect(await mbps()).toBe(20);
    const events = (await driver.events(from, 100)).filter((e) => e.instanceId === id);
    expect(events.map((e) => [e.kind, e.ok])).toEqual([['changeBandwidth', true]]);
    await expect(driver.changeBandwidth(`b0-${id}`, id, 0)).rejects.toMatchObject({ kind: 'Rejected', status: 400 });
  });

  it('resubmitting an opId is a no-op; the same opId with other content is a conflict', async () => {
    const id = randomUUID();
    const op = `op-${randomUUID()}`;
    await driver.create(op, id, spec());
    await driver.create(op, id, spec()); // a resend, e.g. by the reconciler
    // Same content in another key order: still the same operation.
    const reordered = Object.fromEntries(Object.entries(spec()).reverse());
    const raw = JSON.stringify({ params: reordered, instanceId: id, kind: 'create', opId: op });
    const res = await signedFetch(c.url, 'POST', '/v1/operations', raw, c.clock.now());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ opId: op });
    expect(await c.sim.pendingOf([id])).toHaveLength(1);

    await expect(driver.create(op, id, spec({ gpuCount: 2 }))).rejects.toMatchObject({ name: 'ComputeAgentError', kind: 'Conflict', status: 409 });
    await expect(driver.stop(op, id)).rejects.toMatchObject({ kind: 'Conflict' });
    await pass(DELAYS.create);
    await pass(DELAYS.boot);
    const mine = (await driver.events(0, 1000)).filter((e) => e.instanceId === id);
    expect(mine.map((e) => e.kind)).toEqual(['create', 'boot']);
  });

  it('answers 404 as null status and refuses bad requests with 400', async () => {
    expect(await driver.status(randomUUID())).toBeNull();
    const bad = await signedFetch(c.url, 'POST', '/v1/operations', JSON.stringify({ opId: 'x', kind: 'explode', instanceId: 'y', params: {} }), c.clock.now());
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'bad_request' });
    const notJson = await signedFetch(c.url, 'POST', '/v1/disk-usage', '{nope', c.clock.now());
    expect(notJson.status).toBe(400);
    await expect(driver.resizeDisk('rz', randomUUID(), 0)).rejects.toMatchObject({ kind: 'Rejected', status: 400 });
  });

  it('samples the running machines through the agent (the 概览 charts of an agent host), as the fleet below measures them', async () => {
    const id = randomUUID();
    await driver.create(`c-${id}`, id, spec({ dataDiskGb: 50 }));
    await pass(DELAYS.create);
    await pass(DELAYS.boot);
    c.sim.setLoad(id, { cpuPercent: 37, gpuPercent: 88 });
    const mine = (await driver.sample([id, randomUUID()])).get(id)!;
    expect(mine).toEqual((await c.sim.sample([id])).get(id));
    expect(mine).toMatchObject({ cpuPercent: 37, simulated: true });
    expect(mine.gpus[0]!.utilisation).toBe(88);
    expect((await driver.sample()).has(id)).toBe(true);
    expect((await driver.sample([randomUUID()])).size).toBe(0);

    await driver.stop(`s-${id}`, id);
    await pass(DELAYS.stop);
    expect(await driver.status(id)).toMatchObject({ power: 'stopped' });
    expect((await driver.sample([id])).size).toBe(0);
    const bad = await signedFetch(c.url, 'POST', '/v1/samples', JSON.stringify({ instanceIds: ['nope'] }), c.clock.now());
    expect(bad.status).toBe(400);
  });

  it('draws no figures from an agent whose fleet does not sample (404), and refuses a malformed sample', async () => {
    // The same fleet behind an agent that has no sampling (as a driver without sample()).
    const blind = Object.create(c.sim) as typeof c.sim;
    Object.defineProperty(blind, 'sample', { value: undefined });
    const app = Fastify({ logger: false });
    await app.register(computeAgentServer, { driver: blind, keys: { [KEY_ID]: SECRET }, now: () => c.clock.now() });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as { port: number };
      expect((await agentFor({ baseUrl: `http://127.0.0.1:${port}` }).sample()).size).toBe(0);
    } finally {
      await app.close();
    }
    const liar = agentFor({
      fetch: async () => new Response(JSON.stringify({ samples: { [randomUUID()]: { cpuPercent: 'lots' } } }), { status: 200 }),
    });
    await expect(liar.sample()).rejects.toMatchObject({ kind: 'BadResponse' });
  });

  it('pages through events after a cursor, in order, with nothing skipped or repeated', async () => {
    for (let i = 0; i < 3; i++) {
      const id = randomUUID();
      await driver.create(`p-${id}`, id, spec());
    }
    c.clock.advance(DELAYS.create + DELAYS.boot);
    // The fleet finishes a create on one read and its boot on the next: settle before taking the reference.
    await driver.events(0, 1);
    const all = await driver.events(0, 1000);
    expect(all.length).toBeGreaterThanOrEqual(6);
    const paged = [];
    for (let cursor = 0; ;) {
      const page = await driver.events(cursor, 4);
      expect(page.length).toBeLessThanOrEqual(4);
      if (!page.length) break;
      paged.push(...page);
      cursor = page.at(-1)!.seq;
    }
    expect(paged).toEqual(all);
    expect(await driver.events(all.at(-1)!.seq, 10)).toEqual([]);
  });

  describe('signatures', () => {
    async function unchanged(id: string) {
      expect(await c.sim.status(id)).toBeNull();
      expect(await c.sim.pendingOf([id])).toEqual([]);
    }

    it('refuses a wrong secret or an unknown key with 401 and does nothing', async () => {
      const id = randomUUID();
      await expect(agentFor({ secret: 'another-secret-of-at-least-32-characters' }).create('w1', id, spec())).rejects.toMatchObject({
        kind: 'Unauthorized',
        status: 401,
        message: expect.stringMatching(/signature does not match.*COMPUTE_AGENT_SECRET/),
      });
      await expect(agentFor({ keyId: 'someone-else' }).status(id)).rejects.toMatchObject({
        kind: 'Unauthorized',
        message: expect.stringMatching(/unknown keyId/),
      });
      const unsigned = await fetch(`${c.url}/v1/events?after=0&limit=1`);
      expect(unsigned.status).toBe(401);
      expect(await unsigned.json()).toMatchObject({ error: 'unauthorized' });
      await unchanged(id);
    });

    it('refuses a request signed more than 5 minutes ago (a replay) and one from the future', async () => {
      const id = randomUUID();
      const captured: { url: string; init: RequestInit }[] = [];
      const recording = agentFor({
        fetch: async (url, init) => (captured.push({ url: String(url), init: init! }), new Response('{"opId":"x"}', { status: 202 })),
      });
      await recording.create('replayed', id, spec());
      c.clock.advance(5 * 60 * 1000 + 1000);
      const replay = await fetch(captured[0]!.url, { ...captured[0]!.init, signal: undefined });
      expect(replay.status).toBe(401);
      expect(await replay.json()).toMatchObject({ message: expect.stringMatching(/5 minutes/) });

      await expect(agentFor({ now: () => new Date(c.clock.now().getTime() - 6 * 60 * 1000) }).create('old', id, spec())).rejects.toMatchObject({
        kind: 'Unauthorized',
      });
      await expect(agentFor({ now: () => new Date(c.clock.now().getTime() + 6 * 60 * 1000) }).create('future', id, spec())).rejects.toMatchObject({
        kind: 'Unauthorized',
      });
      // Within the window the same signature is accepted.
      await expect(agentFor({ now: () => new Date(c.clock.now().getTime() - 4 * 60 * 1000) }).status(id)).resolves.toBeNull();
      await unchanged(id);
    });

    it('refuses a body or a query changed after signing', async () => {
      const id = randomUUID();
      const tamper =
        (edit: (s: string) => string): typeof fetch =>
        async (url, init) =>
          fetch(edit(String(url)), { ...init, body: init?.body ? edit(String(init.body)) : init?.body });
      await expect(agentFor({ fetch: tamper((b) => b.replace('"gpuCount":1', '"gpuCount":8')) }).create('tampered', id, spec())).rejects.toMatchObject({
        kind: 'Unauthorized',
        status: 401,
      });
      await expect(agentFor({ fetch: tamper((u) => u.replace('after=0', 'after=1')) }).events(0, 10)).rejects.toMatchObject({ kind: 'Unauthorized' });
      const res = await fetch(`${c.url}/v1/machines/${id}`, {
        headers: { authorization: agentAuthorization(KEY_ID, SECRET, 'GET', `/v1/machines/${randomUUID()}`, Math.floor(c.clock.now().getTime() / 1000), '') },
      });
      expect(res.status).toBe(401);
      await unchanged(id);
    });
  });

  it('says clearly when the controller is down, and retries connection failures only a few times', async () => {
    const port = await freePort();
    let attempts = 0;
    const down = new AgentComputeDriver({
      baseUrl: `http://127.0.0.1:${port}`,
      keyId: KEY_ID,
      secret: SECRET,
      retryDelayMs: 1,
      fetch: (u, i) => (attempts++, fetch(u, i)),
    });
    const err = await down.create('op', randomUUID(), spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComputeAgentError);
    expect(err).toMatchObject({
      kind: 'Unavailable',
      message: expect.stringMatching(new RegExp(`POST http://127\\.0\\.0\\.1:${port}/v1/operations: controller unreachable \\(ECONNREFUSED\\)`)),
    });
    expect(attempts).toBe(3);
  });

  it('retries 503 then succeeds; times out without retrying; refuses answers that break the protocol', async () => {
    let calls = 0;
    const flaky = agentFor({ fetch: async (u, i) => (++calls < 3 ? new Response('busy', { status: 503 }) : fetch(u, i)) });
    expect(await flaky.status(randomUUID())).toBeNull();
    expect(calls).toBe(3);

    calls = 0;
    const slow = agentFor({
      timeoutMs: 50,
      fetch: (_u, i) => (calls++, new Promise<Response>((_r, reject) => i!.signal!.addEventListener('abort', () => reject(i!.signal!.reason)))),
    });
    await expect(slow.stop('op', 'x')).rejects.toMatchObject({ kind: 'Unavailable', message: expect.stringMatching(/no answer within 50 ms/) });
    expect(calls).toBe(1);

    const liar = (body: string) => agentFor({ fetch: async () => new Response(body, { status: 200 }) });
    await expect(liar('<html>').events(0, 10)).rejects.toMatchObject({ kind: 'BadResponse' });
    await expect(liar('{"events":[{"seq":"1"}]}').events(0, 10)).rejects.toMatchObject({ kind: 'BadResponse' });
    const ev = (seq: number) => ({ seq, opId: null, instanceId: 'i', kind: 'lost', ok: false, error: 'x', at: '2026-11-23T08:00:00.000Z' });
    await expect(liar(JSON.stringify({ events: [ev(5), ev(5)] })).events(0, 10)).rejects.toThrow(/not increasing/);
    await expect(liar(JSON.stringify({ events: [ev(3)] })).events(3, 10)).rejects.toThrow(/not increasing/);
    await expect(liar('{"power":"flying"}').status('i')).rejects.toMatchObject({ kind: 'BadResponse' });
  });
});

describe('COMPUTE_DRIVER=agent configuration', () => {
  const base = { COMPUTE_DRIVER: 'agent', COMPUTE_AGENT_URL: 'https://agent.example.com/gpu', COMPUTE_AGENT_KEY_ID: 'k1', COMPUTE_AGENT_SECRET: SECRET };
  it('needs the three variables together and names a bad one', () => {
    expect(loadConfig(base)).toMatchObject({ COMPUTE_DRIVER: 'agent', COMPUTE_AGENT_URL: 'https://agent.example.com/gpu' });
    expect(() => loadConfig({ COMPUTE_DRIVER: 'agent', COMPUTE_AGENT_URL: base.COMPUTE_AGENT_URL })).toThrow(
      /COMPUTE_DRIVER=agent 时必须设置 COMPUTE_AGENT_KEY_ID、COMPUTE_AGENT_SECRET/,
    );
    expect(() => loadConfig({ ...base, COMPUTE_AGENT_URL: 'http://agent.example.com' })).toThrow(/COMPUTE_AGENT_URL: 必须是 https/);
    expect(() => loadConfig({ ...base, COMPUTE_AGENT_URL: 'not a url' })).toThrow(/COMPUTE_AGENT_URL/);
    expect(() => loadConfig({ ...base, COMPUTE_AGENT_SECRET: 'short' })).toThrow(/COMPUTE_AGENT_SECRET: 至少 32 个字符/);
    expect(() => loadConfig({ ...base, COMPUTE_AGENT_KEY_ID: 'has space' })).toThrow(ConfigError);
    expect(loadConfig({ ...base, COMPUTE_AGENT_URL: 'http://127.0.0.1:8090' }).COMPUTE_AGENT_URL).toBe('http://127.0.0.1:8090');
  });
});

describe('instances on the agent driver', () => {
  let c: Controller;
  let s: TestServer;
  beforeAll(async () => {
    // Signatures on real time (the console signs with it); the fleet's operations on the controller's manual clock.
    c = await startController(() => new Date());
    s = await startTestServer({ env: { COMPUTE_DRIVER: 'agent', COMPUTE_AGENT_URL: c.url, COMPUTE_AGENT_KEY_ID: KEY_ID, COMPUTE_AGENT_SECRET: SECRET } });
  });
  afterAll(async () => {
    await s?.close();
    await c?.close();
  });

  async function settle(ms: number) {
    s.clock.advance(ms);
    c.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  async function only(token: string): Promise<Instance> {
    const list = json<{ items: Instance[] }>(await get(s.app, '/upgpu/api/v2.1/instances?filterBy=category,Gpu', token));
    expect(list.items).toHaveLength(1);
    return list.items[0]!;
  }

  it('buys a post-paid GPU instance that the controller creates and boots: Pending → Starting → Running, then stops', async () => {
    expect(s.ctx.drivers.compute).toBeInstanceOf(AgentComputeDriver);
    expect((await get(s.app, '/dev/compute')).statusCode).not.toBe(200); // the simulated fleet's panel is not mounted
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits('100') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits('100') },
      ],
    });
    const res = await post(s.app, '/infra/api/v2.1/gpu/order', { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, u.token);
    expect(res.statusCode, res.body).toBe(200);
    let inst = await only(u.token);
    expect(inst.status).toBe('Pending');
    // The operation went over the wire: the controller's fleet has it.
    expect(await c.sim.pendingOf([inst.id])).toEqual([expect.objectContaining({ kind: 'create', instanceId: inst.id })]);

    await settle(DELAYS.create);
    inst = await only(u.token);
    expect(inst.status).toBe('Starting');
    expect(inst.access?.sshCommand).toMatch(/^ssh -p \d+ root@connect\.bj-b\.gpu\.local$/);
    await settle(DELAYS.boot);
    inst = await only(u.token);
    expect(inst).toMatchObject({ status: 'Running', actions: expect.arrayContaining(['stop']) });
    expect(await c.sim.status(inst.id)).toMatchObject({ power: 'running', gpu: true });

    expect((await post(s.app, `/upgpu/api/v2.1/instances/${inst.id}/stop`, undefined, u.token)).statusCode).toBe(200);
    expect((await only(u.token)).status).toBe('Stopping');
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Stopped');
    expect(await c.sim.status(inst.id)).toMatchObject({ power: 'stopped' });
  });
});

/** A request signed like the driver signs, with a body of the test's choosing. */
function signedFetch(base: string, method: string, target: string, body: string, now: Date) {
  return fetch(`${base}${target}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: agentAuthorization(KEY_ID, SECRET, method, target, Math.floor(now.getTime() / 1000), body) },
    body,
  });
}
