/**
 * What the instance tests share: funded users, buying an instance and bringing it to a status, and
 * moving the fake clock so the simulated driver finishes its operations.
 */
import { eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Instance, Order } from '@console/contract';
import { catalogueHosts, instances } from '../src/db/schema.js';
import type { SimulatedComputeDriver } from '../src/drivers/compute/simulated.js';
import { checkLedger } from '../src/modules/ledger/check.js';
import { fundedUser, get, json, post, startTestServer, type TestServer } from './harness.js';

export const SEC = 1000;
export const HOUR = 3600 * SEC;
export const LIST = '/upgpu/api/v2.1/instances';
export const GPU_ORDER = '/infra/api/v2.1/gpu/order';
/** Simulated delays (ms) the instance tests run with. */
export const DELAYS = {
  create: 4000,
  boot: 3000,
  start: 3000,
  stop: 2000,
  restart: 4000,
  destroy: 2000,
  resizeDisk: 3000,
  saveImage: 6000,
  changeBandwidth: 2000,
};
export const DELAYS_ENV = Object.entries(DELAYS)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/**
 * The frame of an instance test file: a server on the simulated fleet with these delays (started
 * once, handed to `started` with its driver), and the ledger checked clean after every test.
 */
export function instanceSuite(started: (s: TestServer, sim: SimulatedComputeDriver) => void): void {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { COMPUTE_SIM_DELAYS: DELAYS_ENV } });
    started(server, server.ctx.drivers.compute as SimulatedComputeDriver);
  });
  afterAll(async () => server.close());
  afterEach(async () => expect((await checkLedger(server.ctx.db)).problems).toEqual([]));
}

export function instanceKit(s: () => TestServer) {
  const kit = {
    fundedUser: (amount: string) => fundedUser(s(), amount),
    cash: async (userId: string) => (await s().ctx.ledger.balances(userId)).cash,
    gpuFree: async (hostId: string) => (await s().ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, hostId)))[0]!.gpuFree,
    row: async (id: string) => (await s().ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!,
    async settle(ms: number) {
      s().clock.advance(ms);
      await s().ctx.reconciler.tick();
    },
    async instance(token: string, id: string): Promise<Instance> {
      const res = await get(s().app, `${LIST}/${id}`, token);
      expect(res.statusCode, res.body).toBe(200);
      return json<Instance>(res);
    },
    act: (token: string, id: string, action: string) => post(s().app, `${LIST}/${id}/${action}`, undefined, token),
    /** Where the next RTX 4090 would be placed (the quote's placement). */
    async pickHost(): Promise<string> {
      const q = json<{ placement: { hostId: string } }>(
        await post(s().app, '/infra/api/v2.1/gpu/order/price', { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1 }),
      );
      return q.placement.hostId;
    },
    /** Buys an RTX 4090 (post-paid, or prepaid and paid from the balance) and brings it to Running. */
    async running(token: string, opts: { cycle?: 'Usage' | 'Day'; extra?: Record<string, unknown> } = {}): Promise<{ id: string; order: Order }> {
      const cycle = opts.cycle ?? 'Usage';
      const res = await post(
        s().app,
        GPU_ORDER,
        { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: await kit.pickHost(), imageId: 'pytorch-2.3-cu121', cycle, duration: 1, ...opts.extra },
        token,
      );
      expect(res.statusCode, res.body).toBe(200);
      const order = json<Order>(res);
      if (cycle !== 'Usage') {
        const paid = await post(s().app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, token);
        expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
      }
      const [fresh] = json<{ items: Order[] }>(await get(s().app, '/order/api/v2.1/orders?pageSize=1', token)).items;
      const id = fresh!.resourceId!;
      await kit.settle(DELAYS.create);
      await kit.settle(DELAYS.boot);
      expect((await kit.instance(token, id)).status).toBe('Running');
      return { id, order };
    },
    /** As running(), then stopped (or shut down in no-card mode). */
    async stopped(token: string, opts: { cycle?: 'Usage' | 'Day'; noCard?: boolean; extra?: Record<string, unknown> } = {}) {
      const r = await kit.running(token, opts);
      if (opts.noCard) {
        await kit.act(token, r.id, 'stop');
        await kit.settle(DELAYS.stop);
        await kit.act(token, r.id, 'startNoCard');
        await kit.settle(DELAYS.start);
      }
      expect((await kit.act(token, r.id, 'stop')).statusCode).toBe(200);
      await kit.settle(DELAYS.stop);
      expect((await kit.instance(token, r.id)).status).toBe(opts.noCard ? 'Shutdown' : 'Stopped');
      return r;
    },
  };
  return kit;
}
