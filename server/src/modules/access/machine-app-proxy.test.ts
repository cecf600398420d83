/**
 * 打开应用 of an application its machine runs (ComputeDriver.app; the local driver's is
 * drivers/compute/local/app-service.test.ts on real sandboxes): the console's `/app/<id>/` door
 * leads the owner to the root of the instance's origin; while the application does not answer on
 * its port, a page gets the 启动中 page (which reloads itself; once the application keeps exiting
 * it says so, with its log), an API call the APP_STARTING error; once it answers, its own pages.
 * Here the driver is the simulated fleet given an application: an HTTP server of the test's on a
 * Unix socket, there or not.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '@console/contract';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { MachineApp, MachineAppState } from '../../drivers/compute/types.js';
import type { TestServer } from '../../../test/harness.js';
import { instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { enterMachine, listen, machineRequest } from '../../../test/local-kit.js';

let s: TestServer;
let sim: SimulatedComputeDriver;
instanceSuite((server, simulated) => {
  s = server;
  sim = simulated;
});
const kit = instanceKit(() => s);
const folder = mkdtempSync(path.join(tmpdir(), 'console-app-proxy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const SD_WEBUI = { imageId: undefined, applicationId: 'sd-webui' };

let base = '';
async function consoleBase() {
  base ||= await listen(s);
  return base;
}

/** The machine's application as the driver gives it: its socket (nobody listening until `listen`), its state. */
function fakeApp(state: MachineAppState) {
  const socketPath = path.join(folder, `${Math.random().toString(36).slice(2)}.sock`);
  const server = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1>WebUI ${req.url}</h1>`));
  const app: MachineApp = { socket: () => ({ path: socketPath, close: () => {} }), state: async () => state };
  return { app, state, listen: () => new Promise<void>((r) => server.listen(socketPath, r)), close: () => server.close() };
}

describe('an application its machine runs, through 打开应用', () => {
  it('shows the 启动中 page until the application answers, then the application, to the owner only', async () => {
    const at = await consoleBase();
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token, { extra: SD_WEBUI });
    // The machine was created for the port its application serves (the catalogue's 7860).
    expect((await sim.machine(id))!.spec).toMatchObject({ appPort: 7860 });
    const fake = fakeApp({ port: 7860, exits: 0, running: true, upSeconds: 3, logTail: 'Loading weights…\n' });
    s.ctx.drivers.compute.app = (instanceId) => (instanceId === id ? fake.app : null);
    try {
      const { url, origin, cookie } = await enterMachine(at, u.token, `/app/${id}/`);
      expect(url).toBe(`${origin}/`);

      // Not answering yet: a page is the 启动中 page, which reloads itself; an API call is the error.
      const page = await machineRequest(`${origin}/`, { headers: { cookie, accept: 'text/html,*/*' } });
      expect(page.status).toBe(503);
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.text).toContain('镜像应用正在启动');
      expect(page.text).toContain('7860 端口开始应答后，本页会自动打开应用');
      expect(page.text).toContain('<meta http-equiv="refresh"');
      expect(page.text).toContain('Loading weights…');
      const api = await machineRequest(`${origin}/sdapi/v1/options`, { headers: { cookie } });
      expect(api.status).toBe(503);
      expect(JSON.parse(api.text)).toMatchObject({ code: 50329003 }); // APP_STARTING

      // It keeps exiting: the page says so, with its log.
      Object.assign(fake.state, { exits: 5, running: false, logTail: 'RuntimeError: CUDA out of memory\n' });
      const failing = await machineRequest(`${origin}/`, { headers: { cookie, accept: 'text/html' } });
      expect(failing.text).toContain('反复退出（已退出 5 次）');
      expect(failing.text).toContain('RuntimeError: CUDA out of memory');

      // Answering: its own pages, at the root of the origin.
      await fake.listen();
      const up = await machineRequest(`${origin}/?tab=txt2img`, { headers: { cookie, accept: 'text/html' } });
      expect(up.status).toBe(200);
      expect(up.text).toBe('<h1>WebUI /?tab=txt2img</h1>');

      // Someone else: not through the door.
      const other = await kit.fundedUser('10');
      const door = await fetch(`${at}/app/${id}/`, { headers: { cookie: `${SESSION_COOKIE}=${other.token}` }, redirect: 'manual' });
      expect(door.status).toBe(403);
    } finally {
      delete s.ctx.drivers.compute.app;
      fake.close();
    }
  });

  it('an application instance whose machine runs no application (and that is no embedded ComfyUI) has no app to open', async () => {
    const at = await consoleBase();
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token, { extra: SD_WEBUI });
    s.ctx.drivers.compute.app = () => null;
    try {
      const door = await fetch(`${at}/app/${id}/`, { headers: { cookie: `${SESSION_COOKIE}=${u.token}` }, redirect: 'manual' });
      expect(((await door.json()) as { code: number }).code).toBe(40029007); // APP_UNAVAILABLE
    } finally {
      delete s.ctx.drivers.compute.app;
    }
  });
});
