/**
 * The market on a fleet (COMPUTE_DRIVER=fleet) against simulated agents: a catalogue host is listed
 * and sold only while its agent is registered and answering, and never for more cards than the
 * agent reports free.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fundedUser, get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { DELAYS, GPU_ORDER } from '../../../test/instances-kit.js';
import { testTemplate } from '../../../test/pglite-template.js';
import { ManualClock } from '../../clock.js';
import { openDatabase, type Database } from '../../db/client.js';
import { computeAgentServer } from '../../drivers/compute/agent-server.js';
import { FleetComputeDriver } from '../../drivers/compute/fleet.js';
import { buildHostReport } from '../../drivers/compute/host-report.js';
import { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { HostOffer } from '../../drivers/compute/types.js';

const SIM_DELAYS = { ...DELAYS, migrate: 8000 };
const GPU_LIST = '/upgpu/api/v2.1/gpu/list';
/** Three RTX 4090 hosts of the catalogue in one room: h01 and h03 run agents, h02 none. */
const HOST_1 = 'bj-b-1-h01';
const UNREGISTERED = 'bj-b-1-h02';
const HOST_3 = 'bj-b-1-h03';

/** A simulated host that reports its hardware: `cards` RTX 4090, as a real agent's local driver would. */
class ReportingHost extends SimulatedComputeDriver {
  cards = 1;
  offer(): Promise<HostOffer> {
    return Promise.resolve({
      cpus: 128,
      memoryGb: 1024,
      diskGb: 4000,
      gpus: [{ model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564, count: this.cards }],
      images: null,
      hostOs: { name: 'Ubuntu 22.04 (模拟)', id: 'ubuntu', versionId: '22.04' },
      held: { cpu: 0, memoryGb: 0, gpus: 0 },
    });
  }
}

interface Agent {
  hostId: string;
  clock: ManualClock;
  url: string;
  keyId: string;
  secret: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** An agent on a port of its own (a simulated host with a report of `cards`, or none: the catalogue describes it). */
async function agentOf(hostId: string, cards: number | null): Promise<Agent> {
  const database: Database = await openDatabase({ template: await testTemplate() });
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const sim =
    cards === null ? new SimulatedComputeDriver(database.db, clock, SIM_DELAYS) : Object.assign(new ReportingHost(database.db, clock, SIM_DELAYS), { cards });
  let app: FastifyInstance | null = null;
  let port = 0;
  const agent: Agent = {
    hostId,
    clock,
    url: '',
    keyId: `k-${hostId}`,
    secret: `secret-of-${hostId}-at-least-32-characters`,
    async start() {
      app = Fastify({ logger: false });
      await app.register(computeAgentServer, {
        driver: sim,
        keys: { [agent.keyId]: agent.secret },
        hostReport: () =>
          buildHostReport({ hostId, driver: sim, dir: null, sandboxes: () => ({ ok: true, why: '模拟' }), gpus: () => ({ ok: true, why: '模拟' }) }),
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
    },
  };
  await agent.start();
  return agent;
}

type Listed = { id: string; gpuFree: number; gpuTotal: number };

describe('the market on a fleet sells a host only for what its agent reports', () => {
  let s: TestServer;
  let a1: Agent;
  let a3: Agent;
  const fleet = () => s.ctx.drivers.compute as FleetComputeDriver;

  beforeAll(async () => {
    [a1, a3] = await Promise.all([agentOf(HOST_1, null), agentOf(HOST_3, 1)]);
    s = await startTestServer({ env: { COMPUTE_DRIVER: 'fleet', FLEET_HOST_GRACE_SECONDS: '30' } });
    for (const a of [a1, a3]) await fleet().addHost({ hostId: a.hostId, baseUrl: a.url, keyId: a.keyId, secret: a.secret });
    await fleet().poll();
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await a1?.close();
    await a3?.close();
  });

  async function listed(): Promise<Map<string, Listed>> {
    const page = json<{ items: Listed[] }>(await get(s.app, `${GPU_LIST}?filterBy=region,bj-b,gpuType,rtx4090&pageSize=50`));
    return new Map(page.items.map((h) => [h.id, h]));
  }
  function order(token: string, hostId: string, gpuCount: number) {
    return post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount, hostId, imageId: 'pytorch-2.3-cu121', cycle: 'Usage', duration: 1 }, token);
  }
  async function silence(ms: number) {
    s.clock.advance(ms);
    await fleet().poll();
  }

  it('does not list a catalogue host that has no agent registered, nor sell it', async () => {
    const hosts = await listed();
    expect(hosts.has(UNREGISTERED)).toBe(false);
    expect(hosts.has(HOST_1)).toBe(true);
    const { token } = await fundedUser(s, '500');
    const res = await order(token, UNREGISTERED, 1);
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('维护中');
  });

  it('sells a host reporting 1 card for 1, though the catalogue says more', async () => {
    const catalogueHost = (await s.ctx.catalogueStore.get()).hosts.find((h) => h.id === HOST_3)!;
    expect(catalogueHost.gpuFree).toBeGreaterThan(1);
    expect((await listed()).get(HOST_3)).toMatchObject({ gpuFree: 1, gpuTotal: 1 });
    const { token } = await fundedUser(s, '500');
    const two = await order(token, HOST_3, 2);
    expect(two.statusCode).toBe(409);
    expect(json<{ code: number }>(two).code).toBe(40920001);
  });

  it('sells nothing on a host whose agent went silent past the grace, and sells it again once it answers', async () => {
    const { token } = await fundedUser(s, '500');
    await a1.stop();
    await silence(31_000);
    await silence(1000);
    expect(await fleet().offerOf(HOST_1)).toBeNull();
    expect((await listed()).has(HOST_1)).toBe(false);
    const refused = await order(token, HOST_1, 1);
    expect(refused.statusCode).toBe(409);
    expect(json<{ code: number }>(refused).code).toBe(40920001);
    expect(refused.body).toContain('维护中');

    await a1.start();
    await fleet().poll();
    expect((await listed()).get(HOST_1)?.gpuFree).toBeGreaterThan(0);
    expect((await order(token, HOST_1, 1)).statusCode).toBe(200);
  });
});
