/**
 * The market on one real host (issue 30 §3): a compute driver that reports a host of 2 cores, 4 GB
 * and no GPU on Debian 12 gets a market of that host — no GPU products (each says why), the CPU
 * sizes that fit, the host's own system as its only image — and direct orders of the rest refused
 * with their codes; the simulated fleet keeps the whole demonstration catalogue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API } from '@console/contract';
import type { Application, GpuHost, GpuType, Image, Size } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import type { ComputeDriver, HostOffer } from '../../drivers/compute/types.js';
import {
  APP_IMAGE_UNREGISTERED,
  applicationRefusal,
  capacityRefusal,
  cardIsOfType,
  describeMarket,
  freeCardsOf,
  gpuTypeRefusal,
  hostMarket,
  IMAGE_NOT_BUILT,
  IMAGE_NOT_PULLED,
  imageRefusal,
  isHostSystem,
  sizeRefusal,
} from './host-market.js';

const DEBIAN_12 = { name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' };

function smallHost(over: Partial<HostOffer> = {}): HostOffer {
  return {
    cpus: 2,
    memoryGb: 4,
    diskGb: 100,
    gpus: [],
    images: ['console/base:12'],
    hostOs: DEBIAN_12,
    held: { cpu: 0, memoryGb: 0, gpus: 0 },
    ...over,
  };
}

const RATIO_1 = { hostCpuOvercommit: 1, hostMemoryOvercommit: 1 };

/** A compute driver that reports `offer()` as its host and runs nothing (the market and quotes are all this tests). */
function hostDriver(offer: () => HostOffer): ComputeDriver {
  return {
    name: 'fake-host',
    osFamilies: ['linux'],
    submit: async () => {},
    status: async () => null,
    diskUsage: async () => new Map(),
    events: async () => [],
    offer: async () => offer(),
  };
}

const SIZE_PRICE = API.orderPrice;
const GPU_PRICE = API.gpuOrderPrice;
const POSTPAID = { cycle: 'Usage', duration: 1 };

