/**
 * The machine's root is an attacker (issue 28 §1): nothing it does may crash, slow or leak from the
 * console. It writes a gigabyte into every descriptor it can take; it reads every process's
 * environment and every file it can reach for the console's secrets; it looks for descriptors the
 * console inherited. Two consoles on one host never share a machine uid, and a console that is root
 * never runs machines as the host's root without being told to.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, closeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { lacks } from '../../../../test/host-packages.js';
import { FileStore } from '../../../modules/filestore/store.js';
import { LocalComputeDriver } from './driver.js';
import { DATA_MOUNT, execIn, runIn, throwaway } from './sandbox.js';

const isRoot = process.getuid?.() === 0;
const SERVER_DIR = fileURLToPath(new URL('../../../../', import.meta.url));
const FDS_SCRIPT = fileURLToPath(new URL('../../../../test/sandbox-fds-process.ts', import.meta.url));

const spec = machineSpec;

/**
 * As the machine's root: takes every pipe and socket any process inside holds (pidfd_getfd, as
 * the same uid may; each one once) and writes up to 1 GiB into each, 1 MiB at a time, giving up on one that
 * stays full for 2 s or takes 15 s (the machine's own processes' sockets drain slowly; 60 s in all), the
 * console's first; then writes what it reached (`pid:fd:target:bytes`) to the data disk.
 */
const FLOOD = String.raw`
import ctypes, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
PIDFD_OPEN, PIDFD_GETFD = 434, 438
chunk = b'\0' * (1 << 20)
me = os.getpid()
targets = []
for pid in sorted(int(p) for p in os.listdir('/proc') if p.isdigit()):
    try:
        fds = os.listdir('/proc/%d/fd' % pid)
    except OSError:
        continue
    for fd in sorted(int(f) for f in fds):
        try:
            link = os.readlink('/proc/%d/fd/%d' % (pid, fd))
        except OSError:
            continue
        if link.startswith(('pipe:', 'socket:')) and link not in [t[2] for t in targets]:
            targets.append((pid, fd, link))
# The console's own first: the sandbox's init (bwrap's and its child), then this command's output.
targets.sort(key=lambda t: (0 if t[0] <= 2 else 1 if t[0] == me else 2, t[0], t[1]))
reached = []
end = time.monotonic() + 60
for pid, fd, link in targets:
    if time.monotonic() > end:
        break
    if pid == me:
        got = os.dup(fd)
    else:
        pidfd = libc.syscall(PIDFD_OPEN, pid, 0)
        if pidfd < 0:
            continue
        got = libc.syscall(PIDFD_GETFD, pidfd, fd, 0)
        os.close(pidfd)
        if got < 0:
            continue
    os.set_blocking(got, False)
    written = 0
    stop = min(end, time.monotonic() + 15)
    while written < (1 << 30) and time.monotonic() < stop:
        if not select.select([], [got], [], 2)[1]:
            break
        try:
            written += os.write(got, chunk)
        except BlockingIOError:
            continue
        except OSError:
            break
    os.set_blocking(got, True)
    os.close(got)
    reached.append('%d:%d:%s:%d' % (pid, fd, link, written))
with open('${DATA_MOUNT}/reached', 'w') as f:
    f.write('\n'.join(reached))
`;

