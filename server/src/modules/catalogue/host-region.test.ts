/**
 * A real host is one machine in one place: on a driver that reports its host (the local driver), the
 * CPU sizes are sold in the host's one region (the catalogue's first), never in the demonstration
 * catalogue's other regions (listed or ordered directly); the simulated fleet keeps them all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type Region } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import type { ComputeDriver, HostOffer } from '../../drivers/compute/types.js';

const HOST: HostOffer = {
  cpus: 8,
  memoryGb: 16,
  diskGb: 100,
  gpus: [],
  images: ['console/base:12'],
  hostOs: { name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' },
  held: { cpu: 0, memoryGb: 0, gpus: 0 },
};

/** A driver that reports HOST and runs nothing: only the market is looked at. */
const hostDriver: ComputeDriver = {
  name: 'fake-host',
  osFamilies: ['linux'],
  submit: async () => {},
  status: async () => null,
  diskUsage: async () => new Map(),
  events: async () => [],
  offer: async () => HOST,
};

const regionsOf = async (s: TestServer, category: string) =>
  json<{ items: Region[] }>(await get(s.app, `${API.regions}?category=${category}`)).items.map((r) => r.name);

describe('the regions of the CPU configurator', () => {
  let real: TestServer;
  let simulated: TestServer;
  beforeAll(async () => {
    real = await startTestServer({ drivers: { compute: hostDriver } });
    simulated = await startTestServer();
  });
  afterAll(async () => {
    await real?.close();
    await simulated?.close();
  });

  it('on a real host: its one region; on the simulated fleet: every region of the catalogue', async () => {
    expect(await regionsOf(real, 'Generic')).toEqual(['北京 B 区']);
    expect(await regionsOf(real, 'Desktop')).toEqual(['北京 B 区']);
    expect(await regionsOf(simulated, 'Generic')).toEqual(['北京 B 区', '上海 A 区', '广州 A 区', '重庆 A 区']);
  });

  it('refuses a direct order of a CPU size in another region on a real host (NOT_ON_THIS_HOST); quotes it in the host’s', async () => {
    const quote = (s: TestServer, regionId: string) => post(s.app, API.orderPrice, { sizeId: 'gen-c2m4', regionId, count: 1, cycle: 'Hour', duration: 1 });
    expect(json(await quote(real, 'sh-a'))).toMatchObject({ code: 40032001, detail: expect.stringContaining('本主机位于北京 B 区') });
    expect((await quote(real, 'bj-b')).statusCode).toBe(200);
    expect((await quote(simulated, 'sh-a')).statusCode).toBe(200);
  });
});
