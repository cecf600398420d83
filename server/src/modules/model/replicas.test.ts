/**
 * Issue 31 §1 "Limits are shared": several console processes on one database count a key's rate
 * limits together, and a dead one's holds go back within the stated time. Each "replica" is an
 * ApiKeyService (or ModelGateway) of its own on the test server's database, with counters of its
 * own on the shared store: postgres (the test database: PGlite, or PostgreSQL with
 * TEST_DATABASE_URL) and redis (the machine's, under a prefix of this run).
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type ApiKeyCreated } from '@console/contract';
import { json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { redisForTests, TEST_REDIS_URL } from '../../../test/redis.js';
import { checkLedger } from '../ledger/index.js';
import { PostgresCounters, type Counters } from '../../drivers/counters/index.js';
import { RedisCounters } from '../../drivers/counters/redis.js';
import { ApiKeyService, PLAYGROUND_RPM } from './keys.js';
import { ModelGateway, STALE_HOLD_MS, STALE_SWEEP_MS } from './gateway.js';
import { STALE_FLOAT_MS } from './floats.js';
import { modelApiKeys, modelCalls, modelFloats } from './schema.js';

const redisUp = await redisForTests();

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s.ctx.modelGateway.drain();
  expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  await s.close();
});

async function createKey(token: string, body: Record<string, unknown>): Promise<ApiKeyCreated> {
  const res = await post(s.app, API.modelKeys, { name: 'replicas', ...body }, token);
  expect(res.statusCode, res.body).toBe(200);
  return json<ApiKeyCreated>(res);
}

async function fund(userId: string, units: bigint) {
  await s.ctx.ledger.post({
    key: `fund-${randomUUID()}`,
    kind: 'compensation',
    legs: [
      { account: { platform: 'compensation' }, amount: -units },
      { account: { userId, kind: 'cash' }, amount: units },
    ],
  });
}

function replicasOf(counters: () => Counters): ApiKeyService[] {
  return [0, 1, 2].map(() => new ApiKeyService({ db: s.ctx.db, clock: s.clock, users: s.ctx.users, models: s.ctx.models, counters: counters() }));
}

function sharedLimits(name: string, counters: () => Counters) {
  describe(`key limits across three replicas (${name})`, () => {
    it('admits a key limited to 3 requests a minute 3 times in all, the rest 429 with Retry-After, until the minute has passed', async () => {
      const u = await registerUser(s);
      const k = await createKey(u.token, { rpmLimit: 3 });
      const replicas = replicasOf(counters);
      const results = await Promise.all(Array.from({ length: 9 }, (_, i) => replicas[i % 3]!.authenticate(`Bearer ${k.secret}`, '10.0.0.1')));
      expect(results.filter((r) => r.ok)).toHaveLength(3);
      for (const r of results.filter((r) => !r.ok)) {
        expect(r).toMatchObject({ ok: false, reason: 'rate_limited', status: 429, code: 'rate_limit_exceeded', message: expect.stringContaining('3 次请求') });
        const retry = (r as { retryAfterMs: number }).retryAfterMs;
        expect(retry > 0 && retry <= 60_000, String(retry)).toBe(true);
      }
      expect((await replicas[2]!.authenticate(`Bearer ${k.secret}`, '10.0.0.1')).ok).toBe(false);
      s.clock.advance(60_000);
      expect((await replicas[1]!.authenticate(`Bearer ${k.secret}`, '10.0.0.1')).ok).toBe(true);
    });

    it("refuses a key over its tokens per minute on every replica once one replica's calls used them", async () => {
      const u = await registerUser(s);
      const k = await createKey(u.token, { tpmLimit: 1000 });
      const [a, b, c] = replicasOf(counters);
      expect((await a!.authenticate(`Bearer ${k.secret}`, '10.0.0.1')).ok).toBe(true);
      await a!.recordUse(k.id, 0n, s.clock.now(), 1000);
      for (const other of [b!, c!]) {
        expect(await other.authenticate(`Bearer ${k.secret}`, '10.0.0.1')).toMatchObject({
          ok: false,
          status: 429,
          message: expect.stringContaining('1000 个 Token'),
        });
      }
      s.clock.advance(60_000);
      expect((await c!.authenticate(`Bearer ${k.secret}`, '10.0.0.1')).ok).toBe(true);
    });

    it('limits the online experience to PLAYGROUND_RPM a minute in all', async () => {
      const u = await registerUser(s);
      const user = (await s.ctx.users.findById(u.user.id))!;
      const replicas = replicasOf(counters);
      await replicas[0]!.playground(user); // makes the playground key
      const results = await Promise.all(Array.from({ length: PLAYGROUND_RPM + 5 }, (_, i) => replicas[i % 3]!.playground(user)));
      expect(results.filter((r) => r.ok)).toHaveLength(PLAYGROUND_RPM - 1);
    });
  });
}

sharedLimits('postgres', () => new PostgresCounters(s.ctx.db));

describe.skipIf(!redisUp)('with Redis', () => {
  const prefix = `console-test:${randomUUID()}:`;
  const opened: RedisCounters[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) opened.push(await RedisCounters.connect(TEST_REDIS_URL, { prefix }));
  });
  afterAll(async () => {
    await opened[0]?.flush();
    await Promise.all(opened.map((c) => c.close()));
  });
  let next = 0;
  sharedLimits('redis', () => opened[next++ % opened.length]!);
});

describe("a dead replica's holds", () => {
  it('go back within STALE_HOLD_MS + STALE_SWEEP_MS, while a live replica keeps its long call by its heartbeat', async () => {
    const u = await registerUser(s);
    await fund(u.user.id, 1_0000n);
    const limited = await createKey(u.token, { spendLimit: '5000' }); // held call by call (an open call row)
    const free = await createKey(u.token, {}); // held from the replica's float
    const model = (await s.ctx.models.get('qwen-mini-sim'))!;
    const keyOf = async (secret: string) => {
      const r = await s.ctx.apiKeys.authenticate(`Bearer ${secret}`, '127.0.0.1', 'qwen-mini-sim');
      if (!r.ok) throw new Error(r.reason);
      return r.key;
    };
    // The replica that will die: a gateway of its own on the same database.
    const dead = new ModelGateway({ db: s.ctx.db, clock: s.clock, ledger: s.ctx.ledger, apiKeys: s.ctx.apiKeys, resources: s.ctx.resources });
    const deadCall = await dead.hold(await keyOf(limited.secret), model, 20, 1000);
    const deadFloatCall = await dead.hold(await keyOf(free.secret), model, 20, 1000);
    expect(deadFloatCall.float).toBeDefined();
    dead.stop(); // kill -9: no settle, no heartbeat, nothing given back
    const liveCall = await s.ctx.modelGateway.hold(await keyOf(limited.secret), model, 20, 1000);
    const spent = async () => (await s.ctx.db.select({ spent: modelApiKeys.spent }).from(modelApiKeys).where(eq(modelApiKeys.id, limited.id)))[0]!.spent;
    expect(await spent()).toBe(deadCall.held + liveCall.held);

    s.clock.advance(Math.max(STALE_HOLD_MS, STALE_FLOAT_MS) - 1000);
    await s.ctx.modelGateway.heartbeat(); // the live replica, streaming on
    expect(await s.ctx.modelGateway.sweepStaleHolds()).toBe(0);
    s.clock.advance(2000);
    // The sweeper's next run (at most STALE_SWEEP_MS later) finds both of the dead replica's holds.
    expect(STALE_HOLD_MS + STALE_SWEEP_MS).toBeLessThanOrEqual(60_000);
    expect(await s.ctx.modelGateway.sweepStaleHolds()).toBe(2);
    const status = async (id: string) => (await s.ctx.db.select({ status: modelCalls.status }).from(modelCalls).where(eq(modelCalls.id, id)))[0]?.status;
    expect(await status(deadCall.id)).toBe('expired');
    expect(await status(liveCall.id)).toBe('open');
    const [float] = await s.ctx.db.select().from(modelFloats).where(eq(modelFloats.id, deadFloatCall.float!.float.id));
    expect(float).toMatchObject({ status: 'expired' });
    expect(await spent()).toBe(liveCall.held);

    // The live call ends and is charged as usual; then nothing is held any more.
    const cost = await s.ctx.modelGateway.settle(liveCall, {
      usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 },
      channel: 'embedded',
      status: 'ok',
    });
    expect(cost).toBeGreaterThan(0n);
    expect(await status(liveCall.id)).toBe('ok');
    expect(await spent()).toBe(cost);
    expect((await s.ctx.ledger.balances(u.user.id)).cash).toBe(1_0000n - cost);
  });
});
