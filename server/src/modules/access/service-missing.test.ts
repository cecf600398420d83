/**
 * A machine whose image lacks a service (ComputeDriver.serviceMissing: no notebook server, no
 * python3 for the 6006 relay): the instance's view gives no link that would never answer but says
 * why and which image has it, and JupyterLab opened anyway (a bookmark, an old page) answers a
 * Chinese page or the JUPYTER_UNAVAILABLE code at once, at the console's door and on the machine's
 * origin, instead of the 启动中 error for ever. Here the driver is the simulated fleet given the
 * services of the local driver and an image without the notebook (the local driver's own answer is
 * drivers/compute/local/image-env.test.ts's).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '@console/contract';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { ComputeDriver, MachineService } from '../../drivers/compute/types.js';
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

const NO_NOTEBOOK =
  '该实例的镜像没有 Jupyter Notebook（python3 的 notebook 模块），无法打开 JupyterLab；本主机带 Notebook 的镜像：Debian 12 · Python 3.11（console/base:12），请用其创建实例';

/** The driver as the local one is for a machine on an image without the notebook (`lacking` null: one with everything). */
function imageWithout(lacking: Partial<Record<MachineService, string>> | null) {
  const driver = sim as unknown as Record<string, unknown>;
  Object.assign(driver, {
    services: ['jupyter', 'service'],
    socketOf: () => null,
    serviceMissing: (_id: string, service: MachineService) => lacking?.[service] ?? null,
  } satisfies Partial<ComputeDriver>);
}
afterAll(() => {
  const driver = sim as unknown as Record<string, unknown>;
  for (const k of ['services', 'socketOf', 'serviceMissing']) delete driver[k];
});

describe('a service the machine’s image lacks', () => {
  it('the instance’s view says why instead of giving a link, and JupyterLab answers so at once', async () => {
    const at = await listen(s);
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token);
    imageWithout(null);
    // Entered while the image had it (an old tab): the machine origin's cookie is there.
    const { origin, cookie } = await enterMachine(at, u.token, `/jupyter/${id}/tree`);

    imageWithout({ jupyter: NO_NOTEBOOK });
    const view = await kit.instance(u.token, id);
    expect(view.access!.jupyterUrl).toBeNull();
    expect(view.access!.missing).toEqual({ jupyter: NO_NOTEBOOK });

    // The console's door: a page that says what is missing and which image has it, not a redirect.
    const door = await fetch(`${at}/jupyter/${id}/tree`, { headers: { cookie: `${SESSION_COOKIE}=${u.token}`, accept: 'text/html' }, redirect: 'manual' });
    expect(door.status).toBe(400);
    const page = await door.text();
    expect(page).toContain('无法打开JupyterLab');
    expect(page).toContain(NO_NOTEBOOK);
    expect(page).toContain('40029002');

    // On the machine's origin: the page for a browser, the code for the notebook's API calls.
    const there = await machineRequest(`${origin}/jupyter/${id}/tree`, { headers: { cookie, accept: 'text/html' } });
    expect(there.status).toBe(400);
    expect(there.text).toContain(NO_NOTEBOOK);
    const api = await machineRequest(`${origin}/jupyter/${id}/api/kernels`, { headers: { cookie } });
    expect(JSON.parse(api.text)).toMatchObject({ code: 40029002, detail: NO_NOTEBOOK });

    // An image that has it: the link again, and no reason.
    imageWithout(null);
    const fine = await kit.instance(u.token, id);
    expect(fine.access!.jupyterUrl).toContain(`/jupyter/${id}`);
    expect(fine.access!.missing).toBeUndefined();
  });
});
