/**
 * Starting a stopped instance on a driver that sells one real host (ComputeDriver.offer) is sold as
 * an order is: its cores and memory within what the host may sell (its own times the overcommit
 * ratios) beside the machines running there, its cards exactly. A start beyond that is refused with
 * HOST_FULL (cards: INSTANCE_GPU_BUSY), the instance stays stopped and nothing is charged. Here the
 * simulated fleet is given a host's offer once the instance is stopped.
 */
import { describe, expect, it } from 'vitest';
import type { HostOffer } from '../../drivers/compute/types.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { TestServer } from '../../../test/harness.js';
import { json } from '../../../test/harness.js';
import { DELAYS, instanceKit, instanceSuite } from '../../../test/instances-kit.js';

let s: TestServer;
let sim: SimulatedComputeDriver;
instanceSuite((server, simulated) => {
  s = server;
  sim = simulated;
});
const kit = instanceKit(() => s);

function host(over: Partial<HostOffer>): HostOffer {
  return {
    cpus: 64,
    memoryGb: 512,
    diskGb: 1000,
    gpus: [],
    images: null,
    hostOs: { name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' },
    held: { cpu: 0, memoryGb: 0, gpus: 0 },
    ...over,
  };
}

/** The simulated fleet as a driver of one real host that reports `offer`. */
function onHost(offer: HostOffer) {
  (sim as unknown as { offer?: () => Promise<HostOffer> }).offer = async () => offer;
}

describe('starting on a host that is full', () => {
  it('is refused with HOST_FULL while the running machines leave no cores or memory; the instance stays stopped and is not charged', async () => {
    const u = await kit.fundedUser('100');
    const { id } = await kit.stopped(u.token);
    const stopped = await kit.row(id);
    try {
      const cash = await kit.cash(u.user.id);
      // Room for everything but this machine's cores: what others hold, plus it, is more than 2 cores × 2.
      onHost(host({ cpus: 2, memoryGb: 1024, held: { cpu: 4 - stopped.cpu + 1, memoryGb: 0, gpus: 0 } }));
      const refused = await kit.act(u.token, id, 'start');
      expect(refused.statusCode, refused.body).toBe(409);
      expect(json<{ code: number; detail: string }>(refused)).toMatchObject({
        code: 40932001,
        detail: expect.stringContaining(`该实例开机需要 ${stopped.cpu} 核`),
      });
      expect((await kit.instance(u.token, id)).status).toBe('Stopped');
      expect(await kit.cash(u.user.id)).toBe(cash);

      // Memory counts too.
      onHost(host({ memoryGb: stopped.memoryGb - 1 }));
      expect(json<{ code: number }>(await kit.act(u.token, id, 'start')).code).toBe(40932001);

      // Room again: it starts.
      onHost(host({ held: { cpu: 8, memoryGb: 32, gpus: 0 } }));
      expect((await kit.act(u.token, id, 'start')).statusCode).toBe(200);
      await kit.settle(DELAYS.start);
      expect((await kit.instance(u.token, id)).status).toBe('Running');
    } finally {
      delete (sim as unknown as { offer?: unknown }).offer;
    }
  });

  it('with cards: as many free cards of its type, exactly; in no-card mode it needs none', async () => {
    const u = await kit.fundedUser('100');
    const { id } = await kit.stopped(u.token);
    try {
      const cards = { model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564, count: 1 };
      onHost(host({ gpus: [cards], held: { cpu: 0, memoryGb: 0, gpus: 1 } }));
      const busy = await kit.act(u.token, id, 'start');
      expect(json<{ code: number; detail: string }>(busy)).toMatchObject({
        code: 40920002,
        detail: expect.stringContaining('本主机空闲的 RTX 4090 只有 0 张'),
      });
      expect((await kit.instance(u.token, id)).status).toBe('Stopped');
      expect((await kit.act(u.token, id, 'startNoCard')).statusCode).toBe(200);
      await kit.settle(DELAYS.start);
      expect(await kit.instance(u.token, id)).toMatchObject({ status: 'Running', noCard: true });
    } finally {
      delete (sim as unknown as { offer?: unknown }).offer;
    }
  });
});
