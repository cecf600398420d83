/**
 * Logging out ends the user's connections into instances on every replica, not only on the one the
 * logout went through: the revocation is an event on the bus (db/bus.ts), and each replica's gate
 * looks again at once. Two replicas on one PostgreSQL database under TEST_DATABASE_URL (two pools,
 * two listeners); on PGlite (one process) two apps on one database and its in-process bus.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { API } from '@console/contract';
import { post } from '../../../test/harness.js';
import { DELAYS_ENV, instanceKit } from '../../../test/instances-kit.js';
import { twoReplicas, type Replicas } from '../../../test/replicas.js';

let r: Replicas;
beforeAll(async () => {
  r = await twoReplicas({ env: { COMPUTE_SIM_DELAYS: DELAYS_ENV } });
}, 180_000); // two servers on a busy machine
afterAll(async () => r.close());
const kit = instanceKit(() => r.a);

describe('connections into an instance, on another replica', () => {
  it('are closed when their user logs out through another replica', async () => {
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token);
    // A terminal, as the gate of replica b watches it.
    let closed: (reason: string) => void = () => {};
    const closing = new Promise<string>((resolve) => (closed = resolve));
    const live = { token: u.token, instanceId: id, close: (reason: string) => closed(reason) };
    r.b.ctx.accessGate.watch(live);
    let open = true;
    void closing.then(() => (open = false));
    await r.b.ctx.accessGate.recheck();
    expect(open).toBe(true); // admitted: its session and right hold

    const looked = vi.spyOn(r.b.ctx.accessGate, 'recheckSoon');
    expect((await post(r.a.app, API.logout, {}, u.token)).statusCode).toBe(200);
    // b hears of the logout (not only its periodic look), and closes the terminal.
    await vi.waitFor(() => expect(looked).toHaveBeenCalled());
    expect(await closing).toContain('连接已关闭');
    looked.mockRestore();
    r.b.ctx.accessGate.forget(live);
  });
});