describe.skipIf(lacks('bubblewrap', 'python3', 'util-linux'))('a machine whose root attacks the console', () => {
  let database: Database;
  let d: LocalComputeDriver;
  let dir: string;
  const canary = `canary-${randomUUID()}`;
  const id = randomUUID();
  /** A machine with nothing but the console's own processes in it (no desktop): the flood's. */
  const plain = randomUUID();
  const account = randomUUID();
  beforeAll(async () => {
    // A secret of the console's, as SESSION_SECRET or DATABASE_URL would be.
    process.env.CONTAINMENT_TEST_SECRET = canary;
    dir = mkdtempSync(path.join(tmpdir(), 'console-containment-'));
    chmodSync(dir, 0o711); // DATA_DIR as the machines' uids need it
    ({ database } = await openTestDatabase());
    d = new LocalComputeDriver({
      db: database.db,
      clock: new ManualClock(new Date('2026-11-28T08:00:00Z')),
      dir: path.join(dir, 'local-compute'),
      sshHost: '127.0.0.1',
      sshPort: () => 2222,
      fileStoreRoot: path.join(dir, 'filestore'),
      hostUidsDir: path.join(dir, 'host-uids'),
    });
    await d.create('c-1', id, spec({ fileStoreId: account, desktop: true }));
    await d.create('c-2', plain, spec());
    await d.settled();
    expect((await d.events(0, 100)).map((e) => `${e.kind}:${e.ok ? 'ok' : e.error}`)).toEqual(['create:ok', 'create:ok', 'boot:ok', 'boot:ok']);
  });
  afterAll(async () => {
    delete process.env.CONTAINMENT_TEST_SECRET;
    await d?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finds none of the console's environment in any process or file inside, nor in a 文件存储 helper's", async () => {
    // Every process a machine has is running: its init, the relay, the desktop where the host has one.
    for (const service of d.services.filter((s) => s !== 'jupyter')) {
      await vi.waitFor(() => expect(d.socketOf(id, service), service).not.toBeNull(), { timeout: 60_000, interval: 200 });
    }
    const look = await runIn(d.sandbox(id)!, [
      '/bin/sh',
      '-c',
      `ls -d /proc/[0-9]* | wc -l; grep -l -s -a "${canary}" /proc/[0-9]*/environ; ` +
        `grep -r -l -s -a "${canary}" /etc /root /home /opt /var /srv /tmp /run /dev/shm; echo end`,
    ]);
    const lines = look.stdout.trim().split('\n');
    expect(Number(lines[0])).toBeGreaterThanOrEqual(3);
    expect(lines.slice(1)).toEqual(['end']);

    // The 文件存储 helper sandbox: its first process, read through a link of the account's tree (the
    // file browser's download), and as its own command sees it.
    const store = new FileStore({ root: path.join(dir, 'filestore'), quotaBytes: 1024 ** 3, hostUidOf: (payer) => d.hostUidOf(payer) });
    symlinkSync('/proc/1/environ', path.join(store.treeOf(account), 'environ'));
    const download = await store
      .read(account, '/environ')
      .then(async (body) => {
        let text = '';
        for await (const c of body) text += String(c);
        return text;
      })
      .catch((e: Error) => `refused: ${e.message}`);
    expect(download).not.toContain(canary);
    const helper = throwaway({}, ['/bin/sh', '-c', 'cat /proc/1/environ /proc/self/environ'], null);
    // Spawned as a caller that forgets the environment would: it is not the server's anyway.
    const child = spawn(helper.file, helper.args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let seen = '';
    child.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    await new Promise((r) => child.once('close', r));
    expect(seen).toContain('PATH=');
    expect(seen).not.toContain(canary);
  });

  it('writing 1 GiB into every descriptor it can take neither grows the console nor stops it answering', async () => {
    // The desktop machine stopped: the flood's machine has the two cores.
    await d.stop('c-3', id);
    await d.settled();
    let server: Server | undefined;
    const health = createServer((_, res) => res.end('ok'));
    server = health;
    await new Promise<void>((r) => health.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(health.address() as AddressInfo).port}/healthz`;
    // One answer first: what the first request loads (fetch's client) is not the flood's.
    expect(await (await fetch(url)).text()).toBe('ok');
    const before = process.memoryUsage().rss;
    let peak = before;
    let answered = 0;
    const failures: string[] = [];
    let flooding = true;
    const watch = (async () => {
      while (flooding) {
        peak = Math.max(peak, process.memoryUsage().rss);
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
          if ((await res.text()) === 'ok') answered++;
          else failures.push(String(res.status));
        } catch (e) {
          failures.push(String(e));
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // Started as the console starts a machine's services (its own output nowhere): what it reaches
    // of the console is what the console holds open in the machine.
    const attacker = execIn(d.sandbox(plain)!, ['python3', '-c', FLOOD], { stdio: 'ignore' });
    const code = await new Promise((r) => attacker.once('close', r)).finally(() => (flooding = false));
    await watch;
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;

    expect(code).toBe(0);
    const report = (await runIn(d.sandbox(plain)!, ['cat', `${DATA_MOUNT}/reached`])).stdout;
    const reached = report
      .trim()
      .split('\n')
      .map((l) => /^(\d+):(\d+):(.*):(\d+)$/.exec(l))
      .filter((m) => m !== null)
      .map(([, pid, fd, , bytes]) => ({ pid: Number(pid), fd: Number(fd), bytes: Number(bytes) }));
    // It really took the output and error output of the sandbox's init (bwrap's PID 1 and its child
    // share them: the way in of the issue); the console reads neither any more, nothing went through.
    const init = reached.filter((r) => r.pid <= 2 && (r.fd === 1 || r.fd === 2));
    expect(init.map((r) => r.fd).sort(), report).toEqual([1, 2]);
    expect(init.map((r) => r.bytes)).toEqual([0, 0]);
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(0);
    expect(peak - before).toBeLessThan(50 * 1024 ** 2);
    // The machine runs on, and so does everything else.
    expect(await runIn(d.sandbox(plain)!, ['echo', 'still here'])).toMatchObject({ code: 0, stdout: 'still here\n' });
  }, 180_000);
});

describe.skipIf(lacks('bubblewrap', 'util-linux'))('descriptors the console inherited', () => {
  it('are open in no process of a machine (init, services, desktop, shells) nor of a 文件存储 helper', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'console-fds-'));
    chmodSync(dir, 0o711);
    try {
      const secret = path.join(dir, 'root-only.txt');
      writeFileSync(secret, 'secret', { mode: 0o600 });
      const fd = openSync(secret, 'r');
      // A launcher's descriptor without close-on-exec: Node places it at 77 in the child as it is.
      const stdio = ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(74).fill('ignore'), fd] as const;
      const child = spawn(process.execPath, ['--import', 'tsx', FDS_SCRIPT, dir], { cwd: SERVER_DIR, stdio: [...stdio] });
      closeSync(fd);
      let out = '';
      let err = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise((r) => child.once('close', r));
      expect(code, err).toBe(0);
      const seen = JSON.parse(out) as { self77: string; services: string[]; started: boolean; machine: string; shell: string; helper: string };
      expect(seen.self77).toBe(secret); // the server process holds it
      expect(seen.started, err).toBe(true);
      for (const where of ['machine', 'shell', 'helper'] as const) {
        const fds = seen[where].trim().split('\n');
        expect(fds.length, where).toBeGreaterThan(3);
        expect(
          fds.filter((l) => l.includes(secret) || /\/fd\/77 /.test(l)),
          where,
        ).toEqual([]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.skipIf(lacks('bubblewrap', 'util-linux'))('host uids', () => {
  let databases: Database[] = [];
  const dirs: string[] = [];
  const drivers: LocalComputeDriver[] = [];
  afterAll(async () => {
    for (const d of drivers) await d.shutdown();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    databases = [];
  });
  const startConsole = async (registry: string, dir?: string, database?: Database, extra: { machinesAsServerUser?: boolean } = {}) => {
    const at = dir ?? mkdtempSync(path.join(tmpdir(), 'console-uids-'));
    if (!dir) {
      dirs.push(at);
      chmodSync(at, 0o711);
    }
    const db = database ?? (await openTestDatabase()).database;
    databases.push(db);
    const d = new LocalComputeDriver({
      db: db.db,
      clock: new ManualClock(new Date('2026-11-28T08:00:00Z')),
      dir: path.join(at, 'local-compute'),
      sshHost: '127.0.0.1',
      sshPort: () => 2222,
      hostUidsDir: registry,
      ...extra,
    });
    drivers.push(d);
    return { d, dir: at, database: db };
  };

  it('differ between two consoles on one host (their own DATA_DIRs and databases), and stay with each across a restart', async () => {
    const registry = mkdtempSync(path.join(tmpdir(), 'console-host-uids-'));
    dirs.push(registry);
    const a = await startConsole(registry);
    const b = await startConsole(registry);
    if (!isRoot) {
      // Not root: machines run as the server's own uid, there is nothing to hand out.
      expect(a.d.hostUidMode.ok).toBe(false);
      expect(a.d.machineRefusal).toBeNull();
      return;
    }
    expect(a.d.hostUidMode.ok && b.d.hostUidMode.ok).toBe(true);
    const [firstA, firstB] = [await a.d.hostUidOf('account-1'), await b.d.hostUidOf('account-1')];
    expect(firstA).not.toBe(firstB);
    expect(await a.d.hostUidOf('account-2')).not.toBe(await b.d.hostUidOf('account-2'));
    // The first console alone on the host before: its uids are those it always had.
    expect(firstA).toBe(1_900_000_001);
    const again = await startConsole(registry, a.dir, a.database);
    expect(await again.d.hostUidOf('account-1')).toBe(firstA);
    // Their machines run as those uids.
    const [ma, mb] = [randomUUID(), randomUUID()];
    await a.d.create('u-1', ma, spec({ fileStoreId: 'account-1' }));
    await b.d.create('u-2', mb, spec({ fileStoreId: 'account-1' }));
    await Promise.all([a.d.settled(), b.d.settled()]);
    const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
    expect(uidOf(a.d.sandbox(ma)!.initPid)).toBe(firstA);
    expect(uidOf(b.d.sandbox(mb)!.initPid)).toBe(firstB);
  });

  it('as root, refuses to start machines as the host root where DATA_DIR is shut to their uids, unless the operator says so', async () => {
    if (!isRoot) return;
    const registry = mkdtempSync(path.join(tmpdir(), 'console-host-uids-'));
    dirs.push(registry);
    // DATA_DIR walkable, a folder above it not: a machine's uid could not reach its disks.
    const shut = mkdtempSync(path.join(tmpdir(), 'console-shut-'));
    dirs.push(shut);
    chmodSync(shut, 0o700);
    const dataDir = path.join(shut, 'data');
    mkdirSync(dataDir, { mode: 0o711 });
    const refusing = await startConsole(registry, dataDir);
    expect(refusing.d.hostUidMode).toMatchObject({ ok: false, why: expect.stringContaining(shut) });
    const id = randomUUID();
    await refusing.d.create('r-1', id, spec());
    await refusing.d.settled();
    const [event] = (await refusing.d.events(0, 100)).filter((e) => e.instanceId === id);
    expect(event).toMatchObject({ kind: 'create', ok: false });
    expect(event!.error).toContain('chmod o+x');
    expect(event!.error).toContain('LOCAL_MACHINES_AS_SERVER_USER=true');
    expect(refusing.d.sandbox(id)).toBeNull();

    // Told to: the machine runs, as the server's own uid.
    const allowed = await startConsole(registry, dataDir, undefined, { machinesAsServerUser: true });
    expect(allowed.d.machineRefusal).toBeNull();
    const ok = randomUUID();
    await allowed.d.create('r-2', ok, spec());
    await allowed.d.settled();
    expect(await allowed.d.status(ok)).toMatchObject({ power: 'running' });
    expect(Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${allowed.d.sandbox(ok)!.initPid}/status`, 'utf8'))![1])).toBe(0);
  });
});
