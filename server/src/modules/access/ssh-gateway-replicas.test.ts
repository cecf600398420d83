/**
 * Wrong SSH passwords are counted per address across the console's replicas (issue 31 "Limits are
 * shared"): an attacker going round the replicas behind a load balancer gets MAX_FAILURES guesses in
 * all, not that many per replica. Two gateways, each with its replica's counters (PostgreSQL under
 * TEST_DATABASE_URL, Redis with REDIS_URL, the embedded database's on PGlite), and a machine whose
 * password is known; the gateways on their own, with a driver that only answers who may log in.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { CountersUnavailable, type Counters } from '../../drivers/counters/index.js';
import type { TestServer } from '../../../test/harness.js';
import { twoReplicas, type Replicas } from '../../../test/replicas.js';
import { SshGateway } from './ssh-gateway.js';

const PASSWORD = 'right-password';
const machine = randomUUID();
const dir = mkdtempSync(path.join(tmpdir(), 'ssh-replicas-'));
const driver = { name: 'fake', shell: () => ({ file: '/bin/true', args: [], env: {} }) } as unknown as ComputeDriver;

/** A gateway as a replica runs it: its counters and its clock. */
function gatewayOf(name: string, counters: Pick<Counters, 'take' | 'add'>, now: () => number, log: string[] = []) {
  return new SshGateway({
    driver,
    runningIds: () => [machine],
    login: async (ids, _user, password) => (password === PASSWORD ? (ids[0] ?? null) : null),
    keyLogin: async () => null,
    hostKeyFile: path.join(dir, `${name}_host_key`),
    log: (m) => log.push(m),
    counters,
    now,
  });
}

/** Whether `password` logs in through the gateway at `port`. */
function logsIn(port: number, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = new Client();
    c.once('ready', () => {
      c.end();
      resolve(true);
    });
    c.once('error', () => resolve(false));
    c.connect({ host: '127.0.0.1', port, username: 'root', password, readyTimeout: 10_000 });
  });
}

let r: Replicas;
const gateways: SshGateway[] = [];
const ports: number[] = [];
const clockOf = (s: TestServer) => () => s.clock.now().getTime();

beforeAll(async () => {
  r = await twoReplicas();
  for (const [name, s] of [['a', r.a] as const, ['b', r.b] as const]) {
    const g = gatewayOf(name, s.ctx.counters, clockOf(s));
    gateways.push(g);
    ports.push(await g.listen(0, '127.0.0.1'));
  }
}, 180_000); // two servers on a busy machine
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await r.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('wrong SSH passwords, across replicas', () => {
  it('refuses an address after ten guesses spread over both replicas, the right password too, until the window has passed', async () => {
    const [a, b] = ports as [number, number];
    expect(await logsIn(a, PASSWORD)).toBe(true);
    // A right password is not a failure: ten wrong ones still get their answer.
    for (let i = 0; i < 10; i++) expect(await logsIn(i % 2 ? b : a, `wrong-${i}`)).toBe(false);
    r.a.clock.advance(60_000);
    expect(await logsIn(a, PASSWORD)).toBe(false);
    expect(await logsIn(b, PASSWORD)).toBe(false);
    // Ten minutes after the last guess, the address is let in again, on either replica.
    r.a.clock.advance(10 * 60_000);
    expect(await logsIn(b, PASSWORD)).toBe(true);
    expect(await logsIn(a, PASSWORD)).toBe(true);
  });

  it('refuses every login while the counters cannot be reached, and says so in the log', async () => {
    const down: Pick<Counters, 'take' | 'add'> = {
      take: async () => {
        throw new CountersUnavailable(new Error('connect ECONNREFUSED'));
      },
      add: async () => {},
    };
    const log: string[] = [];
    const g = gatewayOf('down', down, Date.now, log);
    const port = await g.listen(0, '127.0.0.1');
    try {
      expect(await logsIn(port, PASSWORD)).toBe(false);
      expect(log).toEqual([expect.stringContaining('限流计数不可用')]);
    } finally {
      await g.close();
    }
  });
});