describe('the market on a host of 2 cores, 4 GB and no GPU', () => {
  let s: TestServer;
  let host = smallHost();
  beforeAll(async () => {
    s = await startTestServer({ drivers: { compute: hostDriver(() => host) } });
  });
  afterAll(async () => s.close());

  it('offers no GPU product: the market is empty, every GPU type says the host lacks it, no region sells GPU machines', async () => {
    expect(json<{ total: number; items: GpuHost[] }>(await get(s.app, API.gpuList)).total).toBe(0);
    const types = json<{ items: GpuType[] }>(await get(s.app, API.gpuTypeList)).items;
    expect(types.find((t) => t.id === 'rtx4090')).toMatchObject({ unavailable: '本主机没有 RTX 4090', gpuFree: 0, gpuTotal: 0 });
    expect(types.every((t) => t.unavailable?.startsWith('本主机没有'))).toBe(true);
    const regions = json<{ items: { categories: string[] }[] }>(await get(s.app, API.regions)).items;
    expect(regions.some((r) => r.categories.includes('Gpu') || r.categories.includes('App'))).toBe(false);
    expect(json<{ items: unknown[] }>(await get(s.app, `${API.regions}?category=Gpu`)).items).toEqual([]);
  });

  it('sells the CPU sizes within its cores and memory; a bigger one is listed with why it is not sold', async () => {
    const sizes = json<{ items: Size[] }>(await get(s.app, `${API.sizes}?filterBy=category,Generic&pageSize=50`)).items;
    expect(sizes.find((x) => x.id === 'gen-c2m4')?.unavailable).toBeUndefined();
    expect(sizes.find((x) => x.id === 'gen-c4m8')?.unavailable).toBe('本主机只有 2 核 / 4 GB 内存，放不下 4 核 / 8 GB 的机器');
  });

  it('offers the host’s own system by its name, and says of every other image why it is not offered', async () => {
    const images = json<{ items: Image[] }>(await get(s.app, `${API.images}?filterBy=category,Generic&pageSize=100`)).items;
    const debian = images.find((i) => i.id === 'debian-12')!;
    expect(debian).toMatchObject({ name: 'Debian 12 · 本主机系统', os: DEBIAN_12.name });
    expect(debian.unavailable).toBeUndefined();
    expect(images.find((i) => i.id === 'ubuntu-22.04')?.unavailable).toMatch(/^运营方尚未登记该镜像（本主机的系统是 Debian GNU\/Linux 12/);
  });

  it('lists no application as on sale: each says its image or its card is missing', async () => {
    const apps = json<{ items: Application[] }>(await get(s.app, `${API.applicationList}?pageSize=50`)).items;
    expect(apps.length).toBeGreaterThan(0);
    expect(apps.every((a) => !!a.unavailable)).toBe(true);
  });

  it('tells every page what the host has (site settings)', async () => {
    const { host: summary } = json<{ host: unknown }>(await get(s.app, API.siteSettings));
    expect(summary).toEqual({
      cpus: 2,
      memoryGb: 4,
      diskGb: 100,
      gpus: [],
      os: DEBIAN_12.name,
      cpuForSale: 2,
      memoryGbForSale: 4,
      cpuFree: 2,
      memoryGbFree: 4,
    });
  });

  it('refuses a direct order of a GPU, an absent image, a size too big and an application, each with NOT_ON_THIS_HOST', async () => {
    const u = await registerUser(s);
    const gpu = await post(s.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, ...POSTPAID }, u.token);
    expect(gpu.statusCode, gpu.body).toBe(400);
    expect(json(gpu)).toMatchObject({ code: 40032001, detail: '本主机没有 RTX 4090' });

    const ubuntu = await post(s.app, SIZE_PRICE, { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: 'ubuntu-22.04', ...POSTPAID });
    expect(json(ubuntu)).toMatchObject({ code: 40032001 });
    expect(json<{ detail: string }>(ubuntu).detail).toMatch(/^Ubuntu 22\.04：运营方尚未登记该镜像/);

    const big = await post(s.app, SIZE_PRICE, { sizeId: 'gen-c8m16', regionId: 'bj-b', imageId: 'debian-12', ...POSTPAID });
    expect(json(big)).toMatchObject({ code: 40032001 });

    const app = await post(s.app, GPU_PRICE, { gpuTypeId: 'rtx4090', gpuCount: 1, applicationId: 'jupyterlab', ...POSTPAID });
    expect(json(app)).toMatchObject({ code: 40032001 });
  });

  it('sells the host’s system on a size that fits, and refuses with HOST_FULL what the running machines leave no room for', async () => {
    const fits = await post(s.app, SIZE_PRICE, { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: 'debian-12', ...POSTPAID });
    expect(fits.statusCode, fits.body).toBe(200);

    const two = await post(s.app, SIZE_PRICE, { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: 'debian-12', count: 2, ...POSTPAID });
    expect(two.statusCode).toBe(409);
    expect(json(two)).toMatchObject({ code: 40932001 });

    host = smallHost({ held: { cpu: 1, memoryGb: 1, gpus: 0 } });
    try {
      const full = await post(s.app, SIZE_PRICE, { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: 'debian-12', ...POSTPAID });
      expect(full.statusCode).toBe(409);
      expect(json(full)).toMatchObject({
        code: 40932001,
        detail: '本主机剩余 1 核 / 3 GB 内存可售，所选配置需要 2 核 / 4 GB，请稍后再试或选择更小的配置',
      });
    } finally {
      host = smallHost();
    }
  });
});

describe('the simulated fleet', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('keeps the whole demonstration catalogue: GPU hosts, every image and application on sale, no host in the site settings', async () => {
    expect(json<{ total: number }>(await get(s.app, API.gpuList)).total).toBeGreaterThan(0);
    const types = json<{ items: GpuType[] }>(await get(s.app, API.gpuTypeList)).items;
    expect(types.some((t) => t.unavailable)).toBe(false);
    const images = json<{ items: Image[] }>(await get(s.app, `${API.images}?pageSize=100`)).items;
    expect(images.find((i) => i.id === 'ubuntu-22.04')).toMatchObject({ name: 'Ubuntu 22.04' });
    expect(images.some((i) => i.unavailable)).toBe(false);
    const apps = json<{ items: Application[] }>(await get(s.app, `${API.applicationList}?pageSize=50`)).items;
    expect(apps.some((a) => a.unavailable)).toBe(false);
    expect(json<{ host?: unknown }>(await get(s.app, API.siteSettings)).host ?? null).toBeNull();
    const quote = await post(s.app, GPU_PRICE, { gpuTypeId: 'rtx4090', gpuCount: 1, imageId: 'pytorch-2.3-cu121', ...POSTPAID });
    expect(quote.statusCode, quote.body).toBe(200);
  });
});

