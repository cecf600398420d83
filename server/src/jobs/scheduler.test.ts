import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../test/harness.js';
import { instanceKit, instanceSuite } from '../../test/instances-kit.js';
import { schedulerDeps } from '../context.js';
import { JobLeases } from './leases.js';
import { startScheduler } from './scheduler.js';

describe('scheduler — the billing tick of three replicas', () => {
  let s: TestServer;
  const k = instanceKit(() => s);
  instanceSuite((server) => {
    s = server;
  });

  const usageCharges = async (id: string) =>
    Number(
      (
        (await s.ctx.db.execute(sql`select count(*)::int as n from ledger_transfers where idempotency_key like ${`usage:${id}:%`}`)) as unknown as {
          rows: { n: number }[];
        }
      ).rows[0]!.n,
    );

  it('charges a post-paid instance once per tick, not once per replica and tick', async () => {
    const u = await k.fundedUser('500');
    const { id } = await k.running(u.token);
    expect(await usageCharges(id)).toBe(0);

    // The console's time runs on, a thousand times faster than the real one: each tick has time to charge.
    const from = s.clock.now().getTime();
    const realFrom = Date.now();
    const manualNow = s.clock.now;
    s.clock.now = () => new Date(from + (Date.now() - realFrom) * 1000);
    try {
      const everyMs = 1000;
      const deps = { ...schedulerDeps(s.ctx), intervals: { ...schedulerDeps(s.ctx).intervals, billingTickSeconds: everyMs / 1000 } };
      const started = Date.now();
      const stops = ['r1', 'r2', 'r3'].map((holder) =>
        startScheduler(deps, s.app.log, { holder, only: ['instances.meter'], leaseMarginMs: 500, standbyPaceMs: 25 }),
      );
      await new Promise((r) => setTimeout(r, 3200));
      const leased = [...(await new JobLeases(s.ctx.db).holders()).keys()];
      await Promise.all(stops.map((stop) => stop()));
      // Ticks at 0, 1, 2 and 3 s.
      const ticks = (Date.now() - started) / everyMs + 1;

      const charges = await usageCharges(id);
      expect(charges).toBeGreaterThanOrEqual(2);
      // Without leases every replica charges at every tick: about 3 × ticks.
      expect(charges).toBeLessThanOrEqual(ticks + 1);
      expect(leased).toEqual(['instances.meter']);
      // Stopped, they gave the lease back.
      expect((await new JobLeases(s.ctx.db).holders()).size).toBe(0);
    } finally {
      const reached = s.clock.now().getTime();
      s.clock.now = manualNow;
      s.clock.advance(reached - from);
    }
  });
});
