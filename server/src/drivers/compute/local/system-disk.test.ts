/**
 * A local machine's system disk (系统盘) is the size bought, on real sandboxes of the local driver as
 * root (this project's CI): df shows it, a file bigger than it is refused (ENOSPC), /root/autodl-tmp
 * of a machine without a data disk counts against it, and destroy unmounts before it deletes.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { lacks } from '../../../../test/host-packages.js';
import type { MachineSpec } from '../types.js';
import { LocalComputeDriver } from './driver.js';
import { DATA_MOUNT, runIn } from './sandbox.js';

const GIB = 1024 ** 3;
const spec = machineSpec({ cpu: 1, memoryGb: 1, dataDiskGb: 0, systemDiskGb: 1 });

// As root only; there, without a package it needs it is skipped only outside CI (host-packages).
describe.skipIf(process.getuid?.() !== 0 || lacks('bubblewrap', 'e2fsprogs'))('a local machine’s system disk (as root)', () => {
  let database: Database;
  let drop: () => Promise<void>;
  // A DATA_DIR of its own (the driver shuts everything beside its folder to the machines' uids), walkable by them.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-local-sysdisk-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  const clock = new ManualClock(new Date('2026-11-28T08:00:00Z'));
  let d: LocalComputeDriver;
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
    d = new LocalComputeDriver({ db: database.db, clock, dir, sshHost: '127.0.0.1', sshPort: () => 2222 });
  });
  afterAll(async () => {
    await d?.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const machine = async (s: Partial<MachineSpec> = {}) => {
    const id = randomUUID();
    await d.create(`c-${id}`, id, { ...spec, ...s });
    await d.settled();
    const failed = (await d.events(0, 1000)).find((e) => e.instanceId === id && !e.ok);
    expect(failed?.error ?? null, 'the machine runs').toBeNull();
    const sandbox = d.sandbox(id)!;
    return { id, inside: (script: string) => runIn(sandbox, ['/bin/sh', '-c', script]) };
  };
  const mounted = (folder: string) => readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${folder} `);

  it('is the plan’s size: df shows it, a file bigger than it is refused, also in /root/autodl-tmp without a data disk', async () => {
    const { id, inside } = await machine();
    const size = async (at: string) => Math.round(Number((await inside(`df -B1 --output=size ${at} | tail -1`)).stdout.trim()) / GIB);
    expect(await size('/root')).toBe(1);
    expect(await size('/etc')).toBe(1);
    expect(await size(DATA_MOUNT)).toBe(1);
    expect(await inside('fallocate -l 200M /root/fits && rm /root/fits && echo written')).toMatchObject({ code: 0, stdout: 'written\n' });
    for (const at of ['/root/big', '/var/big', `${DATA_MOUNT}/big`]) {
      const fill = await inside(`fallocate -l 2G ${at} 2>&1; echo "exit=$?"; rm -f ${at}`);
      expect(fill.stdout, at).toContain('No space left on device');
      expect(fill.stdout, at).not.toContain('exit=0');
    }

    // Destroy unmounts the system disk before deleting: nothing of the machine is left, nothing mounted.
    const root = path.join(dir, 'hosts', 'host-a', id);
    expect(mounted(path.join(root, 'system'))).toBe(true);
    await d.destroy(`x-${id}`, id);
    await d.settled();
    expect(existsSync(root)).toBe(false);
    expect(mounted(path.join(root, 'system'))).toBe(false);
  });

  it('gives a machine with a data disk its two sizes: the system disk at /root, the data disk at /root/autodl-tmp', async () => {
    const { inside } = await machine({ systemDiskGb: 2, dataDiskGb: 1 });
    const sizes = await inside(`df -B1 --output=size /root ${DATA_MOUNT} | tail -2`);
    expect(
      sizes.stdout
        .trim()
        .split('\n')
        .map((n) => Math.round(Number(n) / GIB)),
    ).toEqual([2, 1]);
    expect((await inside(`fallocate -l 1500M ${DATA_MOUNT}/big 2>&1`)).stdout).toContain('No space left on device');
    expect(await inside('fallocate -l 1500M /root/big && echo written')).toMatchObject({ code: 0, stdout: 'written\n' });
  });
});
