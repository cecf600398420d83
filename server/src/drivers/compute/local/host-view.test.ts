/**
 * What a local machine learns of its host from inside (issue 28 §1 "host facts"), on real sandboxes
 * of the local driver as root: its control groups, its mounts and its PID 1's command line name no
 * host path, and free, nproc, /proc/meminfo, /proc/cpuinfo and /proc/uptime say the plan's memory
 * and cores and the machine's own uptime (lxcfs; a cpuset for the CPUs it may run on).
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lacks } from '../../../../test/host-packages.js';
import { ManualClock } from '../../../clock.js';
import type { Database } from '../../../db/client.js';
import { openTestDatabase } from '../../../../test/harness.js';
import { machineSpec } from '../../../../test/machine-spec.js';
import { cpusFor, parseCpuList } from './cgroups.js';
import { LocalComputeDriver } from './driver.js';
import { startHostView } from './host-view.js';
import { runIn } from './sandbox.js';

describe('the CPUs a machine is held to', () => {
  it('are as many as its cores, at least one, at most the host’s, spread by name', () => {
    expect(parseCpuList('0-3,8,10-11\n')).toEqual([0, 1, 2, 3, 8, 10, 11]);
    const host = parseCpuList('0-7');
    expect(cpusFor(host, 2, 'a')).toHaveLength(2);
    expect(cpusFor(host, 0.5, 'a')).toHaveLength(1);
    expect(cpusFor(host, 64, 'a')).toEqual(host);
    expect(cpusFor(host, 2, 'a')).toEqual(cpusFor(host, 2, 'a'));
    const starts = new Set(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((n) => cpusFor(host, 1, n)[0]));
    expect(starts.size).toBeGreaterThan(1);
  });
});

const spec = machineSpec({ cpu: 1, memoryGb: 1, systemDiskGb: 1 });

// As root only; there, without a package it needs it is skipped only outside CI (host-packages).
describe.skipIf(process.getuid?.() !== 0 || lacks('bubblewrap', 'e2fsprogs', 'lxcfs'))('a local machine’s view of its host (as root)', () => {
  let database: Database;
  let drop: () => Promise<void>;
  // A DATA_DIR of its own (the driver shuts everything beside its folder to the machines' uids), walkable by them.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-local-view-'));
  chmodSync(dataDir, 0o711);
  const dir = path.join(dataDir, 'local-compute');
  const clock = new ManualClock(new Date('2026-11-28T08:00:00Z'));
  let d: LocalComputeDriver;
  let inside: (script: string) => Promise<{ code: number | null; stdout: string }>;
  beforeAll(async () => {
    ({ database, drop } = await openTestDatabase());
    d = new LocalComputeDriver({ db: database.db, clock, dir, sshHost: '127.0.0.1', sshPort: () => 2222 });
    const id = randomUUID();
    await d.create(`c-${id}`, id, spec);
    await d.settled();
    const sandbox = d.sandbox(id);
    expect(sandbox, 'the machine runs').not.toBeNull();
    inside = (script) => runIn(sandbox!, ['/bin/sh', '-c', script]);
  });
  afterAll(async () => {
    await d?.shutdown();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows no host path in its control groups, its mounts, nor its PID 1’s command line', async () => {
    const cgroups = (await inside('cat /proc/self/cgroup; cat /proc/1/cgroup')).stdout.trim().split('\n');
    expect(cgroups.length).toBeGreaterThan(1);
    for (const line of cgroups) expect(line).toMatch(/:\/$/);
    const seen = (await inside('cat /proc/self/mountinfo /proc/1/mountinfo; tr "\\0" " " < /proc/1/cmdline; ps -eo args')).stdout;
    expect(seen).toContain('/root/autodl-tmp'); // it did read them
    for (const hostPath of [dataDir, 'local-compute', '--bind']) expect(seen).not.toContain(hostPath);
  });

  it('says the plan’s memory and cores and its own uptime: free, nproc, /proc/meminfo, /proc/cpuinfo, df /tmp, /proc/uptime', async () => {
    const facts = (
      await inside(
        "free -m | awk '/^Mem:/ { print $2 }'; nproc; grep -c ^processor /proc/cpuinfo; awk '/^MemTotal:/ { print $2 }' /proc/meminfo; df -m --output=size /tmp | tail -1; cut -d\" \" -f1 /proc/uptime",
      )
    ).stdout
      .trim()
      .split('\n');
    expect(facts.slice(0, 5).map(Number)).toEqual([1024, Math.min(1, availableParallelism()), 1, 1024 * 1024, 1024]);
    // Up for as long as the machine: less than the host, which was up before this test began.
    const hostUptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    expect(Number(facts[5])).toBeLessThan(hostUptime);
  });

  it('gets its lxcfs back after the server was killed (the mount it left answers nothing)', async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'console-local-lxcfs-'));
    try {
      const first = await startHostView(scratch);
      expect(first.mount).not.toBeNull();
      const pid = Number(readFileSync(path.join(scratch, 'lxcfs.pid'), 'utf8'));
      process.kill(pid, 'SIGKILL');
      while (existsSync(`/proc/${pid}`)) await new Promise((r) => setTimeout(r, 50));
      expect(() => readFileSync(path.join(first.mount!, 'proc', 'meminfo'))).toThrow(); // the mount it left answers nothing
      const second = await startHostView(scratch);
      expect(second.mount).toBe(first.mount);
      expect(readFileSync(path.join(second.mount!, 'proc', 'meminfo'), 'utf8')).toMatch(/^MemTotal:/);
      await second.stop();
      await first.stop();
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(scratch);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
