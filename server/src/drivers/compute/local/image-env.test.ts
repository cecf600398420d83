/**
 * A machine's image config Env (LANG, TZ, PATH, LD_LIBRARY_PATH) reaches every process the console
 * starts in it — the web terminal's and SSH's shells (login shells too, whose Debian /etc/profile
 * sets PATH anew), SSH exec, the notebook's and the application's commands — and nothing of the
 * console's own environment does (issue 28). With cards the host driver's folders come after the
 * image's own: the application's LD_LIBRARY_PATH keeps the image's value and ends in the driver's
 * libraries. A machine whose image lacks the notebook is told which image of the host has one.
 * On real sandboxes (bubblewrap), the tiny test image with an Env of its own and fake cards.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks } from '../../../../test/host-packages.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { buildTinyImage } from '../../../../test/tiny-image.js';
import { appEnv } from './app-service.js';
import { LocalComputeDriver } from './driver.js';
import { driverFiles, discoverGpus, type GpuHost } from './gpus.js';
import { OciLayout } from './oci/layout.js';
import { imageEnvOf, imagePathProfile, machineEnv, runIn } from './sandbox.js';

const IMAGE_PATH = '/opt/tiny/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const IMAGE_ENV = [`PATH=${IMAGE_PATH}`, 'LANG=zh_CN.UTF-8', 'TZ=Asia/Shanghai', 'LD_LIBRARY_PATH=/opt/tiny/lib'];

describe('the environment of a machine’s processes', () => {
  it('is its image’s Env; with cards the driver’s folders come after the image’s own, or alone', () => {
    expect(machineEnv(imageEnvOf(IMAGE_ENV), false)).toEqual({ PATH: IMAGE_PATH, LANG: 'zh_CN.UTF-8', TZ: 'Asia/Shanghai', LD_LIBRARY_PATH: '/opt/tiny/lib' });
    expect(machineEnv({}, false)).toBeUndefined();
    expect(machineEnv(imageEnvOf(['LANG=C.UTF-8']), true)).toEqual({
      LANG: 'C.UTF-8',
      LD_LIBRARY_PATH: '/run/nvidia/lib',
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/run/nvidia/bin',
    });
    expect(appEnv(IMAGE_ENV, true)).toEqual([
      `PATH=${IMAGE_PATH}:/run/nvidia/bin`,
      'LANG=zh_CN.UTF-8',
      'TZ=Asia/Shanghai',
      'LD_LIBRARY_PATH=/opt/tiny/lib:/run/nvidia/lib',
    ]);
    expect(appEnv(IMAGE_ENV, false)).toEqual(IMAGE_ENV);
    // What is not NAME=VALUE is no variable; a later one wins.
    expect(imageEnvOf(['=x', 'NOVALUE', '1A=b', 'A=1', 'A=2=3'])).toEqual({ A: '2=3' });
  });

  it('gives login shells the image’s PATH back, quoted; no PATH or one of several lines: no file', () => {
    const script = imagePathProfile("/opt/it's/bin:/usr/bin");
    const root = mkdtempSync(path.join(tmpdir(), 'image-profile-'));
    try {
      const run = spawnSync(
        '/bin/sh',
        ['-c', `${script.replaceAll('/etc/profile.d', `${root}/profile.d`)}\n. ${root}/profile.d/console-image-env.sh && echo "$PATH"`],
        {
          encoding: 'utf8',
        },
      );
      expect(run.stdout).toBe("/opt/it's/bin:/usr/bin\n");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    expect(imagePathProfile(undefined)).toBe('rm -f /etc/profile.d/console-image-env.sh');
    expect(imagePathProfile('/a\nEOF\nreboot')).toBe('rm -f /etc/profile.d/console-image-env.sh');
  });
});

/** One fake card (minor 0) with the driver's libcuda, as gpus.test.ts's tree. */
function fakeCards(): { root: string; host: GpuHost } {
  const root = mkdtempSync(path.join(tmpdir(), 'image-env-gpus-'));
  const info = path.join(root, 'proc/driver/nvidia/gpus/0000:19:00.0');
  mkdirSync(info, { recursive: true });
  writeFileSync(path.join(info, 'information'), 'Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-aaaa\nBus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n');
  mkdirSync(path.join(root, 'dev'));
  for (const name of ['nvidia0', 'nvidiactl']) writeFileSync(path.join(root, 'dev', name), `${name}\n`, { mode: 0o666 });
  const lib = path.join(root, 'usr/lib/x86_64-linux-gnu');
  mkdirSync(lib, { recursive: true });
  writeFileSync(path.join(lib, 'libcuda.so.1'), 'host libcuda\n');
  for (const dir of [root, path.join(root, 'dev'), path.join(root, 'usr'), path.join(root, 'usr/lib'), lib]) chmodSync(dir, 0o755);
  const ldconfig = `1 libs found\n\tlibcuda.so.1 (libc6,x86-64) => ${lib}/libcuda.so.1\n`;
  const smi = '0, NVIDIA H200, 143771, GPU-aaaa, 00000000:19:00.0, 0\n';
  return { root, host: { root, cards: () => discoverGpus(root, () => smi), files: () => driverFiles(root, ldconfig) } };
}

/** A layer of these files (path → content) in `work`. */
function layer(work: string, name: string, files: Record<string, string>): string {
  const root = path.join(work, name);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  const tar = path.join(work, `${name}.tar`);
  execFileSync('tar', ['-c', '-f', tar, '-C', root, '--owner=0', '--group=0', '.']);
  return tar;
}

