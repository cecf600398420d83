/**
 * A server process as a launcher may start it: holding descriptors it inherited without
 * close-on-exec (the test gives it one at 77). It starts a sandbox with every process a machine
 * has — its init, the 自定义服务 relay, a desktop, the notebook where the host has one, a shell as
 * the terminal and SSH start it — and a 文件存储 helper sandbox, and prints, as one JSON line, what
 * every process in them holds open: `/proc/<pid>/fd/<n> <target>` lines.
 *
 *   node --import tsx test/sandbox-fds-process.ts <host dir>   (drivers/compute/local/root-attacks.test.ts)
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { ManualClock } from '../src/clock.js';
import { openDatabase } from '../src/db/client.js';
import { LocalComputeDriver } from '../src/drivers/compute/local/driver.js';
import { runIn, throwaway } from '../src/drivers/compute/local/sandbox.js';
import { machineSpec } from './machine-spec.js';

const LIST = 'for f in /proc/[0-9]*/fd/*; do printf "%s %s\\n" "$f" "$(readlink "$f")"; done';

function collect(line: { file: string; args: string[]; env: Record<string, string> }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(line.file, line.args, { env: line.env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('close', () => resolve(out));
  });
}

async function until(ready: () => boolean): Promise<boolean> {
  for (let i = 0; i < 600 && !ready(); i++) await new Promise((r) => setTimeout(r, 100));
  return ready();
}

const host = process.argv[2]!;
const database = await openDatabase({});
const driver = new LocalComputeDriver({
  db: database.db,
  clock: new ManualClock(new Date('2026-11-28T08:00:00Z')),
  dir: path.join(host, 'local-compute'),
  sshHost: '127.0.0.1',
  sshPort: () => 2222,
  hostUidsDir: path.join(host, 'host-uids'),
});
const id = randomUUID();
await driver.create('fds-1', id, machineSpec({ desktop: true }));
await driver.settled();
const sandbox = driver.sandbox(id)!;
// Every service listening before the look: its processes are all there.
const listening = (service: (typeof driver.services)[number]) => {
  const socket = driver.socketOf(id, service);
  socket?.close();
  return socket !== null;
};
const started = await until(() => driver.services.every(listening));
const tree = path.join(host, 'tree');
mkdirSync(tree);
const result = {
  self77: readlinkSync('/proc/self/fd/77'),
  services: driver.services,
  started,
  machine: (await runIn(sandbox, ['/bin/sh', '-c', LIST])).stdout,
  shell: await collect(driver.shell(id, ['/bin/sh', '-c', LIST])!),
  helper: await collect(throwaway({ rw: { '/t': tree } }, ['/bin/sh', '-c', LIST], null)),
};
await driver.shutdown();
await database.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
