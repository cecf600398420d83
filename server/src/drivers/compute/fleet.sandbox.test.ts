/**
 * The fleet on two hosts (issue 31 §2): two compute agents on this machine, each the real local
 * driver with its own data folder, PGlite and port, and the console on COMPUTE_DRIVER=fleet
 * (PostgreSQL under TEST_DATABASE_URL). A host that stops answering: its instances 主机异常, their
 * billing paused; back: running again, billing resumed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fundedUser } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { descendantsOf, FLEET_HOST_1, FLEET_HOST_2, listed, startFleet, type Fleet } from '../../../test/fleet-kit.js';

const HOUR = 3_600_000;
describe.skipIf(lacks('bubblewrap'))('fleet: two agents on the real local driver', () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet({ hosts: [FLEET_HOST_1, FLEET_HOST_2] });
  }, 600_000);
  afterAll(async () => fleet?.close(), 120_000);

  it('runs a machine bought on host 2 on agent 2; a silent host makes it 主机异常 without charges, and its return makes it Running and charged again', async () => {
    const { token, user } = await fundedUser(fleet.server, '500');
    const id = await fleet.runningOn(token, FLEET_HOST_2);

    // Its disks are in agent 2's folder, none in agent 1's.
    expect(machinesIn(fleet.agent(FLEET_HOST_2).dataDir, FLEET_HOST_2)).toContain(id);
    expect(machinesIn(fleet.agent(FLEET_HOST_1).dataDir, FLEET_HOST_2)).not.toContain(id);
    await fleet.driver().poll();
    expect(fleet.driver().runningIds()).toContain(id);

    // Nothing of the agent's environment reaches the machine: its secret is in no process's environment there.
    const agent2 = fleet.agent(FLEET_HOST_2);
    // (Its other children — tsx's esbuild — are the agent's own, not the machine's.)
    const sandboxes = descendantsOf(agent2.pid()!).filter((pid) => commOf(pid) === 'bwrap');
    const inside = [...sandboxes, ...sandboxes.flatMap(descendantsOf)];
    expect(inside.length).toBeGreaterThan(0);
    for (const pid of inside) expect(environOf(pid)).not.toContain(agent2.secret);
    expect(environOf(agent2.pid()!)).toContain(agent2.secret); // where it is

    // Running is charged.
    const s = fleet.server;
    const charged = async (ms: number) => {
      const before = await fleet.kit.cash(user.id);
      s.clock.advance(ms);
      await s.ctx.instanceBilling.meterTick();
      return before - (await fleet.kit.cash(user.id));
    };
    expect(await charged(HOUR)).toBeGreaterThan(0n);

    // A heartbeat at the clock's now (the hour above passed on the console's clock alone).
    await fleet.driver().poll();
    await fleet.agent(FLEET_HOST_2).stop();
    // Within the grace (5 s here) nothing changes; past it, the host is lost.
    await s.ctx.reconciler.tick();
    expect((await listed(s, token, id)).status).toBe('Running');
    s.clock.advance(6_000);
    await fleet.reach(token, id, 'Unknown', 50);
    expect((await listed(s, token, id)).lastError).toContain('主机异常');
    expect((await fleet.driver().hosts()).find((h) => h.hostId === FLEET_HOST_2)).toMatchObject({ status: 'lost' });

    // No usage charge while the host is lost.
    expect(await charged(HOUR)).toBe(0n);

    await fleet.agent(FLEET_HOST_2).start();
    await fleet.reach(token, id, 'Running');
    expect((await fleet.driver().hosts()).find((h) => h.hostId === FLEET_HOST_2)).toMatchObject({ status: 'up', healthy: true });
    expect(await charged(HOUR)).toBeGreaterThan(0n);
  }, 600_000);
});

/** The machines whose disks a host keeps in an agent's folder. */
function machinesIn(agentDir: string, hostId: string): string[] {
  try {
    return readdirSync(path.join(agentDir, 'local-compute', 'hosts', hostId));
  } catch {
    return [];
  }
}

/** A process's environment ('' once it has ended). */
function environOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return '';
  }
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
