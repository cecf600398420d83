/**
 * The fleet driver against simulated agents (agent-server on the simulated fleet, each its own
 * database and port): routing to the instance's host, one ordered stream of every agent's events,
 * a silent host's machines lost past the grace and found when it answers, the registry.
 */
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Instance } from '@console/contract';
import { fundedUser, get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { DELAYS, GPU_ORDER, LIST } from '../../../test/instances-kit.js';
import { testTemplate } from '../../../test/pglite-template.js';
import { createScratchDatabase } from '../../../test/scratch-db.js';
import { ManualClock } from '../../clock.js';
import { openDatabase, type Database } from '../../db/client.js';
import { computeAgentServer } from './agent-server.js';
import { FleetComputeDriver } from './fleet.js';
import { fleetEvents, fleetHosts } from './fleet-schema.js';
import { buildHostReport } from './host-report.js';
import { SimulatedComputeDriver } from './simulated.js';

const HOST_1 = 'bj-b-1-h01';
const HOST_2 = 'bj-b-1-h03';

interface SimAgent {
  hostId: string;
  sim: SimulatedComputeDriver;
  clock: ManualClock;
  url: string;
  keyId: string;
  secret: string;
  /** Whether its report says the host can take machines. */
  healthy: boolean;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

async function openAgentDb(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) return { database: await openDatabase({ template: await testTemplate() }), drop: async () => {} };
  const scratch = await createScratchDatabase(adminUrl, 'fleet_agent');
  return { database: await openDatabase({ url: scratch.url, poolSize: 3 }), drop: scratch.drop };
}

/** A simulated host's agent on a port of its own, which can stop answering and come back on the same port. */
async function simAgent(hostId: string): Promise<SimAgent> {
  const { database, drop } = await openAgentDb();
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const sim = new SimulatedComputeDriver(database.db, clock, { ...DELAYS, migrate: 8000 });
  let app: FastifyInstance | null = null;
  let port = 0;
  const agent: SimAgent = {
    hostId,
    sim,
    clock,
    url: '',
    keyId: `k-${hostId}`,
    secret: `secret-of-${hostId}-at-least-32-characters`,
    healthy: true,
    async start() {
      app = Fastify({ logger: false });
      await app.register(computeAgentServer, {
        driver: sim,
        keys: { [agent.keyId]: agent.secret },
        hostReport: () =>
          buildHostReport({
            hostId,
            driver: sim,
            dir: null,
            sandboxes: () => (agent.healthy ? { ok: true, why: '模拟' } : { ok: false, why: 'bwrap 无法创建沙箱' }),
            gpus: () => ({ ok: true, why: '无 GPU' }),
          }),
      });
      await app.listen({ port, host: '127.0.0.1' });
      port = (app.server.address() as AddressInfo).port;
      agent.url = `http://127.0.0.1:${port}`;
    },
    async stop() {
      await app?.close();
      app = null;
    },
    async close() {
      await agent.stop();
      await database.close();
      await drop();
    },
  };
  await agent.start();
  return agent;
}

describe('fleet driver on simulated agents', () => {
  let s: TestServer;
  let a1: SimAgent;
  let a2: SimAgent;
  const fleet = () => s.ctx.drivers.compute as FleetComputeDriver;

  beforeAll(async () => {
    [a1, a2] = await Promise.all([simAgent(HOST_1), simAgent(HOST_2)]);
    s = await startTestServer({ env: { COMPUTE_DRIVER: 'fleet', FLEET_HOST_GRACE_SECONDS: '30' } });
    for (const a of [a1, a2]) await fleet().addHost({ hostId: a.hostId, baseUrl: a.url, keyId: a.keyId, secret: a.secret });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await a1?.close();
    await a2?.close();
  });

  async function settle(ms: number) {
    s.clock.advance(ms);
    a1.clock.advance(ms);
    a2.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  async function instance(token: string, id: string): Promise<Instance> {
    return json<Instance>(await get(s.app, `${LIST}/${id}`, token));
  }
  async function buyOn(token: string, hostId: string): Promise<string> {
    const res = await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId, imageId: 'pytorch-2.3-cu121', cycle: 'Usage', duration: 1 }, token);
    expect(res.statusCode, res.body).toBe(200);
    const orders = json<{ items: { resourceId: string }[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', token));
    const id = orders.items[0]!.resourceId;
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    return id;
  }

  it('keeps each host secret sealed, and lists the hosts with what their agents report', async () => {
    const [row] = await s.ctx.db.select().from(fleetHosts).where(eq(fleetHosts.hostId, HOST_1));
    expect(row!.secretSealed).not.toContain(a1.secret);
    await fleet().poll();
    const hosts = await fleet().hosts();
    expect(hosts.map((h) => [h.hostId, h.status, h.healthy])).toEqual([
      [HOST_1, 'up', true],
      [HOST_2, 'up', true],
    ]);
    expect(hosts[0]!.report).toMatchObject({ hostId: HOST_1, protocolVersion: 1, capacity: null });
    expect(JSON.stringify(hosts)).not.toContain(a1.secret);
  });

  it('runs a machine bought on host 2 on agent 2, and its operations go there', async () => {
    const { token } = await fundedUser(s, '500');
    const id = await buyOn(token, HOST_2);
    expect((await instance(token, id)).status).toBe('Running');
    expect(await a2.sim.status(id)).toMatchObject({ power: 'running', hostId: HOST_2 });
    expect(await a1.sim.status(id)).toBeNull();
    expect(await fleet().status(id)).toMatchObject({ power: 'running', lost: false });

    expect((await post(s.app, `${LIST}/${id}/stop`, undefined, token)).statusCode).toBe(200);
    await settle(DELAYS.stop);
    expect((await instance(token, id)).status).toBe('Stopped');
    expect(await a2.sim.status(id)).toMatchObject({ power: 'stopped' });
  });

  it('merges both agents’ events into one stream with a global seq, copied once however often it is read', async () => {
    const { token } = await fundedUser(s, '500');
    const on1 = await buyOn(token, HOST_1);
    const on2 = await buyOn(token, HOST_2);
    await fleet().poll();
    await fleet().poll();
    const events = await fleet().events(0, 1000);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const id of [on1, on2]) expect(events.filter((e) => e.instanceId === id).map((e) => e.kind)).toEqual(['create', 'boot']);
    // Another console process (a replica, or this one restarted) reads the same stream and copies nothing again.
    const other = new FleetComputeDriver({ db: s.ctx.db, clock: s.clock, secretKey: fleetKeyFor(s), graceMs: 30_000 });
    expect((await other.events(0, 1000)).map((e) => e.seq)).toEqual(seqs);
    expect(await s.ctx.db.$count(fleetEvents)).toBe(seqs.length);
    await other.shutdown();
  });

  it('marks a silent host’s machines 主机异常 after the grace, and brings them back as they are when it answers', async () => {
    const { token } = await fundedUser(s, '500');
    const id = await buyOn(token, HOST_2);
    const other = await buyOn(token, HOST_1);
    await a2.stop();
    await settle(20_000);
    expect((await instance(token, id)).status).toBe('Running'); // within the grace
    await settle(11_000);
    const lost = await instance(token, id);
    expect(lost.status).toBe('Unknown');
    expect(lost.lastError).toContain('主机异常');
    expect(await fleet().status(id)).toMatchObject({ lost: true });
    expect((await instance(token, other)).status).toBe('Running'); // host 1 is fine
    // Operations on a lost host wait; the machines of host 1 are still sampled, host 2's left out.
    expect(fleet().runningIds()).not.toContain(id);

    await a2.start();
    await settle(1000);
    expect((await instance(token, id)).status).toBe('Running');
    expect((await fleet().hosts()).find((h) => h.hostId === HOST_2)).toMatchObject({ status: 'up' });
  });

  it('sells nothing on a host whose agent reports it unhealthy: the market refuses the order, nothing is charged', async () => {
    a1.healthy = false;
    await fleet().poll();
    expect(await fleet().offerOf(HOST_1)).toBeNull();
    expect((await fleet().hosts()).find((h) => h.hostId === HOST_1)).toMatchObject({ healthy: false, lastError: expect.stringContaining('bwrap') });
    const { token, user } = await fundedUser(s, '500');
    const before = (await s.ctx.ledger.balances(user.id)).cash;
    const res = await post(
      s.app,
      GPU_ORDER,
      { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: HOST_1, imageId: 'pytorch-2.3-cu121', cycle: 'Usage', duration: 1 },
      token,
    );
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('维护中');
    expect((await s.ctx.ledger.balances(user.id)).cash).toBe(before);
    a1.healthy = true;
    await fleet().poll();
    expect((await fleet().hosts()).find((h) => h.hostId === HOST_1)).toMatchObject({ healthy: true, lastError: null });
  });

  it('refuses to forget a host while machines live on it', async () => {
    expect(await fleet().removeHost(HOST_2)).toMatchObject({ removed: false });
    await fleet().addHost({ hostId: 'spare', baseUrl: 'http://127.0.0.1:9', keyId: 'k', secret: 'x'.repeat(32) });
    expect(await fleet().removeHost('spare')).toEqual({ removed: true, machines: 0 });
  });
});

function fleetKeyFor(s: TestServer) {
  return (s.ctx.drivers.compute as unknown as { opts: { secretKey: () => Promise<Buffer> } }).opts.secretKey;
}
