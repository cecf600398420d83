/**
 * 镜像应用 on the local driver (issue 30 §3): an application image — the tiny test image plus the
 * host's python3 and the modules its HTTP server needs, whose Cmd waits two seconds and then serves
 * a page on its exposed port — really runs in its machine. Until the port answers, a connection to
 * it is closed (the proxy's 启动中 page); then the page comes, made with the image's Env in its
 * WorkingDir. Killed inside, it is started again; its output is in /var/log/app.log; stopping the
 * machine stops it, starting it runs it again. An application that keeps exiting says so, with its log.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks } from '../../../../test/host-packages.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { buildTinyImage } from '../../../../test/tiny-image.js';
import type { MachineApp, MachineAppState } from '../types.js';
import { APP_LOG, APP_LOG_BYTES } from './app-service.js';
import { LocalComputeDriver } from './driver.js';
import { OciLayout } from './oci/layout.js';
import { runIn } from './sandbox.js';

const PORT = 8080;
const PYTHON = '/usr/bin/python3';

/**
 * A layer with the host's python3, its libraries and only the modules `python3 -m http.server`
 * loads (asked of the host's python3 itself; argparse and contextlib are its `__main__`'s): a real
 * server in a layer of a few MB.
 */
function pythonLayer(work: string): string {
  const root = path.join(work, 'python');
  const copy = (from: string) => {
    const to = path.join(root, from.startsWith('/usr/') ? from : path.join('/usr', from));
    if (existsSync(to)) return;
    mkdirSync(path.dirname(to), { recursive: true });
    copyFileSync(realpathSync(from), to);
  };
  copy(PYTHON);
  chmodSync(path.join(root, PYTHON), 0o755);
  for (const line of execFileSync('ldd', [realpathSync(PYTHON)], { encoding: 'utf8' }).split('\n')) {
    const lib = /=>\s*(\/\S+)/.exec(line)?.[1];
    if (lib) copy(lib);
  }
  const modules = execFileSync(
    PYTHON,
    [
      '-c',
      'import runpy, argparse, contextlib, http.server, encodings.idna, sys; print("\\n".join(m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)))',
    ],
    { encoding: 'utf8' },
  );
  for (const file of modules.split('\n').filter(Boolean)) copy(file);
  const tar = path.join(work, 'python.tar');
  execFileSync('tar', ['-c', '-f', tar, '-C', root, '--numeric-owner', '--owner=0', '--group=0', '.']);
  return tar;
}

