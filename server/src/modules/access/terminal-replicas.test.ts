/**
 * The web terminal's 10 shells per user hold across the console's replicas (issue 31 "Limits are
 * shared"): shells open on replica a count on replica b, opens at once on both cannot pass the
 * limit together, a shell closed frees its place for either, and a dead replica's shells stop
 * counting within half a minute. Two replicas on one database (PostgreSQL under TEST_DATABASE_URL),
 * each with its own shells (a host command standing in for the machine's shell) counted in it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { TestServer } from '../../../test/harness.js';
import { twoReplicas, type Replicas } from '../../../test/replicas.js';
import { Terminals, type TerminalSink } from './terminal.js';
import { SharedShellSlots, STALE_SHELL_MS } from './terminal-slots.js';

const driver = { shell: () => ({ file: '/bin/sh', args: ['-c', 'sleep 60'], env: {} }) } as unknown as ComputeDriver;
const size = { cols: 80, rows: 24 };
const sink: TerminalSink = { output: () => {}, ended: () => {} };

let r: Replicas;
beforeAll(async () => {
  r = await twoReplicas();
}, 180_000); // two servers on a busy machine
afterAll(async () => {
  await a.terminals.stop();
  await b.terminals.stop();
  await r.close();
});

/** A replica's shells, counted in its database. */
function replicaShells(s: TestServer) {
  const slots = new SharedShellSlots({ db: s.ctx.db, clock: s.clock, onError: (e) => console.error(e) });
  return { slots, terminals: new Terminals(driver, { slots }) };
}

let a: ReturnType<typeof replicaShells>;
let b: ReturnType<typeof replicaShells>;
beforeAll(() => {
  a = replicaShells(r.a);
  b = replicaShells(r.b);
});
/** Each test starts with no shells, on two live replicas. */
afterEach(async () => {
  await a.terminals.stop();
  await b.terminals.stop();
  a = replicaShells(r.a);
  b = replicaShells(r.b);
});

/** Opens a shell for `user`; the refusal's error name when refused. */
async function open(t: Terminals, user: string): Promise<string> {
  try {
    return (await t.open(randomUUID(), user, size, sink)).id;
  } catch (e) {
    if (e instanceof AppError) return e.name_;
    throw e;
  }
}

describe('web terminal shells per user, across replicas', () => {
  it('counts the shells of both replicas together: the 11th is refused on either, one closed admits one more', async () => {
    const user = randomUUID();
    const onA = [];
    for (let i = 0; i < 6; i++) onA.push(await open(a.terminals, user));
    const onB = [];
    for (let i = 0; i < 4; i++) onB.push(await open(b.terminals, user));
    expect([...onA, ...onB].every((id) => /^[0-9a-f-]{36}$/.test(id))).toBe(true);
    expect(a.terminals.size + b.terminals.size).toBe(10);
    expect(await open(a.terminals, user)).toBe('TERMINAL_LIMIT');
    expect(await open(b.terminals, user)).toBe('TERMINAL_LIMIT');
    // Another user is not held back by them.
    expect(await open(b.terminals, randomUUID())).toMatch(/^[0-9a-f-]{36}$/);

    b.terminals.close({ id: onB[0] }, 'closed by the user');
    await b.slots.stop(); // the give-back has landed
    expect(await open(a.terminals, user)).toMatch(/^[0-9a-f-]{36}$/);
    expect(await open(b.terminals, user)).toBe('TERMINAL_LIMIT');
  });

  it('admits ten of twelve opens at once on both replicas', async () => {
    const user = randomUUID();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => open(i % 2 ? b.terminals : a.terminals, user)));
    expect(results.filter((x) => x === 'TERMINAL_LIMIT')).toHaveLength(2);
    expect(a.terminals.size + b.terminals.size).toBe(10);
  });

  it("frees a dead replica's shells once they go untouched", async () => {
    const user = randomUUID();
    for (let i = 0; i < 10; i++) await open(i < 7 ? a.terminals : b.terminals, user);
    expect(await open(b.terminals, user)).toBe('TERMINAL_LIMIT');
    // Replica a dies: its touches stop, its rows stay.
    await a.slots.stop();
    r.a.clock.advance(STALE_SHELL_MS / 2);
    await b.slots.heartbeat();
    expect(await open(b.terminals, user)).toBe('TERMINAL_LIMIT');
    r.a.clock.advance(STALE_SHELL_MS / 2 + 1000);
    await b.slots.heartbeat();
    // b's three still count, a's seven no longer do.
    for (let i = 0; i < 7; i++) expect(await open(b.terminals, user)).toMatch(/^[0-9a-f-]{36}$/);
    expect(await open(b.terminals, user)).toBe('TERMINAL_LIMIT');
  });
});
