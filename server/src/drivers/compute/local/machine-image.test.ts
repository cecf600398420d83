/**
 * Machines boot from the OCI image they were sold (issue 30 §1), on real sandboxes: the tiny test
 * image's /usr and /etc are the machine's, not the host's; its /usr stays read-only to the machine's
 * root; a joiner (the web terminal, SSH) works on it; its system disk survives a stop; 保存镜像 makes
 * a layer on the base that a new machine boots from; a re-tag never changes a machine's base; an
 * unpacked base no machine or saved image needs is removed.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks } from '../../../../test/host-packages.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { buildTinyImage } from '../../../../test/tiny-image.js';
import { LocalComputeDriver } from './driver.js';
import type { LocalSpec } from './machine-image.js';
import { OciLayout, type OciImageInfo } from './oci/layout.js';
import { bwrapArgs, inRoot, runIn, sandboxPaths } from './sandbox.js';
import { localMachines } from './schema.js';

describe('a rootfs as the console looks into it', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'console-rootfs-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('follows links inside the image, never out of it to the host', () => {
    mkdirSync(path.join(root, 'usr', 'bin'), { recursive: true });
    writeFileSync(path.join(root, 'usr', 'bin', 'python3.11'), '');
    symlinkSync('python3.11', path.join(root, 'usr', 'bin', 'python3'));
    symlinkSync('usr/bin', path.join(root, 'bin'));
    // The host has /etc/passwd; the image does not: a link to it finds nothing.
    symlinkSync('/etc/passwd', path.join(root, 'usr', 'bin', 'escape'));
    symlinkSync('../../../../../../etc/passwd', path.join(root, 'usr', 'bin', 'climb'));
    expect(inRoot(root, '/usr/bin/python3')).toBe(path.join(root, 'usr', 'bin', 'python3.11'));
    expect(inRoot(root, '/bin/python3')).toBe(path.join(root, 'usr', 'bin', 'python3.11'));
    expect(inRoot(root, '/usr/bin/escape')).toBeNull();
    expect(inRoot(root, '/usr/bin/climb')).toBeNull();
  });

  it("binds the image's /usr and its links into /usr, never a link of the image that leads elsewhere", () => {
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    writeFileSync(path.join(root, 'etc', 'ld.so.cache'), 'cache');
    // A link into the machine's writable /etc: a joiner's loader would be the machine root's choice.
    symlinkSync('etc', path.join(root, 'lib64'));
    const args = bwrapArgs(sandboxPaths(root, 'x'), { hostname: 'x', gpuDevices: [], env: {}, rootfs: root });
    const joined = args.join(' ');
    expect(joined).toContain(`--ro-bind ${path.join(root, 'usr')} /usr`);
    expect(joined).toContain('--symlink usr/bin /bin');
    expect(joined).not.toContain('/lib64');
    expect(joined).toContain(`--ro-bind ${path.join(root, 'etc', 'ld.so.cache')} /etc/ld.so.cache`);
  });
});

describe.skipIf(lacks('bubblewrap', 'e2fsprogs'))('local machines on OCI images', () => {
  let database: Database;
  let drop: () => Promise<void>;
  let layout: OciLayout;
  let tiny: OciImageInfo;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-machine-image-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  const clock = new ManualClock(new Date('2026-11-29T08:00:00Z'));
  let d: LocalComputeDriver;
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
    layout = await OciLayout.open(path.join(dir, 'oci'));
    tiny = await buildTinyImage(layout);
    d = new LocalComputeDriver({ db: database.db, clock, dir, sshHost: '127.0.0.1', sshPort: () => 2222 });
  });
  afterAll(async () => {
    await d?.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const kinds = async (id: string) => (await d.events(0, 1000)).filter((e) => e.instanceId === id).map((e) => `${e.kind}:${e.ok ? 'ok' : e.error}`);
  const sh = async (id: string, script: string) => runIn(d.sandbox(id)!, ['/bin/sh', '-c', script]);
  const baseOf = async (id: string) =>
    ((await database.db.select().from(localMachines).where(eq(localMachines.instanceId, id)))[0]!.spec as LocalSpec).imageDigest;
  const machine = randomUUID();

  // The first machine unpacks the image and makes its disks: a minute on a loaded 2-core machine.
  it(
    "boots from the image: its os-release and programs, not the host's; /usr read-only to its root; a joiner's shell works",
    { timeout: 120_000 },
    async () => {
      await d.create('c-1', machine, machineSpec({ imageRef: 'console/tiny:1' }));
      await d.settled();
      expect(await kinds(machine)).toEqual(['create:ok', 'boot:ok']);
      expect(await baseOf(machine)).toBe(tiny.digest);
      const inside = await sh(machine, 'cat /etc/os-release; test -e /usr/bin/python3 || echo no-python; hostname; id -u');
      expect(inside).toMatchObject({ code: 0 });
      expect(inside.stdout).toContain('PRETTY_NAME="Console Tiny 1"');
      expect(inside.stdout).toContain(`no-python\ninstance-${machine.slice(0, 8)}\n0\n`);
      // Its root owns its system disk and nothing of the image's /usr or the loader's cache.
      for (const attempt of ['touch /usr/bin/evil', 'rm /usr/bin/sleep', 'echo x > /etc/ld.so.cache', 'echo /root/x.so > /etc/ld.so.preload']) {
        expect((await sh(machine, `${attempt} 2>/dev/null`)).code, attempt).not.toBe(0);
      }
      expect((await sh(machine, 'echo 留下 > /root/keep.txt && cat /root/keep.txt')).stdout).toBe('留下\n');
      // The web terminal and the SSH gateway run the driver's shell command.
      const shell = d.shell(machine, ['/bin/bash', '-c', 'grep ^ID= /etc/os-release'])!;
      expect(spawnSync(shell.file, shell.args, { env: shell.env, encoding: 'utf8' }).stdout).toBe('ID=console-tiny\n');
      // Without python3 the image has neither the notebook nor the 6006 relay, and the console can say why.
      expect(d.socketOf(machine, 'jupyter')).toBeNull();
      expect(d.serviceMissing(machine, 'jupyter')).toContain('没有 Jupyter Notebook');
      expect(d.serviceMissing(machine, 'service')).toContain('没有 python3');
    },
  );

  it('keeps its system disk and its base across a stop, a start and a re-tag of the reference', async () => {
    await d.stop('c-2', machine);
    await d.settled();
    // The reference now names another image: the machine keeps the digest it was laid out on.
    const retagged = await buildTinyImage(layout);
    expect(retagged.digest).not.toBe(tiny.digest);
    await d.start('c-3', machine, { gpu: false });
    await d.settled();
    expect(await baseOf(machine)).toBe(tiny.digest);
    expect((await sh(machine, 'cat /root/keep.txt; grep ^ID= /etc/os-release')).stdout).toBe('留下\nID=console-tiny\n');
  });

  it('saves a layer on its base (保存镜像): the 镜像 page has its size, base and layers, and a new machine from it has the file on the same base', async () => {
    await d.stop('s-1', machine);
    await d.saveImage('s-2', machine, 'saved-1');
    await d.settled();
    expect((await d.events(0, 1000)).find((e) => e.opId === 's-2')).toMatchObject({ ok: true, imageSizeGb: 1 });
    const info = await d.imageInfo('saved-1');
    expect(info).toMatchObject({ base: { digest: tiny.digest }, layers: expect.any(Array) });
    expect(info!.layers).toHaveLength(tiny.layers.length + 1);
    expect(info!.sizeBytes).toBeGreaterThan(tiny.size);
    expect(existsSync(path.join(dir, 'images', 'saved-1.tar'))).toBe(false);
    // The layout holds what users saved: other machines' uids, which walk the driver's folder, never read it.
    expect(statSync(path.join(dir, 'oci')).mode & 0o777).toBe(0o700);

    const copy = randomUUID();
    await d.create('s-3', copy, machineSpec({ imageRef: 'console/tiny:1', userImageRef: 'saved-1' }));
    await d.settled();
    expect(await kinds(copy)).toEqual(['create:ok', 'boot:ok']);
    expect(await baseOf(copy)).toBe(tiny.digest);
    expect((await sh(copy, 'cat /root/keep.txt; grep ^ID= /etc/os-release; hostname')).stdout).toBe(`留下\nID=console-tiny\ninstance-${copy.slice(0, 8)}\n`);
    await d.destroy('s-4', copy);
    await d.settled();
  });

  it('keeps an unpacked base past a release for the next machine; the image gc removes it once no machine and no saved image needs it', async () => {
    const other = await buildTinyImage(layout, 'console/tiny:2');
    const id = randomUUID();
    await d.create('g-1', id, machineSpec({ imageRef: 'console/tiny:2' }));
    await d.settled();
    const unpacked = (digest: string) => existsSync(path.join(dir, 'rootfs', digest.slice('sha256:'.length)));
    expect(unpacked(other.digest)).toBe(true);
    await d.destroy('g-2', id);
    await d.destroy('g-3', machine);
    await d.settled();
    expect(unpacked(other.digest)).toBe(true);
    await d.collectImages(new Set(['saved-1']));
    expect(unpacked(other.digest)).toBe(false);
    // The saved image's base stays: a machine made from it later boots on it.
    expect(unpacked(tiny.digest)).toBe(true);
  });

  it('the image gc (collectImages) drops a deleted saved image, its layer and the base it alone kept unpacked; a live one stays', async () => {
    const unpacked = (digest: string) => existsSync(path.join(dir, 'rootfs', digest.slice('sha256:'.length)));
    const savedLayer = (await layout.resolve('saved/saved-1'))!.layers.at(-1)!.digest;
    // The image re-tagged earlier in this file left blobs no name needs: those go, the saved image stays.
    await d.collectImages(new Set(['saved-1']));
    expect(await d.imageInfo('saved-1')).not.toBeNull();
    expect(await d.collectImages(new Set(['saved-1']))).toBe(0);
    expect(unpacked(tiny.digest)).toBe(true);

    // Its owner deleted it: nothing needs the base's unpacked tree either (no machine is left).
    expect(await d.collectImages(new Set())).toBeGreaterThan(0);
    expect(await layout.resolve('saved/saved-1')).toBeNull();
    expect(existsSync(layout.blobPath(savedLayer))).toBe(false);
    expect(unpacked(tiny.digest)).toBe(false);
    // The stock image stays in the layout: the catalogue may offer it.
    expect(await layout.resolve('console/tiny:1')).not.toBeNull();
  });
});
