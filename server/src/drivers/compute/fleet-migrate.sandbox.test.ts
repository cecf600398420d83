/**
 * 迁移 between two hosts of the fleet (issue 31 §2): two compute agents on this machine (the real
 * local driver, their own folders) sharing one registry (Debian's docker-registry), the console on
 * COMPUTE_DRIVER=fleet (PostgreSQL under TEST_DATABASE_URL). An instance bought on host 2, with a
 * file in /root and one on its data disk: a migration whose import fails leaves it on host 2 as it
 * was; the next moves it to host 1 — stopped, both files there once started, nothing left on host 2.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Instance } from '@console/contract';
import { fundedUser, get, json, post } from '../../../test/harness.js';
import { lacks, skipOrFail } from '../../../test/host-packages.js';
import { FLEET_HOST_1, FLEET_HOST_2, startFleet, type Fleet } from '../../../test/fleet-kit.js';
import { LIST } from '../../../test/instances-kit.js';
import { missingRegistryTools, startRegistry, type TestRegistry } from '../../../test/registry-kit.js';

const skip = lacks('bubblewrap', 'e2fsprogs') || skipOrFail(missingRegistryTools(), process.env);

describe.skipIf(skip)('迁移 between two hosts of the fleet (two agents, one registry)', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'fleet-migrate-'));
  let registry: TestRegistry;
  let fleet: Fleet;
  beforeAll(async () => {
    registry = await startRegistry(work);
    fleet = await startFleet({ hosts: [FLEET_HOST_1, FLEET_HOST_2], agentEnv: { REGISTRY_URL: registry.url } });
  }, 500_000);
  afterAll(async () => {
    await fleet?.close();
    registry?.stop();
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  /** Runs `script` as root inside the running machine through the console's fleet driver (the host's agent); its output. */
  async function inMachine(id: string, script: string): Promise<string> {
    for (let i = 0; i < 100; i++) {
      const line = fleet.driver().shell(id, ['/bin/sh', '-c', script]);
      if (line) return run(line.file, line.args, line.env);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no way into ${id}`);
  }

  const view = async (token: string, id: string) => json<Instance>(await get(fleet.server.app, `${LIST}/${id}`, token));
  /** An action of the owner's, a second after the last (the console's opIds are named by its clock, which the tests hold still). */
  const act = (token: string, id: string, action: string, body?: unknown) => {
    fleet.server.clock.advance(1000);
    return post(fleet.server.app, `${LIST}/${id}/${action}`, body, token);
  };

  it('moves an instance from host 2 to host 1 with its /root and its data disk; a failed import leaves it on host 2 intact', async () => {
    const { token } = await fundedUser(fleet.server, '500');
    const id = await fleet.runningOn(token, FLEET_HOST_2);
    await inMachine(id, 'echo 系统层 > /root/hello.txt && echo 数据盘 > /root/autodl-tmp/data.txt');
    expect((await act(token, id, 'stop')).statusCode).toBe(200);
    await fleet.reach(token, id, 'Stopped');

    // Host 1's folder for its machines is a file: the import there cannot lay the machine out.
    const blocker = path.join(fleet.agent(FLEET_HOST_1).dataDir, 'local-compute', 'hosts', FLEET_HOST_1);
    mkdirSync(path.dirname(blocker), { recursive: true });
    writeFileSync(blocker, '');
    let res = await act(token, id, 'migrate', { hostId: FLEET_HOST_1 });
    expect(res.statusCode, res.body).toBe(200);
    await fleet.reach(token, id, 'Stopped', 1500);
    expect(await view(token, id)).toMatchObject({ status: 'Stopped', hostId: FLEET_HOST_2 });
    expect(machinesIn(FLEET_HOST_2)).toContain(id);
    expect((await act(token, id, 'start')).statusCode).toBe(200);
    await fleet.reach(token, id, 'Running');
    expect(await inMachine(id, 'cat /root/hello.txt /root/autodl-tmp/data.txt')).toBe('系统层\n数据盘\n');
    expect((await act(token, id, 'stop')).statusCode).toBe(200);
    await fleet.reach(token, id, 'Stopped');

    rmSync(blocker);
    res = await act(token, id, 'migrate', { hostId: FLEET_HOST_1 });
    expect(res.statusCode, res.body).toBe(200);
    await fleet.reach(token, id, 'Stopped', 1500);
    expect(await view(token, id)).toMatchObject({ status: 'Stopped', hostId: FLEET_HOST_1, lastError: null });
    expect(machinesIn(FLEET_HOST_2)).not.toContain(id);
    expect(machinesIn(FLEET_HOST_1)).toContain(id);

    expect((await act(token, id, 'start')).statusCode).toBe(200);
    await fleet.reach(token, id, 'Running');
    expect(await inMachine(id, 'cat /root/hello.txt /root/autodl-tmp/data.txt')).toBe('系统层\n数据盘\n');
  }, 400_000);

  /** The machines whose disks `hostId`'s agent keeps. */
  function machinesIn(hostId: string): string[] {
    const dir = path.join(fleet.agent(hostId).dataDir, 'local-compute', 'hosts', hostId);
    return existsSync(dir) ? readdirSync(dir) : [];
  }
});

function run(file: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
  });
}