/** What the relay's socket answers to GET `path`: the status and page, or `closed` when the port does not answer. */
function ask(app: MachineApp, pathname = '/'): Promise<{ status: number; text: string } | 'closed'> {
  const socket = app.socket();
  if (!socket) return Promise.resolve('closed');
  return new Promise((resolve) => {
    const req = http.get({ socketPath: socket.path, path: pathname, headers: { host: 'app' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', () => resolve('closed'));
  });
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: T = await probe();
  while (!ok(last)) {
    if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
    last = await probe();
  }
  return last;
}

describe.skipIf(lacks('bubblewrap', 'python3'))('image applications on local machines', () => {
  let database: Database;
  let drop: () => Promise<void>;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-local-apps-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  mkdirSync(dir);
  const drivers: LocalComputeDriver[] = [];
  const driver = () => {
    const d = new LocalComputeDriver({
      db: database.db,
      clock: new ManualClock(new Date('2026-11-29T08:00:00Z')),
      dir,
      sshHost: '127.0.0.1',
      sshPort: () => 2222,
    });
    drivers.push(d);
    return d;
  };
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
    const layout = await OciLayout.open(path.join(dir, 'oci'));
    await buildTinyImage(layout, 'test/tiny:1');
    const python = pythonLayer(dataDir);
    const config = { env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'APP_GREETING=你好，镜像应用'], workingDir: '/srv', exposedPorts: [PORT] };
    await layout.importImage({
      ref: 'test/app:1',
      base: 'test/tiny:1',
      layers: [python],
      config: {
        ...config,
        cmd: ['/bin/sh', '-c', `echo "<h1>$APP_GREETING</h1>" > index.html; echo 应用准备中; sleep 2; exec python3 -m http.server ${PORT} --bind 127.0.0.1`],
      },
    });
    await layout.importImage({
      ref: 'test/chatty-app:1',
      base: 'test/tiny:1',
      layers: [],
      config: { ...config, cmd: ['/bin/sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo; echo 写完了; exec sleep 1000'] },
    });
    await layout.importImage({
      ref: 'test/broken-app:1',
      base: 'test/tiny:1',
      layers: [],
      config: { ...config, cmd: ['/bin/sh', '-c', 'echo 找不到模型文件 /root/models/v1.ckpt >&2; exit 3'] },
    });
  }, 120_000);
  afterAll(async () => {
    for (const d of drivers) await d.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the image command at every start: 启动中 until its port answers, started again when killed, stopped with the machine', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create(`${id}-1`, id, machineSpec({ imageRef: 'test/app:1', appPort: null }));
    await d.settled();
    const app = d.app(id)!;
    expect(app).not.toBeNull();

    // It sleeps two seconds before it listens: the connection is closed, and the state says it is starting.
    expect(await ask(app)).toBe('closed');
    expect(await app.state()).toMatchObject({ port: PORT, exits: 0, running: true });
    const page = await until(
      'the app answers',
      () => ask(app),
      (r) => r !== 'closed',
    );
    expect(page).toEqual({ status: 200, text: '<h1>你好，镜像应用</h1>\n' });

    // Killed inside: it is started again (after its backoff and its two seconds) and answers again.
    const killed = await runIn(d.sandbox(id)!, [
      '/bin/sh',
      '-c',
      // The server only (its command line starts so): not the shell that started it, nor this one.
      `for p in /proc/[0-9]*; do case "$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)" in "python3 -m http.server"*) kill \${p#/proc/};; esac; done`,
    ]);
    expect(killed.code).toBe(0);
    await until(
      'it noticed the exit',
      () => app.state(),
      (s) => (s?.exits ?? 0) >= 1,
    );
    expect(
      await until(
        'the app answers again',
        () => ask(app),
        (r) => r !== 'closed',
      ),
    ).toMatchObject({ status: 200 });
    const log = await runIn(d.sandbox(id)!, ['cat', APP_LOG]);
    expect(log.stdout.match(/==== 启动镜像应用/g), log.stdout).toHaveLength(2);
    expect(log.stdout).toContain('应用准备中');
    expect(log.stdout).toMatch(/==== 镜像应用已退出（退出码 \d+）/);
    expect((await app.state())!.logTail).toContain('应用准备中');

    // Stopped with the machine: no app, its relay's socket gone; started again with the next start.
    const socket = app.socket()!.path;
    await d.stop(`${id}-2`, id);
    await d.settled();
    expect(d.app(id)).toBeNull();
    expect(existsSync(socket)).toBe(false);
    await d.start(`${id}-3`, id, { gpu: false });
    await d.settled();
    const again = d.app(id)!;
    expect(
      await until(
        'the app answers after a new start',
        () => ask(again),
        (r) => r !== 'closed',
      ),
    ).toMatchObject({ status: 200 });
  }, 90_000);

  it('says when the application keeps exiting, with the end of its log', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create(`${id}-1`, id, machineSpec({ imageRef: 'test/broken-app:1', appPort: PORT }));
    await d.settled();
    const app = d.app(id)!;
    // Backoff 1 s, 2 s: the third exit comes about three seconds in.
    const state: MachineAppState | null = await until(
      'three exits',
      () => app.state(),
      (s) => (s?.exits ?? 0) >= 3,
      20_000,
    );
    expect(state!.logTail).toContain('找不到模型文件 /root/models/v1.ckpt');
    expect(state!.logTail).toContain('镜像应用已退出（退出码 3）');
    expect(await ask(app)).toBe('closed');
  }, 60_000);

  it('keeps its log bounded: past 1 MB it becomes app.log.1 and starts again', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create(`${id}-1`, id, machineSpec({ imageRef: 'test/chatty-app:1', appPort: PORT }));
    await d.settled();
    const sizes = () => runIn(d.sandbox(id)!, ['/bin/sh', '-c', `stat -c %s ${APP_LOG} ${APP_LOG}.1`]);
    // Checked each second: the 3 MB it wrote at once went to app.log.1, and the log is small again.
    const [log, older] = (await until('the log rotated', sizes, (r) => r.code === 0)).stdout.split('\n').map(Number);
    expect(log).toBeLessThan(APP_LOG_BYTES);
    expect(older).toBeGreaterThan(3_000_000);
    expect((await d.app(id)!.state())!.logTail).toContain('写完了');
  }, 60_000);

  it('runs nothing in a machine whose image serves no port (a system image)', async () => {
    const d = driver();
    const id = randomUUID();
    await d.create(`${id}-1`, id, machineSpec({ imageRef: 'test/tiny:1' }));
    await d.settled();
    expect(await d.status(id)).toMatchObject({ power: 'running' });
    expect(d.app(id)).toBeNull();
  }, 60_000);
});
