/**
 * A local machine's figures on a real sandbox: a busy loop inside shows as CPU, memory it holds as
 * memory, its data disk at its size; a stopped machine is not sampled. Limits (and so the group the
 * figures come from) exist as root, this project's CI; elsewhere CPU and memory are not known.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { lacks } from '../../../../test/host-packages.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { LocalComputeDriver } from './driver.js';
import { runIn } from './sandbox.js';

const GB = 1024 ** 3;
const MB = 1024 ** 2;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(lacks('bubblewrap', 'python3', 'e2fsprogs'))('what a local machine is doing (sampler.ts)', () => {
  let database: Database;
  let drop: () => Promise<void>;
  let d: LocalComputeDriver;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-sampler-'));
  chmodSync(dataDir, 0o711);
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
    d = new LocalComputeDriver({
      db: database.db,
      clock: new ManualClock(),
      dir: path.join(dataDir, 'local-compute'),
      sshHost: '127.0.0.1',
      sshPort: () => 2222,
    });
  });
  afterAll(async () => {
    await d.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows a busy loop as CPU, held memory as memory, its data disk at its size, and nothing once it stops', async () => {
    const id = randomUUID();
    await d.create('s-1', id, machineSpec({ cpu: 1, memoryGb: 2, dataDiskGb: 1 }));
    await d.settled();
    const sample = async () => (await d.sample([id])).get(id)!;

    // The first sample has no rates yet (they are differences between two).
    const first = await sample();
    expect(first).toMatchObject({ cpuPercent: null, netRxBytesPerSec: null, netTxBytesPerSec: null, gpus: [], gpuUnavailable: null, simulated: false });
    expect(first.dataDiskSizeBytes).toBeGreaterThan(0.8 * GB);
    expect(first.dataDiskSizeBytes).toBeLessThanOrEqual(GB);
    expect(first.dataDiskUsedBytes).toBeLessThan(first.dataDiskSizeBytes!);
    expect(first.systemDiskUsedBytes).toBeGreaterThan(0);

    // Once what the machine starts with (its notebook) has settled…
    let settled = first;
    for (let i = 0; i < 40 && !(settled.cpuPercent !== null && settled.cpuPercent < 5); i++) {
      await pause(1000);
      settled = await sample();
    }
    // …a busy loop inside, on a one-core machine: its core while it runs (what the host's other work leaves it: a share at least).
    await runIn(d.sandbox(id)!, ['/bin/sh', '-c', `python3 -c "import time\nt = time.time()\nwhile time.time() - t < 4: pass" >/dev/null 2>&1 &`]);
    await pause(300);
    await sample();
    await pause(1500);
    const afterBusy = await sample();
    expect(typeof afterBusy.netRxBytesPerSec).toBe('number');
    if (!d.cgroups.version) {
      expect(afterBusy.cpuPercent).toBeNull();
      expect(afterBusy.memoryUsedBytes).toBeNull();
      return;
    }
    expect(afterBusy.cpuPercent).toBeGreaterThan(10);
    expect(afterBusy.cpuPercent).toBeGreaterThan(3 * (settled.cpuPercent ?? 0));
    expect(afterBusy.memoryLimitBytes).toBe(2 * GB);

    // Quiet again: little CPU; 300 MB held by a process inside: that much more memory.
    await pause(3000);
    await sample();
    await pause(1000);
    const quiet = await sample();
    expect(quiet.cpuPercent).toBeLessThan(afterBusy.cpuPercent! / 3);
    await runIn(d.sandbox(id)!, ['/bin/sh', '-c', `python3 -c "b = b'x' * (300 * 2**20); import time; time.sleep(6)" >/dev/null 2>&1 &`]);
    await pause(2000);
    const holding = await sample();
    expect(holding.memoryUsedBytes! - quiet.memoryUsedBytes!).toBeGreaterThan(250 * MB);
    expect(holding.memoryUsedBytes!).toBeLessThan(2 * GB);

    await d.stop('s-2', id);
    await d.settled();
    expect((await d.sample([id])).has(id)).toBe(false);
    await d.destroy('s-3', id);
    await d.settled();
  });
});