describe('what a host offers', () => {
  const market = (over: Partial<HostOffer> = {}, ratios = RATIO_1) => hostMarket(smallHost(over), ratios);

  it('knows a card by its model words and real memory', () => {
    const rtx4090 = { name: 'RTX 4090', memoryGb: 24 };
    const a100 = { name: 'A100 80GB', memoryGb: 80 };
    expect(cardIsOfType({ model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 }, rtx4090)).toBe(true);
    expect(cardIsOfType({ model: 'NVIDIA GeForce RTX 3090', memoryMb: 24576 }, rtx4090)).toBe(false);
    expect(cardIsOfType({ model: 'NVIDIA A100-SXM4-80GB', memoryMb: 81920 }, a100)).toBe(true);
    expect(cardIsOfType({ model: 'NVIDIA A100-PCIE-40GB', memoryMb: 40960 }, a100)).toBe(false);
    // Without nvidia-smi the memory is unknown (0): the name's memory word decides.
    expect(cardIsOfType({ model: 'NVIDIA A100-SXM4-80GB', memoryMb: 0 }, a100)).toBe(true);
  });

  it('sells a host’s cards exactly: those no machine holds', () => {
    const twoCards = market({ gpus: [{ model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564, count: 2 }], held: { cpu: 0, memoryGb: 0, gpus: 1 } });
    expect(gpuTypeRefusal(twoCards, { name: 'RTX 4090', memoryGb: 24 })).toBeNull();
    expect(freeCardsOf(twoCards, { name: 'RTX 4090', memoryGb: 24 })).toBe(1);
    expect(gpuTypeRefusal(twoCards, { name: 'H800', memoryGb: 80 })).toBe('本主机没有 H800');
  });

  it('offers an OCI image only when present, one without only where it is the host’s own system', () => {
    const m = market();
    expect(imageRefusal(m, { name: 'Debian 12 · Python 3.11', os: 'Debian 12', oci: 'console/base:12' })).toBeNull();
    expect(imageRefusal(m, { name: 'PyTorch 1.13.1 · CPU', os: 'Debian 12', oci: 'console/pytorch:1.13.1-cpu' })).toBe(IMAGE_NOT_BUILT);
    expect(imageRefusal(market({ images: null }), { name: 'X', os: 'Ubuntu 22.04', oci: 'any/thing:1' })).toBeNull();
    expect(isHostSystem('Debian 12', DEBIAN_12)).toBe(true);
    expect(isHostSystem('Debian 11', DEBIAN_12)).toBe(false);
    expect(isHostSystem('Ubuntu 22.04', { name: 'Ubuntu 22.04.4 LTS', id: 'ubuntu', versionId: '22.04' })).toBe(true);
    expect(isHostSystem('Ubuntu 20.04', { name: 'Ubuntu 22.04.4 LTS', id: 'ubuntu', versionId: '22.04' })).toBe(false);
  });

  it('offers an application only when its image is registered and built', () => {
    const m = market();
    expect(applicationRefusal(m, { name: 'PyTorch 2.3.0', os: 'Ubuntu 22.04' })).toBe(APP_IMAGE_UNREGISTERED);
    expect(applicationRefusal(m, undefined)).toBe(APP_IMAGE_UNREGISTERED);
    expect(applicationRefusal(m, { name: 'JupyterLab', os: 'Debian 12', oci: 'console/jupyterlab:4' })).toBe(IMAGE_NOT_BUILT);
    // An operator's registered image is not built here: it is on its way from the registry.
    expect(applicationRefusal(m, { name: 'SD WebUI', os: 'Ubuntu 22.04', oci: 'harbor.example.com/ai/sd-webui:1.9' })).toBe(IMAGE_NOT_PULLED);
    expect(applicationRefusal(m, { name: 'Debian', os: 'Debian 12', oci: 'console/base:12' })).toBeNull();
  });

  it('sells cores and memory up to the operator’s overcommit ratios, less what the running machines hold', () => {
    const size = { cpu: 4, memoryGb: 8 };
    expect(sizeRefusal(market(), size)).not.toBeNull();
    const doubled = market({}, { hostCpuOvercommit: 2, hostMemoryOvercommit: 2 });
    expect(sizeRefusal(doubled, size)).toBeNull();
    expect(capacityRefusal(doubled, size)).toBeNull();
    const busy = market({ held: { cpu: 2, memoryGb: 2, gpus: 0 } }, { hostCpuOvercommit: 2, hostMemoryOvercommit: 2 });
    expect(capacityRefusal(busy, { cpu: 2, memoryGb: 6 })).toBeNull();
    expect(capacityRefusal(busy, size)).toBe('本主机剩余 2 核 / 6 GB 内存可售，所选配置需要 4 核 / 8 GB，请稍后再试或选择更小的配置');
  });

  it('says at start which market applies', () => {
    expect(describeMarket(null, [])).toBe('市场：模拟机群：演示目录');
    expect(describeMarket(market(), ['Debian 12'])).toBe(
      '市场按本主机实际配置：2 核 / 4 GB / 无 GPU，系统 Debian GNU/Linux 12 (bookworm)；可售镜像：Debian 12',
    );
  });
});