describe.skipIf(lacks('bubblewrap', 'e2fsprogs'))('machines on an image with an Env of its own', () => {
  let database: Database;
  let drop: () => Promise<void>;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-image-env-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  const cards = fakeCards();
  const canary = `canary-${randomUUID()}`;
  let d: LocalComputeDriver;
  const plain = randomUUID();
  const withCard = randomUUID();

  beforeAll(async () => {
    // A secret of the console's, as SESSION_SECRET would be.
    process.env.IMAGE_ENV_TEST_SECRET = canary;
    ({ database, drop } = await openTestDatabase());
    const layout = await OciLayout.open(path.join(dir, 'oci'));
    await buildTinyImage(layout);
    const work = mkdtempSync(path.join(tmpdir(), 'image-env-layers-'));
    // Debian's /etc/profile, as far as PATH goes: a login shell sets its own, then reads profile.d.
    const profile =
      'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\nexport PATH\nfor i in /etc/profile.d/*.sh; do [ -r "$i" ] && . "$i"; done\n';
    await layout.importImage({
      ref: 'test/env:1',
      base: 'console/tiny:1',
      layers: [layer(work, 'etc', { 'etc/profile': profile })],
      // Its application writes the environment it was given, then stays.
      config: { env: IMAGE_ENV, cmd: ['/bin/sh', '-c', 'env > /root/app-env; exec sleep 100000'], workingDir: '/root', exposedPorts: [8080] },
    });
    await layout.importImage({
      ref: 'test/notebook:1',
      layers: [layer(work, 'nb', { 'usr/bin/python3': '', 'usr/lib/python3/dist-packages/notebook-6.4.12.egg-info/PKG-INFO': '' })],
      annotations: { 'org.opencontainers.image.title': 'Notebook 测试' },
    });
    rmSync(work, { recursive: true, force: true });
    d = new LocalComputeDriver({
      db: database.db,
      clock: new ManualClock(new Date('2026-11-29T08:00:00Z')),
      dir,
      sshHost: '127.0.0.1',
      sshPort: () => 2222,
      gpus: cards.host,
    });
  });
  afterAll(async () => {
    delete process.env.IMAGE_ENV_TEST_SECRET;
    await d?.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(cards.root, { recursive: true, force: true });
  });

  /** What a command run as the web terminal and SSH run theirs prints. */
  const shellSays = (id: string, command: string[]) => {
    const line = d.shell(id, command)!;
    return spawnSync(line.file, line.args, { env: line.env, encoding: 'utf8' }).stdout;
  };
  const appEnvOf = async (id: string) => {
    for (;;) {
      const got = await runIn(d.sandbox(id)!, ['/bin/sh', '-c', 'cat /root/app-env 2>/dev/null']);
      if (got.stdout.includes('PATH=')) return got.stdout;
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  it(
    'every shell, exec and the application get the image’s Env and never the console’s; its missing notebook names the image that has one, its missing sftp-server is said',
    { timeout: 180_000 },
    async () => {
      await d.create('p-1', plain, machineSpec({ imageRef: 'test/env:1' }));
      await d.settled();
      expect((await d.status(plain))?.power).toBe('running');

      const vars = 'echo "$LANG|$TZ|$PATH|$LD_LIBRARY_PATH"';
      const expected = `zh_CN.UTF-8|Asia/Shanghai|${IMAGE_PATH}|/opt/tiny/lib\n`;
      // SSH exec and the terminal's command; a login shell, whose /etc/profile set PATH anew.
      expect(shellSays(plain, ['/bin/bash', '-c', vars])).toBe(expected);
      expect(shellSays(plain, ['/bin/bash', '--login', '-c', vars])).toBe(expected);
      // What the notebook and the application are started with (execIn).
      expect((await runIn(d.sandbox(plain)!, ['/bin/sh', '-c', vars])).stdout).toBe(expected);
      const app = await appEnvOf(plain);
      expect(app).toContain('LANG=zh_CN.UTF-8\n');
      expect(app).toContain('LD_LIBRARY_PATH=/opt/tiny/lib\n');
      // Nothing of the console's: not in a shell, not in the application, not in any process's environment.
      expect(shellSays(plain, ['/bin/sh', '-c', 'env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"'])).not.toContain(canary);
      expect(app).not.toContain(canary);

      await d.lookAtServiceImages();
      expect(d.serviceMissing(plain, 'jupyter')).toContain('本主机带 Notebook 的镜像：Notebook 测试（test/notebook:1），请用其创建实例');
      // Nor has it sftp-server, which the SSH gateway runs for sftp and scp.
      expect(d.serviceMissing(plain, 'sftp')).toContain('该实例的镜像没有 sftp-server');
    },
  );

  it('with a card: the driver’s libraries and nvidia-smi after the image’s own folders, in shells and the application', { timeout: 120_000 }, async () => {
    await d.create('g-1', withCard, machineSpec({ imageRef: 'test/env:1', gpuCount: 1 }));
    await d.settled();
    expect((await d.status(withCard))?.power).toBe('running');
    expect(shellSays(withCard, ['/bin/bash', '-c', 'echo "$LD_LIBRARY_PATH|$PATH"'])).toBe(`/opt/tiny/lib:/run/nvidia/lib|${IMAGE_PATH}:/run/nvidia/bin\n`);
    expect(await appEnvOf(withCard)).toContain('LD_LIBRARY_PATH=/opt/tiny/lib:/run/nvidia/lib\n');
  });
});
