/**
 * What the tests on real sandboxes (COMPUTE_DRIVER=local, `*.sandbox.test.ts`) share: a listening
 * server, and buying an instance and waiting for the driver to really bring it to a status.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { API, SESSION_COOKIE } from '@console/contract';
import type { Order } from '@console/contract';
import type { LocalComputeDriver } from '../src/drivers/compute/local/driver.js';
import { parseOsRelease } from '../src/drivers/compute/local/host-offer.js';
import { runIn } from '../src/drivers/compute/local/sandbox.js';
import { DEFAULT_CATALOGUE_FILE } from '../src/modules/catalogue/index.js';
import { get, json, post, type TestServer } from './harness.js';
import { instanceKit } from './instances-kit.js';

/** The sandbox tests' image of the host's own system (no OCI image: machines run the host's /usr), for CPU machines and desktops. */
export const HOST_SYSTEM_IMAGE = 'host-system';

let sandboxCatalogueFile: string | null = null;

/**
 * The sandbox tests' catalogue: the shipped one, with the host's cores and memory sold many times over
 * (a test file runs several machines at once on a 2-core machine; the market's own limits are
 * catalogue/host-market.test.ts's) and an image of the host's own system (HOST_SYSTEM_IMAGE), which
 * the market on the local driver offers on any host without building images.
 */
export function sandboxCatalogue(): string {
  if (sandboxCatalogueFile) return sandboxCatalogueFile;
  const catalogue = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as { settings: object; images: object[] };
  const host = parseOsRelease(readFileSync('/etc/os-release', 'utf8'));
  catalogue.settings = { ...catalogue.settings, hostCpuOvercommit: 64, hostMemoryOvercommit: 16 };
  catalogue.images.push({
    id: HOST_SYSTEM_IMAGE,
    kind: 'os',
    name: host.name,
    os: `${host.id} ${host.versionId}`,
    forGpu: false,
    forCategories: ['Generic', 'Desktop'],
  });
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'sandbox-catalogue-')), 'catalogue.json');
  writeFileSync(file, JSON.stringify(catalogue));
  sandboxCatalogueFile = file;
  return file;
}

/** The server environment of a sandbox test: the local driver, selling sandboxCatalogue(). */
export function localEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { COMPUTE_DRIVER: 'local', CATALOGUE_FILE: sandboxCatalogue(), ...extra };
}

export function localKit(s: () => TestServer) {
  const kit = instanceKit(s);
  const driver = () => s().ctx.drivers.compute as LocalComputeDriver;
  const local = {
    ...kit,
    driver,
    /** Lets the driver finish what it was given and the reconciler read its events, until the instance has `status`. */
    async reach(token: string, id: string, status: string) {
      for (let i = 0; i < 50; i++) {
        await driver().settled();
        await s().ctx.reconciler.tick();
        if ((await kit.instance(token, id)).status === status) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`instance ${id} never reached ${status}: ${(await kit.instance(token, id)).status}`);
    },
    /** The instance's data disk on the host, where the driver keeps it (`<dir>/hosts/<host>/<id>/data`; a CPU machine's host is the driver's own). */
    async dataDisk(id: string): Promise<string> {
      const machine = await driver().status(id);
      return path.join(driver().dir, 'hosts', machine!.hostId!, id, 'data');
    },
    /** The command lines of the processes inside the instance's sandbox (waits until `ok` holds, up to ~3 s). */
    async processesIn(id: string, ok: (lines: string[]) => boolean = () => true): Promise<string[]> {
      let lines: string[] = [];
      for (let i = 0; i < 60; i++) {
        const sandbox = driver().sandbox(id)!;
        const r = await runIn(sandbox, ['/bin/sh', '-c', 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < $f; echo; done']);
        lines = r.stdout.split('\n').filter(Boolean);
        if (ok(lines)) return lines;
        await new Promise((r) => setTimeout(r, 50));
      }
      return lines;
    },
    /**
     * Buys a post-paid CPU machine of the host's own system (what the market on the local driver offers
     * on any host: localEnv), with a data disk at /root/autodl-tmp as GPU machines have, and waits until it runs.
     */
    async runningInstance(token: string): Promise<string> {
      const res = await post(
        s().app,
        API.orderCreate,
        { sizeId: 'gen-c2m4', regionId: 'bj-b', imageId: HOST_SYSTEM_IMAGE, dataDiskGb: 20, cycle: 'Usage', duration: 1 },
        token,
      );
      expect(res.statusCode, res.body).toBe(200);
      const [order] = json<{ items: Order[] }>(await get(s().app, '/order/api/v2.1/orders?pageSize=1', token)).items;
      await local.reach(token, order!.resourceId!, 'Running');
      return order!.resourceId!;
    },
  };
  return local;
}

/** Starts listening on a free loopback port (the WebSocket and SSH tests need real sockets); the base URL. */
export async function listen(s: TestServer): Promise<string> {
  await s.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(s.app.server.address() as { port: number }).port}`;
}

/** Resolves `*.localhost` (the machines' origins) to this machine, as browsers do and Node does not. */
export const localhostLookup = ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
  void hostname;
  if (options?.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

export interface MachineResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request to a machine origin, no redirect followed. */
export function machineRequest(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<MachineResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, lookup: localhostLookup }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/**
 * What a browser does with a machine link of the console (`/jupyter/<id>/…`, `/service/<id>/…`):
 * the door with the console cookie, then the ticket on the machine's origin. The page's URL there
 * and the cookie the machine origin set.
 */
export async function enterMachine(base: string, consoleToken: string, pathname: string): Promise<{ url: string; origin: string; cookie: string }> {
  const door = await fetch(`${base}${pathname}`, { headers: { cookie: `${SESSION_COOKIE}=${consoleToken}` }, redirect: 'manual' });
  expect(door.status, await door.clone().text()).toBe(302);
  const entry = new URL(door.headers.get('location')!);
  const entered = await machineRequest(entry.href);
  expect(entered.status, entered.text).toBe(302);
  const cookie = String(entered.headers['set-cookie']![0]!.split(';')[0]);
  return { url: `${entry.origin}${entered.headers.location!}`, origin: entry.origin, cookie };
}
