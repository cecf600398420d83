/**
 * 迁移 between two hosts' agents on the local driver (issue 31 §2), through a real registry: each
 * host a driver with its own folder and database, as two agents are. A machine on an image moves
 * with what its user wrote in /root (its system layer) and on its data disk, and its base comes to
 * the target by digest; a data disk of zeros travels as a few kilobytes; the source no longer has
 * it; running the migration again changes nothing. An import that fails leaves the machine on its
 * old host as it was, and nothing on the target.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks, skipOrFail } from '../../../../test/host-packages.js';
import { missingRegistryTools, startRegistry, type TestRegistry } from '../../../../test/registry-kit.js';
import { buildTinyImage } from '../../../../test/tiny-image.js';
import { migrateAcrossHosts, subOps, type MigrateOutcome } from '../fleet-migrate.js';
import type { MachineSpec } from '../types.js';
import { LocalComputeDriver } from './driver.js';
import { OciLayout } from './oci/layout.js';
import { OperatorRegistry } from './oci/registry.js';
import { DATA_MOUNT, runIn } from './sandbox.js';

const TINY = 'console/tiny:1';

const spec = (hostId: string, imageRef: string | null): MachineSpec => ({
  hostId,
  regionId: 'local',
  gpuCount: 1,
  cpu: 2,
  memoryGb: 2,
  imageId: null,
  userImageRef: null,
  imageRef,
  dataDiskGb: 20,
  systemDiskGb: 5,
  bandwidthMbps: 0,
  sshUser: 'root',
  sshPassword: 'pw',
  jupyterToken: 'tok',
  appPort: null,
});

const skip = lacks('bubblewrap', 'e2fsprogs') || skipOrFail(missingRegistryTools(), process.env);

describe.skipIf(skip)('迁移 between two hosts’ agents (local driver, a real registry)', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'console-migration-'));
  chmodSync(work, 0o711);
  const clock = new ManualClock(new Date('2026-11-29T08:00:00Z'));
  const drivers: LocalComputeDriver[] = [];
  const drops: (() => Promise<void>)[] = [];
  let registry: TestRegistry;

  beforeAll(async () => {
    registry = await startRegistry(mkdtempSync(path.join(work, 'registry-')));
  });
  afterAll(async () => {
    for (const d of drivers) await d.shutdown();
    for (const drop of drops) await drop();
    registry?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  /** One host's agent: a local driver with its own DATA_DIR and database; `withRegistry` false: REGISTRY_URL not set. */
  async function host(name: string, sshPort: number, withRegistry = true): Promise<LocalComputeDriver> {
    const { database, drop } = await openTestDatabase();
    drops.push(drop);
    const dataDir = path.join(work, name);
    mkdirSync(dataDir, { mode: 0o711 });
    const d = new LocalComputeDriver({
      db: database.db,
      clock,
      dir: path.join(dataDir, 'local-compute'),
      sshHost: '127.0.0.1',
      sshPort: () => sshPort,
      registry: withRegistry ? { url: registry.url } : null,
    });
    drivers.push(d);
    return d;
  }

  async function run(d: LocalComputeDriver, id: string, script: string) {
    return runIn(d.sandbox(id)!, ['/usr/bin/bash', '-c', script]);
  }

  it('moves a machine on an image with its system layer and data disk; the source no longer has it', { timeout: 120_000 }, async () => {
    const source = await host('host-2', 2222);
    const target = await host('host-1', 2223);
    await buildTinyImage(await OciLayout.open(path.join(source.dir, 'oci')), TINY);
    const id = randomUUID();
    await source.create('c-1', id, spec('host-2', TINY));
    await source.settled();
    expect(await source.status(id)).toMatchObject({ power: 'running', hostId: 'host-2' });
    const wrote = await run(
      source,
      id,
      `echo 系统层 > /root/hello.txt && mkdir -p ${DATA_MOUNT}/deep/er && echo 数据盘 > ${DATA_MOUNT}/deep/er/data.txt && head -c 20000000 /dev/zero > ${DATA_MOUNT}/zeros`,
    );
    expect(wrote).toMatchObject({ code: 0 });
    await source.stop('c-2', id);
    await source.settled();

    const reports: MigrateOutcome[] = [];
    const m = { opId: `migrate:${id}:1`, instanceId: id, source, target, targetHostId: 'host-1' };
    const deps = { report: async (o: MigrateOutcome) => void reports.push(o), pollMs: 20 };
    expect(await migrateAcrossHosts(m, deps)).toEqual({ ok: true, error: null, access: { sshHost: '127.0.0.1', sshPort: 2223 } });

    // 20 MB of zeros and two small files: the data disk's layer is a few kilobytes, not the disk.
    const exported = await source.operation(subOps(m.opId).export);
    expect(exported).toMatchObject({ state: 'done', migration: { ref: expect.stringContaining(id) as string } });
    expect(exported!.migration!.dataBytes).toBeLessThan(256 * 1024);
    // The artifact held the user's disks: it left the registry once imported.
    const remote = new OperatorRegistry(await OciLayout.open(path.join(target.dir, 'oci')), { url: registry.url });
    expect(await remote.exists(exported!.migration!.ref)).toBe(false);
    expect(await source.status(id)).toMatchObject({ power: 'destroyed' });
    expect(existsSync(path.join(source.dir, 'hosts', 'host-2', id))).toBe(false);
    expect(await target.status(id)).toMatchObject({ power: 'stopped', hostId: 'host-1', pendingOpId: null });

    await target.start('c-3', id, { gpu: true });
    await target.settled();
    const read = await run(target, id, `cat /root/hello.txt ${DATA_MOUNT}/deep/er/data.txt && stat -c %s ${DATA_MOUNT}/zeros && cat /etc/os-release`);
    expect(read.stdout).toContain('系统层\n数据盘\n20000000\n');
    expect(read.stdout).toContain('Console Tiny');
    // The data disk is an image of the size bought again (20 GB), not the size of what it holds.
    expect((await run(target, id, `df -k --output=size ${DATA_MOUNT} | tail -1`)).stdout.trim()).toMatch(/^2\d{7}$/);

    // Again under the same opId (a console restart, the reconciler resending): nothing runs twice.
    expect(await migrateAcrossHosts(m, deps)).toMatchObject({ ok: true });
    expect(reports).toHaveLength(2);
    expect(await target.status(id)).toMatchObject({ power: 'running', hostId: 'host-1' });
    await target.destroy('c-4', id);
    await target.settled();
  });

  it('leaves the machine on its old host intact when the import fails', { timeout: 60_000 }, async () => {
    const source = await host('host-2b', 2222);
    const target = await host('host-1b', 2223, false);
    const id = randomUUID();
    await source.create('f-1', id, spec('host-2b', null));
    await source.settled();
    await runIn(source.sandbox(id)!, ['/bin/sh', '-c', `echo 系统层 > /root/hello.txt; echo 数据盘 > ${DATA_MOUNT}/data.txt`]);
    await source.stop('f-2', id);
    await source.settled();

    const outcome = await migrateAcrossHosts(
      { opId: `migrate:${id}:1`, instanceId: id, source, target, targetHostId: 'host-1b' },
      { report: async () => {}, pollMs: 20 },
    );
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/^目标主机导入失败：跨主机迁移需要镜像仓库/);
    expect(await target.status(id)).toBeNull();
    expect(existsSync(path.join(target.dir, 'hosts', 'host-1b', id))).toBe(false);

    expect(await source.status(id)).toMatchObject({ power: 'stopped', hostId: 'host-2b' });
    await source.start('f-3', id, { gpu: false });
    await source.settled();
    expect((await runIn(source.sandbox(id)!, ['/bin/sh', '-c', `cat /root/hello.txt ${DATA_MOUNT}/data.txt`])).stdout).toBe('系统层\n数据盘\n');
    await source.destroy('f-4', id);
    await source.settled();
  });
});
