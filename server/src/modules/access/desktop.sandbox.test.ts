/**
 * The remote desktop of a real 云桌面 sandbox: the owner's WebSocket reaches its VNC server (the
 * RFB handshake noVNC starts with); other users and machines without a desktop do not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, ERRORS, type Order } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { listen, localKit } from '../../../test/local-kit.js';

let s: TestServer;
let base: string;
const kit = localKit(() => s);

async function runningDesktop(token: string): Promise<string> {
  const res = await post(s.app, API.orderCreate, { sizeId: 'dsk-c4m8', regionId: 'bj-b', imageId: 'ubuntu-22.04-desktop', cycle: 'Usage', duration: 1 }, token);
  expect(res.statusCode, res.body).toBe(200);
  const [order] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', token)).items;
  await kit.reach(token, order!.resourceId!, 'Running');
  return order!.resourceId!;
}

/** Opens the desktop socket and reads the server's first RFB message (its protocol version), retrying while the desktop starts. */
async function rfbGreeting(id: string, token: string): Promise<string> {
  for (let i = 0; i < 60; i++) {
    const greeting = await new Promise<string | null>((resolve, reject) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceDesktop.replace(':id', id)}`, { headers: { authorization: `Bearer ${token}` } });
      ws.once('message', (data) => {
        resolve(data.toString());
        ws.close();
      });
      ws.once('close', () => resolve(null));
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
      ws.once('error', () => resolve(null));
    });
    if (greeting) return greeting;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the desktop never answered');
}

beforeAll(async () => {
  s = await startTestServer({ env: { COMPUTE_DRIVER: 'local' } });
  base = await listen(s);
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap', 'desktop'))('remote desktop', () => {
  it('relays the owner to the VNC server of a 云桌面; nobody else, and no desktop for a GPU instance', async () => {
    const u = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await runningDesktop(u.token);
    expect((await kit.instance(u.token, id)).access).toMatchObject({ desktop: true });
    expect(await rfbGreeting(id, u.token)).toMatch(/^RFB 003\.00\d\n$/);
    await expect(rfbGreeting(id, other.token)).rejects.toMatchObject({ status: 403 });

    const gpu = await kit.runningInstance(u.token);
    expect((await kit.instance(u.token, gpu)).access).toMatchObject({ desktop: false });
    await expect(rfbGreeting(gpu, u.token)).rejects.toMatchObject({ status: 400 });
  });

  it('offers the desktops this host can run: Linux ones, not Windows images, which are refused if asked for', async () => {
    const u = await kit.fundedUser('100');
    const images = json<{ items: { id: string; os: string }[] }>(await get(s.app, '/infra/api/v2.1/images?filterBy=category,Desktop')).items;
    expect(images.map((i) => i.id)).toEqual(['ubuntu-22.04-desktop']);
    const res = await post(s.app, API.orderCreate, { sizeId: 'dsk-c4m8', regionId: 'bj-b', imageId: 'win-server-2022', cycle: 'Usage', duration: 1 }, u.token);
    expect(json(res)).toMatchObject({ code: ERRORS.IMAGE_INCOMPATIBLE.code, detail: expect.stringContaining('无法运行') });
    expect(json<{ items: unknown[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', u.token)).items).toEqual([]);
  });
});
