/**
 * The local compute driver on real sandboxes: a machine is created and boots, keeps its data disk
 * across stop/start and a restart of the server, reports a sandbox killed from outside, saves its
 * system layer as an image, moves between hosts, and is gone after destroy.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import type { MachineSpec } from '../types.js';
import { LocalComputeDriver } from './driver.js';
import { DATA_MOUNT, runIn } from './sandbox.js';

const spec = (hostId: string): MachineSpec => ({
  hostId,
  regionId: 'local',
  gpuCount: 1,
  cpu: 2,
  memoryGb: 4,
  imageId: null,
  userImageRef: null,
  dataDiskGb: 50,
  bandwidthMbps: 0,
  sshUser: 'root',
  sshPassword: 'pw',
  jupyterToken: 'tok',
  appPort: null,
});

describe('local compute driver', () => {
  let database: Database;
  let drop: () => Promise<void>;
  const dir = mkdtempSync(path.join(tmpdir(), 'console-local-driver-'));
  const clock = new ManualClock(new Date('2026-11-25T08:00:00Z'));
  const drivers: LocalComputeDriver[] = [];
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
  });
  afterAll(async () => {
    for (const d of drivers) await d.shutdown();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const driver = () => {
    const d = new LocalComputeDriver({ db: database.db, clock, dir, sshHost: '127.0.0.1', sshPort: () => 2222 });
    drivers.push(d);
    return d;
  };
  const kinds = async (d: LocalComputeDriver, id: string) =>
    (await d.events(0, 1000)).filter((e) => e.instanceId === id).map((e) => `${e.kind}:${e.ok ? 'ok' : e.error}`);

  it('creates and boots a machine, keeps its data disk across stop/start and a server restart, and removes it on destroy', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create('op-1', id, spec('host-a'));
    await d.create('op-1', id, spec('host-a')); // the same id again: nothing more
    await d.settled();
    expect(await kinds(d, id)).toEqual(['create:ok', 'boot:ok']);
    expect(await d.status(id)).toMatchObject({ power: 'running', gpu: true, hostId: 'host-a', pendingOpId: null });
    const [created] = (await d.events(0, 1000)).filter((e) => e.instanceId === id);
    expect(created!.access).toMatchObject({ sshHost: '127.0.0.1', sshPort: 2222 });
    // No cards on this host: the GPU machine runs without them and says so to CUDA.
    expect(await runIn(d.sandbox(id)!, ['/bin/sh', '-c', `echo 数据 > ${DATA_MOUNT}/keep.txt; ls /dev | grep -c nvidia || true`])).toMatchObject({
      code: 0,
      stdout: '0\n',
    });

    await d.stop('op-2', id);
    await d.settled();
    expect(d.sandbox(id)).toBeNull();
    await d.start('op-3', id, { gpu: false });
    await d.settled();
    expect(await runIn(d.sandbox(id)!, ['/bin/sh', '-c', `cat ${DATA_MOUNT}/keep.txt; echo "[$CUDA_VISIBLE_DEVICES]"`])).toMatchObject({
      stdout: '数据\n[]\n',
    });

    // The server ends (its sandboxes with it) and starts again: the running machine runs again.
    await d.shutdown();
    const again = driver();
    await again.settled();
    expect(await again.status(id)).toMatchObject({ power: 'running' });
    expect(await runIn(again.sandbox(id)!, ['cat', `${DATA_MOUNT}/keep.txt`])).toMatchObject({ stdout: '数据\n' });

    await again.destroy('op-4', id);
    await again.settled();
    expect(await again.status(id)).toMatchObject({ power: 'destroyed' });
    expect(existsSync(path.join(dir, 'hosts', 'host-a', id))).toBe(false);
    expect(await again.diskUsage([id])).toEqual(new Map());
  });

  it('reports a sandbox killed from outside as stopped, and refuses what does not fit the state', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create('k-1', id, spec('host-a'));
    await d.settled();
    process.kill(d.sandbox(id)!.initPid, 'SIGKILL');
    await vi.waitFor(async () => expect(await d.status(id)).toMatchObject({ power: 'stopped' }), { timeout: 5000, interval: 50 });
    expect((await d.events(0, 1000)).filter((e) => e.instanceId === id).at(-1)).toMatchObject({ kind: 'found', power: 'stopped' });
    await d.stop('k-2', id);
    await d.settled();
    expect((await kinds(d, id)).at(-1)).toBe('stop:机器当前为 stopped，不能执行 stop');
    await d.destroy('k-3', id);
    await d.settled();
  });

  it('saves the system layer as an image and moves the disks to another host', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create('s-1', id, spec('host-a'));
    await d.settled();
    await runIn(d.sandbox(id)!, ['/bin/sh', '-c', `echo conf > /root/app.conf; echo data > ${DATA_MOUNT}/d.txt`]);
    await d.stop('s-2', id);
    await d.saveImage('s-3', id, 'user-image-1');
    await d.migrate('s-4', id, 'host-b');
    await d.settled();
    expect((await d.events(0, 1000)).find((e) => e.opId === 's-3')).toMatchObject({ ok: true, imageSizeGb: 1 });
    expect(statSync(path.join(dir, 'images', 'user-image-1.tar')).size).toBeGreaterThan(0);
    expect(await d.status(id)).toMatchObject({ hostId: 'host-b', power: 'stopped' });
    expect(readFileSync(path.join(dir, 'hosts', 'host-b', id, 'data', 'd.txt'), 'utf8')).toBe('data\n');
    await d.start('s-5', id, { gpu: true });
    await d.settled();
    expect(await runIn(d.sandbox(id)!, ['cat', '/root/app.conf'])).toMatchObject({ stdout: 'conf\n' });
    expect((await d.diskUsage([id])).get(id)).toBe(1);
    await d.destroy('s-6', id);
    await d.settled();
  });
});
