/**
 * The local compute driver on real sandboxes: a machine is created and boots, keeps its data disk
 * across stop/start and a restart of the server, reports a sandbox killed from outside, saves its
 * system layer as an image, moves between hosts, and is gone after destroy. As root (this
 * project's CI), a machine is held to its size: memory beyond it is refused, a full data disk
 * refuses writes, 扩容 grows it.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks } from '../../../../test/host-packages.js';
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

describe.skipIf(lacks('bubblewrap', 'python3', 'e2fsprogs'))('local compute driver', () => {
  let database: Database;
  let drop: () => Promise<void>;
  // The driver's folder in a DATA_DIR of its own, as in the server: DATA_DIR's other entries are shut
  // to the machines' uids (shutDataDir), which with the folder right in /tmp were every test's in /tmp.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-local-driver-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  const clock = new ManualClock(new Date('2026-11-25T08:00:00Z'));
  const drivers: LocalComputeDriver[] = [];
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
  });
  afterAll(async () => {
    for (const d of drivers) await d.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
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
    // The image will also hold a folder where the new machine's /etc/hostname is written.
    await runIn(d.sandbox(id)!, [
      '/bin/sh',
      '-c',
      `echo conf > /root/app.conf; echo data > ${DATA_MOUNT}/d.txt; rm /etc/hostname; mkdir -p /etc/hostname/$(seq -s / 200)`,
    ]);
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

    // A new machine from the saved image: the system layer's file is there, under its own name, on an empty data disk.
    const copy = randomUUID();
    await d.create('s-7', copy, { ...spec('host-a'), userImageRef: 'user-image-1' });
    await d.settled();
    expect(await kinds(d, copy)).toEqual(['create:ok', 'boot:ok']);
    expect(
      await runIn(d.sandbox(copy)!, ['/bin/sh', '-c', `cat /root/app.conf; hostname; cat /etc/hostname; ls ${DATA_MOUNT} | grep -vx lost+found; true`]),
    ).toMatchObject({
      code: 0,
      stdout: `conf\ninstance-${copy.slice(0, 8)}\ninstance-${copy.slice(0, 8)}\n`,
    });
    // An image that does not exist: the create fails and says so, leaving nothing.
    const none = randomUUID();
    await d.create('s-8', none, { ...spec('host-a'), userImageRef: 'no-such-image' });
    await d.settled();
    expect(await kinds(d, none)).toEqual(['create:镜像文件不存在，无法从该镜像创建实例']);
    expect(existsSync(path.join(dir, 'hosts', 'host-a', none))).toBe(false);
    await d.destroy('s-9', copy);
    await d.settled();
  });

  it("runs each account's machines as a host uid of its own when root: files, processes and a setuid file are that uid's, never the host root's", async () => {
    // What an earlier version left open (only the driver's folder was shut then) is shut at start.
    const old = path.join(dir, 'hosts', 'host-old', randomUUID());
    mkdirSync(path.join(old, 'system'), { recursive: true, mode: 0o755 });
    writeFileSync(path.join(old, 'data.img'), '', { mode: 0o644 });
    writeFileSync(path.join(dir, 'images', 'old.tar'), '', { mode: 0o644 });
    const d = driver();
    if (process.getuid?.() !== 0) {
      expect(d.hostUidMode).toMatchObject({ ok: false, why: expect.stringContaining('root') });
      return;
    }
    expect(d.hostUidMode.ok).toBe(true);
    expect(statSync(path.join(old, 'system')).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(old, 'data.img')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, 'images', 'old.tar')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, 'images')).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, 'hosts')).mode & 0o777).toBe(0o711);
    rmSync(path.dirname(old), { recursive: true });
    const [a1, a2, b1] = [randomUUID(), randomUUID(), randomUUID()];
    const accountA = randomUUID();
    await d.create('u-1', a1, { ...spec('host-a'), fileStoreId: accountA });
    await d.create('u-2', a2, { ...spec('host-a'), fileStoreId: accountA });
    await d.create('u-3', b1, spec('host-a'));
    await d.settled();
    const uidA = (await d.hostUidOf(accountA))!;
    expect(uidA).toBeGreaterThan(1_000_000);
    expect(await d.hostUidOf(b1)).not.toBe(uidA);
    // Root inside, the account's uid outside: the machine's processes and what they write.
    const inside = await runIn(d.sandbox(a1)!, [
      '/bin/sh',
      '-c',
      `id -u; echo x > ${DATA_MOUNT}/f; echo y > /root/g; cp /bin/sh /root/suid-sh; chmod 4755 /root/suid-sh`,
    ]);
    expect(inside.stdout.split('\n')[0]).toBe('0');
    const hostPid = Number(readFileSync(`/proc/${d.sandbox(a1)!.initPid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)![1]);
    expect(hostPid).toBe(uidA);
    const machineDir = path.join(dir, 'hosts', 'host-a', a1);
    for (const f of ['data/f', 'system/root/g', 'system/root/suid-sh']) expect(statSync(path.join(machineDir, f)).uid, f).toBe(uidA);
    expect(statSync(path.join(machineDir, 'system/root/suid-sh')).mode & 0o4000).toBe(0o4000); // setuid, to the machine's uid only
    // The account's two machines share the uid; another machine cannot enter this one's disks.
    expect(Number(readFileSync(`/proc/${d.sandbox(a2)!.initPid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)![1])).toBe(uidA);
    for (const disk of ['system', 'data']) expect(statSync(path.join(machineDir, disk)).mode & 0o077, disk).toBe(0);
    expect(statSync(path.join(machineDir, 'data.img')).mode & 0o777).toBe(0o600);
    for (const id of [a1, a2, b1]) await d.destroy(`u-d-${id}`, id);
    await d.settled();
  });

  // Writes 2.2 GB through loop-mounted images: 17–27 s alone on the 2-core machine, more beside other suites.
  it('holds a machine to its size as root: memory beyond it is refused, a full data disk refuses writes until 扩容 grows it', async () => {
    const d = driver();
    if (process.getuid?.() !== 0) {
      // Not root: nothing is enforced, and the driver says why (its log line at start).
      expect(d.cgroups.version).toBeNull();
      expect(d.diskImages).toMatchObject({ ok: false, why: expect.stringContaining('root') });
      return;
    }
    expect(d.cgroups.version).not.toBeNull();
    expect(d.diskImages.ok).toBe(true);
    const id = randomUUID();
    await d.create('l-1', id, { ...spec('host-a'), memoryGb: 1, cpu: 1, dataDiskGb: 1 });
    await d.settled();
    let sandbox = d.sandbox(id)!;
    const inside = (script: string) => runIn(sandbox, ['/bin/sh', '-c', script]);

    // Its root cannot lift them: no remounting (the base stays read-only), no cgroup mounts, no user
    // namespace of its own to get those powers in.
    for (const attempt of ['mount -o remount,rw,bind /usr', 'touch /usr/bin/planted', 'unshare -U true', 'unshare -C -m true', 'mount -t cgroup2 none /mnt']) {
      expect((await inside(`${attempt} 2>/dev/null`)).code, attempt).not.toBe(0);
    }
    expect(existsSync('/usr/bin/planted')).toBe(false);

    // 1 GB of memory: 300 MB fit, 1.5 GB do not (the kernel ends the process, not the machine).
    expect(await inside(`python3 -c "x = b'a' * (300 * 1024**2); print(len(x) // 1024**2)"`)).toMatchObject({ code: 0, stdout: '300\n' });
    const hog = await inside(`python3 -c "x = b'a' * (1536 * 1024**2); print('survived')"`);
    expect(hog.stdout).not.toContain('survived');
    expect(hog.code).not.toBe(0);
    expect(await inside('echo still-running')).toMatchObject({ code: 0, stdout: 'still-running\n' });

    // A 1 GB data disk: df says so, and writing 1.2 GB runs out of space.
    const size = async () => Number((await inside(`df -B1 --output=size ${DATA_MOUNT} | tail -1`)).stdout.trim());
    expect(Math.round((await size()) / 1024 ** 3)).toBe(1);
    const fill = await inside(`dd if=/dev/zero of=${DATA_MOUNT}/fill bs=1M count=1200 2>&1`);
    expect(fill.code).not.toBe(0);
    expect(fill.stdout).toContain('No space left on device');

    // 扩容 to 3 GB (a stopped machine, as the console asks): the file system has grown when it runs again.
    await d.stop('l-2', id);
    await d.resizeDisk('l-3', id, 3);
    await d.start('l-4', id, { gpu: false });
    await d.settled();
    expect((await kinds(d, id)).slice(-3)).toEqual(['stop:ok', 'resizeDisk:ok', 'start:ok']);
    sandbox = d.sandbox(id)!;
    expect(Math.round((await size()) / 1024 ** 3)).toBe(3);
    expect(await inside(`dd if=/dev/zero of=${DATA_MOUNT}/more bs=1M count=1024 2>/dev/null && echo written`)).toMatchObject({ code: 0, stdout: 'written\n' });
    // What the disk holds: the first gigabyte that filled it and the one written since.
    expect((await d.diskUsage([id])).get(id)).toBe(2);

    await d.destroy('l-5', id);
    await d.settled();
    expect(existsSync(path.join(dir, 'hosts', 'host-a', id))).toBe(false);
  }, 180_000);
});
