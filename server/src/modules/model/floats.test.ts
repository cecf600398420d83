/**
 * The floats behind the gateway's hot path (floats.ts), driven directly: how much a float takes from
 * the cash, what a call is charged, batches, closing when idle, a lost commit tried again, and the
 * sweeper racing a live batch. Every test ends with the ledger balanced and nothing left on hold.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { rowsOf } from '../../db/results.js';
import { modelSuite } from '../../../test/model-kit.js';
import type { TestServer } from '../../../test/harness.js';
import { Holds, type LedgerService } from '../ledger/index.js';
import { FLOAT_CALLS, FloatPool, FloatRefused, type CallRow } from './floats.js';
import { modelCalls, modelFloats } from './schema.js';

describe('model floats', () => {
  const { server, fundedUser } = modelSuite({});
  let s: TestServer;
  const pools: FloatPool[] = [];
  const errors: unknown[] = [];
  beforeAll(() => {
    s = server();
  });
  afterEach(async () => {
    for (const p of pools.splice(0)) {
      await p.drain();
      p.stop();
    }
    expect(await holdTotal()).toBe(0n);
  });

  const pool = (db: Db = s.ctx.db, ledger: Pick<LedgerService, 'holds'> = s.ctx.ledger) => {
    const p = new FloatPool({ db, clock: s.ctx.clock, ledger, onError: (e) => errors.push(e) });
    pools.push(p);
    return p;
  };
  const holdTotal = async () =>
    BigInt(rowsOf<{ t: string }>(await s.ctx.db.execute(sql`select coalesce(sum(balance), 0)::text as t from ledger_accounts where kind = 'hold'`))[0]!.t);
  const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
  const floatsOf = (payerId: string) => s.ctx.db.select().from(modelFloats).where(eq(modelFloats.payerId, payerId));
  const callsOf = (payerId: string) => s.ctx.db.select().from(modelCalls).where(eq(modelCalls.payerId, payerId));
  const row = (payerId: string): CallRow => ({
    id: randomUUID(),
    keyId: randomUUID(),
    userId: payerId,
    payerId,
    model: 'qwen-mini-sim',
    status: 'ok',
    promptTokens: 10,
    completionTokens: 20,
    createdAt: s.ctx.clock.now(),
  });
  /** The payer's cash entries, newest first, as 收支明细 lists them. */
  const statement = async (payerId: string) =>
    rowsOf<{ kind: string; amount: string }>(
      await s.ctx.db.execute(sql`select t.kind, e.amount::text as amount from ledger_entries e
        join ledger_transfers t on t.id = e.transfer_id join ledger_accounts a on a.id = e.account_id
        where a.user_id = ${payerId} and a.kind = 'cash' and t.kind like 'model%' order by e.id`),
    );

  it('takes FLOAT_CALLS estimates at once, charges each call its exact cost, and logs the calls in one batch', async () => {
    const u = await fundedUser('1');
    const p = pool();
    const held = 100n;
    const calls = await Promise.all(Array.from({ length: 10 }, () => p.reserve(u.user.id, u.user.id, held)));
    expect(await cash(u.user.id)).toBe(1_0000n - held * BigInt(FLOAT_CALLS));
    expect(await floatsOf(u.user.id)).toMatchObject([{ funded: held * BigInt(FLOAT_CALLS), status: 'open' }]);
    const charged = calls.map((c, i) => p.finish(c, BigInt(i + 1), row(u.user.id)));
    expect(charged).toEqual(calls.map((_c, i) => BigInt(i + 1)));
    await p.drain();
    const logged = await callsOf(u.user.id);
    expect(logged).toHaveLength(10);
    expect(logged.reduce((n, r) => n + r.cost, 0n)).toBe(55n);
    expect(logged.every((r) => r.held === held)).toBe(true);
    expect(await cash(u.user.id)).toBe(1_0000n - 55n);
    expect(await floatsOf(u.user.id)).toMatchObject([{ charged: 55n, status: 'closed', flushes: 1 }]);
    // 收支明细: the pre-authorisation and what came back, not two rows per call.
    expect(await statement(u.user.id)).toEqual([
      { kind: 'model_hold', amount: String(-held * BigInt(FLOAT_CALLS)) },
      { kind: 'model_usage', amount: String(held * BigInt(FLOAT_CALLS) - 55n) },
    ]);
  });

  it('takes only what the call needs when the cash cannot give more, and refuses when it cannot give that', async () => {
    const u = await fundedUser('0.0250'); // 250 units
    const p = pool();
    const first = await p.reserve(u.user.id, u.user.id, 100n); // 1,600 refused, 100 taken
    expect(await cash(u.user.id)).toBe(150n);
    const second = await p.reserve(u.user.id, u.user.id, 100n);
    expect(await cash(u.user.id)).toBe(50n);
    await expect(p.reserve(u.user.id, u.user.id, 100n)).rejects.toBeInstanceOf(FloatRefused);
    expect(await cash(u.user.id)).toBe(50n);
    // A call costing more than its estimate takes the difference only if the float has it: here it has none.
    expect(p.finish(first, 180n, row(u.user.id))).toBe(100n);
    expect(p.finish(second, 30n, row(u.user.id))).toBe(30n);
    await p.drain();
    expect(await cash(u.user.id)).toBe(250n - 130n);
  });

  it('closes a float left idle without being asked, giving back what was not charged', async () => {
    const u = await fundedUser('1');
    const p = pool();
    const c = await p.reserve(u.user.id, u.user.id, 50n);
    p.finish(c, 7n, row(u.user.id));
    await vi.waitFor(async () => expect(await floatsOf(u.user.id)).toMatchObject([{ status: 'closed', charged: 7n }]), { timeout: 5000, interval: 100 });
    expect(await cash(u.user.id)).toBe(1_0000n - 7n);
    expect(await callsOf(u.user.id)).toHaveLength(1);
  });

  it('counts a batch whose commit was lost once when it is tried again', async () => {
    const u = await fundedUser('1');
    let lose = 1;
    // The transaction commits, then its answer is lost (a dropped connection) once.
    const flaky = new Proxy(s.ctx.db, {
      get(target, prop, receiver) {
        if (prop !== 'transaction') return Reflect.get(target, prop, receiver) as unknown;
        return async (fn: (tx: unknown) => Promise<unknown>) => {
          const out = await target.transaction(fn as never);
          if (lose-- > 0) throw new Error('connection lost after commit');
          return out;
        };
      },
    });
    const p = pool(flaky);
    const c = await p.reserve(u.user.id, u.user.id, 40n);
    p.finish(c, 9n, row(u.user.id));
    await p.drain();
    expect(errors.pop()).toMatchObject({ message: 'connection lost after commit' });
    expect(await callsOf(u.user.id)).toHaveLength(1);
    expect(await cash(u.user.id)).toBe(1_0000n - 9n);
    expect(await floatsOf(u.user.id)).toMatchObject([{ charged: 9n, status: 'closed' }]);
  });

  it('tops up again after a top-up whose answer was lost, giving back exactly what the cash put in', async () => {
    const u = await fundedUser('1');
    let fundings = 0;
    // The second top-up commits, then its answer is lost.
    const poster = new Proxy(s.ctx.ledger, {
      get(target, prop, receiver) {
        if (prop !== 'postAlongside') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<typeof target.postAlongside>) => {
          const out = await target.postAlongside(...args);
          if (++fundings === 2) throw new Error('connection lost after commit');
          return out;
        };
      },
    });
    const p = pool(s.ctx.db, { holds: new Holds(poster) });
    const first = await p.reserve(u.user.id, u.user.id, 100n); // funds 1,600
    const big = await p.reserve(u.user.id, u.user.id, 1_500n); // 1,500 left: fits
    await expect(p.reserve(u.user.id, u.user.id, 100n)).rejects.toThrow('connection lost after commit');
    const next = await p.reserve(u.user.id, u.user.id, 100n); // a third top-up, under a key of its own
    for (const c of [first, big, next]) p.finish(c, 10n, row(u.user.id));
    await p.drain();
    expect(await cash(u.user.id)).toBe(1_0000n - 30n);
    expect(await floatsOf(u.user.id)).toMatchObject([{ charged: 30n, status: 'closed' }]);
  });

  it('closes an idle float after a refused top-up, and logs calls estimated at nothing', async () => {
    const u = await fundedUser('0.0200'); // 200 units
    const p = pool();
    const c = await p.reserve(u.user.id, u.user.id, 150n); // 2,400 refused, 150 taken
    p.finish(c, 20n, row(u.user.id));
    await expect(p.reserve(u.user.id, u.user.id, 500n)).rejects.toBeInstanceOf(FloatRefused);
    await vi.waitFor(async () => expect(await floatsOf(u.user.id)).toMatchObject([{ status: 'closed', charged: 20n }]), { timeout: 5000, interval: 100 });
    expect(await cash(u.user.id)).toBe(200n - 20n);
    // A free call (estimate 0) needs no money, and is on record all the same.
    const broke = await fundedUser('0');
    const free = await p.reserve(broke.user.id, broke.user.id, 0n);
    p.finish(free, 0n, row(broke.user.id));
    await p.drain();
    expect(await callsOf(broke.user.id)).toMatchObject([{ cost: 0n, status: 'ok' }]);
  });

  it("gives a dead process's float back once under racing sweeps, and a live one with a later batch logs it uncharged and opens a new float", async () => {
    const u = await fundedUser('1');
    const p = pool();
    const c = await p.reserve(u.user.id, u.user.id, 60n);
    expect(await p.sweep()).toBe(0);
    s.clock.advance(11 * 60_000);
    const swept = await Promise.all([pool().sweep(), pool().sweep()]);
    expect(swept[0]! + swept[1]!).toBe(1);
    expect(await cash(u.user.id)).toBe(1_0000n);
    p.finish(c, 25n, row(u.user.id));
    await p.drain();
    expect(await callsOf(u.user.id)).toMatchObject([{ cost: 0n, error: '预扣已被回收，本次调用未计费' }]);
    expect(await cash(u.user.id)).toBe(1_0000n);
    // The next call is held from a new float, charged as usual.
    const next = await p.reserve(u.user.id, u.user.id, 60n);
    p.finish(next, 25n, row(u.user.id));
    await p.drain();
    expect(await cash(u.user.id)).toBe(1_0000n - 25n);
    expect((await floatsOf(u.user.id)).map((f) => f.status).sort()).toEqual(['closed', 'expired']);
  });
});
