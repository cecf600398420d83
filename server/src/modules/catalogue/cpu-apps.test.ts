/**
 * 镜像应用 that need no card (minGpuMemoryGb 0, issue 30 §3): the Jupyter Notebook application is
 * sold on the CPU sizes at the size's price — listed with them, quoted and ordered with a sizeId — on
 * a host without GPUs once its image is in the host's layout (else its card says the image is not
 * built and a direct order is refused), and on the simulated fleet as any application is. It is
 * never a GPU order; a GPU application is never a size order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, orderPath } from '@console/contract';
import type { Application, Instance, Order, Quote, Region } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { DELAYS, DELAYS_ENV, instanceKit } from '../../../test/instances-kit.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { ComputeDriver, HostOffer } from '../../drivers/compute/types.js';
import { IMAGE_NOT_BUILT } from './host-market.js';

const NOTEBOOK = 'jupyter-notebook';
const NOTEBOOK_REF = 'console/notebook:6.4.12';
const POSTPAID = { cycle: 'Usage', duration: 1 } as const;
const ON_2C4G = { sizeId: 'gen-c2m4', regionId: 'bj-b', applicationId: NOTEBOOK, ...POSTPAID };

/** A host of 2 cores, 4 GB and no GPU on Debian 12 with these images in its layout; it runs nothing. */
function hostDriver(images: () => string[]): ComputeDriver {
  const offer = (): HostOffer => ({
    cpus: 2,
    memoryGb: 4,
    diskGb: 100,
    gpus: [],
    images: images(),
    hostOs: { name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' },
    held: { cpu: 0, memoryGb: 0, gpus: 0 },
  });
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

async function applications(s: TestServer): Promise<Application[]> {
  return json<{ items: Application[] }>(await get(s.app, `${API.applicationList}?pageSize=50`)).items;
}

async function quote(s: TestServer, body: object, token?: string) {
  return post(s.app, API.orderPrice, body, token);
}

describe('the notebook application on a host without GPUs', () => {
  let s: TestServer;
  let images = ['console/base:12', NOTEBOOK_REF];
  beforeAll(async () => {
    s = await startTestServer({ drivers: { compute: hostDriver(() => images) } });
  });
  afterAll(async () => s.close());

  it('is offered with the CPU sizes that fit the host, each at its own price; the GPU applications are not', async () => {
    const apps = await applications(s);
    const notebook = apps.find((a) => a.id === NOTEBOOK)!;
    expect(notebook).toMatchObject({ name: 'Jupyter Notebook · 数据分析', category: '数据科学', defaultPort: 8888, minGpuMemoryGb: 0 });
    expect(notebook.unavailable).toBeUndefined();
    const small = notebook.sizes!.find((x) => x.id === 'gen-c2m4')!;
    expect(small.unavailable).toBeUndefined();
    expect(small.price).toMatchObject({ cycle: 'Hour', price: '1200' }); // ¥0.12 an hour, the size's price
    expect(notebook.sizes!.find((x) => x.id === 'gen-c4m8')?.unavailable).toBe('本主机只有 2 核 / 4 GB 内存，放不下 4 核 / 8 GB 的机器');
    expect(notebook.sizes!.every((x) => x.category === 'Generic')).toBe(true);
    // What the host sells leads the gallery, before the applications it cannot run.
    expect(apps[0]!.id).toBe(NOTEBOOK);
    for (const gpuApp of apps.filter((a) => a.minGpuMemoryGb > 0)) {
      expect(gpuApp.unavailable, gpuApp.id).toBeTruthy();
      expect(gpuApp.sizes).toBeUndefined();
    }
    // The region sells applications (on its CPU sizes), still no GPU machine.
    const regions = json<{ items: Region[] }>(await get(s.app, `${API.regions}?category=App`)).items;
    expect(regions.map((r) => r.id)).toContain('bj-b');
    expect(regions.some((r) => r.categories.includes('Gpu'))).toBe(false);
  });

  it('is quoted at the CPU size’s price and ordered as an application on that size', async () => {
    const plain = json<Quote>(await quote(s, { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: 'debian-12-python', ...POSTPAID }));
    const res = await quote(s, ON_2C4G);
    expect(res.statusCode, res.body).toBe(200);
    const q = json<Quote>(res);
    expect(q).toMatchObject({ category: 'App', total: plain.total, listTotal: plain.listTotal });
    expect(q.lines[0]).toMatchObject({ kind: 'compute', name: plain.lines[0]!.name, unitPrice: '1200' });

    const kit = instanceKit(() => s);
    const u = await kit.fundedUser('10');
    const ordered = await post(s.app, API.orderCreate, { ...ON_2C4G, name: '我的笔记本' }, u.token);
    expect(ordered.statusCode, ordered.body).toBe(200);
    expect(json<Order>(ordered)).toMatchObject({ category: 'App', kind: 'Personal' });
    const id = json<Order>(ordered).resourceId!;
    expect(await kit.instance(u.token, id)).toMatchObject({
      category: 'App',
      applicationId: NOTEBOOK,
      applicationName: 'Jupyter Notebook · 数据分析',
      imageId: 'notebook-6.4',
      sizeId: 'gen-c2m4',
      gpuCount: 0,
      gpuTypeId: null,
      hourlyPrice: '1200',
    });
  });

  it('refuses it with a GPU type, beside another image, and a GPU application on a CPU size', async () => {
    const gpu = await post(s.app, API.gpuOrderPrice, { gpuTypeId: 'rtx4090', gpuCount: 1, applicationId: NOTEBOOK, ...POSTPAID });
    expect(json(gpu)).toMatchObject({ code: 40020003, detail: 'Jupyter Notebook · 数据分析 不使用 GPU，请在镜像应用页选择 CPU 规格部署' });
    const sdWebui = await quote(s, { ...ON_2C4G, applicationId: 'sd-webui' });
    expect(json(sdWebui)).toMatchObject({ code: 40020003, detail: 'Stable Diffusion WebUI 需要显存不少于 8 GB 的 GPU，请在 GPU 配置中选择显卡部署' });
    const both = await quote(s, { ...ON_2C4G, imageId: 'debian-12-python' });
    expect(both.statusCode).toBe(400);
    expect(json(both)).toMatchObject({ code: 40000001 });
  });

  it('is not offered while its image is not in the host’s layout: the card says so and a direct order is refused', async () => {
    images = ['console/base:12'];
    try {
      // The lists read the host at most every 2 s; the quote reads it now.
      const refused = await quote(s, ON_2C4G);
      expect(refused.statusCode).toBe(400);
      expect(json(refused)).toMatchObject({ code: 40032001, detail: `Jupyter Notebook · 数据分析：${IMAGE_NOT_BUILT}` });
      const kit = instanceKit(() => s);
      const u = await kit.fundedUser('10');
      expect(json(await post(s.app, API.orderCreate, ON_2C4G, u.token))).toMatchObject({ code: 40032001 });
      let notebook: Application | undefined;
      for (let i = 0; i < 60 && !notebook?.unavailable; i++) {
        notebook = (await applications(s)).find((a) => a.id === NOTEBOOK);
        if (!notebook?.unavailable) await new Promise((r) => setTimeout(r, 100));
      }
      expect(notebook?.unavailable).toBe(IMAGE_NOT_BUILT);
    } finally {
      images = ['console/base:12', NOTEBOOK_REF];
    }
  });
});

describe('the notebook application on the simulated fleet', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { COMPUTE_SIM_DELAYS: DELAYS_ENV } });
  });
  afterAll(async () => s.close());

  it('is offered with every CPU size, and a bought one runs the application on its size', async () => {
    const notebook = (await applications(s)).find((a) => a.id === NOTEBOOK)!;
    expect(notebook.unavailable).toBeUndefined();
    expect(notebook.sizes!.map((x) => x.id)).toEqual(['gen-c2m4', 'gen-c4m8', 'gen-c8m16', 'gen-c16m64']);
    expect(notebook.sizes!.some((x) => x.unavailable)).toBe(false);

    const kit = instanceKit(() => s);
    const u = await kit.fundedUser('20');
    const body = { sizeId: 'gen-c4m8', regionId: 'sh-a', applicationId: NOTEBOOK, cycle: 'Day', duration: 1 };
    const price = json<Quote>(await quote(s, body, u.token));
    const plain = json<Quote>(await quote(s, { ...body, applicationId: undefined }, u.token));
    expect(price).toMatchObject({ category: 'App', total: plain.total });

    const ordered = await post(s.app, API.orderCreate, body, u.token);
    expect(ordered.statusCode, ordered.body).toBe(200);
    const order = json<Order>(ordered);
    expect(order).toMatchObject({ category: 'App', status: 'Unpaid' });
    const paid = await post(s.app, orderPath('Personal', order.orderUid, '/pay'), { method: 'Balance' }, u.token);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    const [fresh] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', u.token)).items;
    const id = fresh!.resourceId!;
    s.clock.advance(DELAYS.create);
    await s.ctx.reconciler.tick();
    s.clock.advance(DELAYS.boot);
    await s.ctx.reconciler.tick();

    const instance = await kit.instance(u.token, id);
    expect(instance).toMatchObject({ status: 'Running', category: 'App', applicationId: NOTEBOOK, gpuCount: 0, sizeId: 'gen-c4m8' });
    expect(instance.access?.appUrl).toBeTruthy();
    // The machine was made for the application's port, on the size's cores and memory.
    const machine = await (s.ctx.drivers.compute as SimulatedComputeDriver).machine(id);
    expect(machine!.spec).toMatchObject({ appPort: 8888, cpu: 4, memoryGb: 8, gpuCount: 0 });
    // /console/app lists it among the application instances.
    const apps = json<{ items: Instance[] }>(await get(s.app, `${API.instances}?filterBy=category,App`, u.token)).items;
    expect(apps.map((i) => i.id)).toEqual([id]);
  });

  it('refuses it with a GPU type and on a desktop size', async () => {
    const gpu = await post(s.app, API.gpuOrderPrice, { gpuTypeId: 'rtx4090', gpuCount: 1, applicationId: NOTEBOOK, ...POSTPAID });
    expect(json(gpu)).toMatchObject({ code: 40020003 });
    const desktop = await quote(s, { ...ON_2C4G, sizeId: 'dsk-c4m8' });
    expect(json(desktop)).toMatchObject({
      code: 40020003,
      detail: 'Jupyter Notebook · 数据分析 只能部署在 CPU 实例规格上（所选「云桌面 标准型」是云桌面），请选择 CPU 实例规格',
    });
  });
});
