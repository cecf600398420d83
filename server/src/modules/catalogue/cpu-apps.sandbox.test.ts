/**
 * The notebook application (a 镜像应用 that needs no card) bought on a CPU size of this host, with
 * the local driver (COMPUTE_DRIVER=local, real sandboxes): not offered until `console/notebook:6.4.12`
 * is in the host's layout; then quoted at the size's price, ordered, and delivered — a machine of
 * that image running the image's command for the application's port 8888, behind 打开应用's 启动中
 * page until the port answers. The image here is the tiny test image under the notebook's reference,
 * its command a stand-in that never answers (the real image's server is app-service.test.ts's).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API } from '@console/contract';
import type { Application, Order, Quote } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { enterMachine, HOST_SYSTEM_IMAGE, listen, localEnv, localKit, machineRequest } from '../../../test/local-kit.js';
import { buildTinyImage } from '../../../test/tiny-image.js';
import { OciLayout } from '../../drivers/compute/local/oci/layout.js';
import { runIn } from '../../drivers/compute/local/sandbox.js';
import { IMAGE_NOT_BUILT } from './host-market.js';

const NOTEBOOK = 'jupyter-notebook';
const ON_2C4G = { sizeId: 'gen-c2m4', regionId: 'bj-b', applicationId: NOTEBOOK, cycle: 'Usage', duration: 1 };

let s: TestServer;
let base: string;
const kit = localKit(() => s);

async function notebookApp(): Promise<Application> {
  const apps = json<{ items: Application[] }>(await get(s.app, `${API.applicationList}?pageSize=50`)).items;
  return apps.find((a) => a.id === NOTEBOOK)!;
}

/** The market's lists read the host at most every 2 s: the notebook's card once it says `ok`. */
async function notebookCardUntil(ok: (a: Application) => boolean): Promise<Application> {
  for (let i = 0; i < 100; i++) {
    const app = await notebookApp();
    if (ok(app)) return app;
    await new Promise((r) => setTimeout(r, 100));
  }
  return notebookApp();
}

describe.skipIf(lacks('bubblewrap'))('the notebook application on a CPU size of this host', () => {
  beforeAll(async () => {
    s = await startTestServer({ env: localEnv() });
    base = await listen(s);
  });
  afterAll(async () => s.close());

  it('is offered once its image is in the layout, and a bought one runs the image’s command for port 8888', async () => {
    const u = await kit.fundedUser('10');
    // No image yet: its card says so, an order is refused.
    expect((await notebookApp()).unavailable).toBe(IMAGE_NOT_BUILT);
    expect(json(await post(s.app, API.orderCreate, ON_2C4G, u.token))).toMatchObject({ code: 40032001 });

    const layout = await OciLayout.open(path.join(kit.driver().dir, 'oci'));
    await buildTinyImage(layout, 'test/tiny:1');
    await layout.importImage({
      ref: 'console/notebook:6.4.12',
      base: 'test/tiny:1',
      layers: [],
      config: { cmd: ['/bin/sh', '-c', 'echo 笔记本服务启动中; exec sleep 1000'], exposedPorts: [8888], workingDir: '/root' },
    });
    const card = await notebookCardUntil((a) => !a.unavailable);
    expect(card.unavailable).toBeUndefined();
    expect(card.sizes!.find((x) => x.id === 'gen-c2m4')?.unavailable).toBeUndefined();

    // The size's price, the same as the size with the host's system.
    const price = await post(s.app, API.orderPrice, ON_2C4G, u.token);
    expect(price.statusCode, price.body).toBe(200);
    const plain = json<Quote>(await post(s.app, API.orderPrice, { ...ON_2C4G, applicationId: undefined, imageId: HOST_SYSTEM_IMAGE }, u.token));
    expect(json<Quote>(price)).toMatchObject({ category: 'App', total: plain.total });

    const ordered = await post(s.app, API.orderCreate, ON_2C4G, u.token);
    expect(ordered.statusCode, ordered.body).toBe(200);
    const id = json<Order>(ordered).resourceId!;
    await kit.reach(u.token, id, 'Running');
    expect(await kit.instance(u.token, id)).toMatchObject({ category: 'App', applicationId: NOTEBOOK, gpuCount: 0, sizeId: 'gen-c2m4' });

    // The machine is the application's image, running its command.
    const sandbox = kit.driver().sandbox(id)!;
    expect((await runIn(sandbox, ['/bin/cat', '/etc/os-release'])).stdout).toContain('ID=console-tiny');
    expect(await kit.processesIn(id, (lines) => lines.some((l) => l.startsWith('sleep 1000')))).toContainEqual(expect.stringMatching(/^sleep 1000/));
    const state = await kit.driver().app(id)!.state();
    expect(state).toMatchObject({ port: 8888, running: true });

    // 打开应用: the 启动中 page until port 8888 answers.
    const { origin, cookie } = await enterMachine(base, u.token, `/app/${id}/`);
    const page = await machineRequest(`${origin}/`, { headers: { cookie, accept: 'text/html' } });
    expect(page.status).toBe(503);
    expect(page.text).toContain('镜像应用正在启动');
    expect(page.text).toContain('8888 端口开始应答后');
  });
});
