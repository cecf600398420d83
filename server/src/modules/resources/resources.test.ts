import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits, type Order } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { instanceKit } from '../../../test/instances-kit.js';
import { instances, orders, resourcePackageUsages, resourcePackages } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';
import { inUnits } from './service.js';

const yuan = yuanToUnits;
const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DELAYS = { create: 4000, boot: 3000, start: 3000, stop: 2000, restart: 4000, destroy: 2000 };
const AI = '/shinichi/api/v2.1/tiio/resource';
const PACKAGES = '/order/api/v2.1/resource/packages';

describe('card-hour packages pay post-paid GPU runs before money', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
        BILLING_TICK_SECONDS: '60',
      },
    });
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  /** A new account with `amount` yuan of cash (the shared test kit). */
  const { fundedUser } = instanceKit(() => s);
  const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
  const pkg = async (id: string) => (await s.ctx.db.select().from(resourcePackages).where(eq(resourcePackages.id, id)))[0]!;
  const tick = async (ms: number) => {
    s.clock.advance(ms);
    await s.ctx.instanceBilling.meterTick();
  };

  /** Buys the RTX 4090 card-hour package through the API, then sets it to `hours` (and a type / expiry when given). */
  async function buyPackage(token: string, hours: number, set: { gpuTypeId?: string; expiresAt?: Date } = {}) {
    const order = json<Order>(await post(s.app, AI, { productId: 'gpu-hours-4090-100' }, token));
    const paid = await post(s.app, `/order/api/v2.1/tiio/resource/${order.orderUid}/pay`, { method: 'Balance' }, token);
    expect(json(paid)).toMatchObject({ status: 'Success' });
    const [row] = await s.ctx.db
      .select()
      .from(resourcePackages)
      .innerJoin(orders, eq(orders.id, resourcePackages.orderId))
      .where(eq(orders.orderUid, order.orderUid));
    expect(row!.resource_packages).toMatchObject({ gpuTypeId: 'rtx4090', unitScale: 3_600_000n, total: 100n * 3_600_000n });
    const ms = BigInt(hours * HOUR);
    await s.ctx.db
      .update(resourcePackages)
      .set({ total: ms, remain: ms, ...set })
      .where(eq(resourcePackages.id, row!.resource_packages.id));
    return row!.resource_packages.id;
  }

  /** A post-paid RTX 4090 at ¥2/h for all its cards, Running. */
  async function running(token: string, gpuCount = 1) {
    const res = await post(s.app, '/infra/api/v2.1/gpu/order', { gpuTypeId: 'rtx4090', gpuCount, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, token);
    expect(res.statusCode, res.body).toBe(200);
    // The new instance, read from its table: this suite is about money, not the instance views.
    const order = json<Order>(res);
    const [created] = await s.ctx.db
      .select()
      .from(instances)
      .where(eq(instances.usageOrderId, (await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid)))[0]!.id));
    const id = created!.id;
    await s.ctx.db
      .update(instances)
      .set({ hourlyPrice: yuan('2') })
      .where(eq(instances.id, id));
    for (const ms of [DELAYS.create, DELAYS.boot]) {
      s.clock.advance(ms);
      await s.ctx.reconciler.tick();
    }
    const [r] = await s.ctx.db.select().from(instances).where(eq(instances.id, id));
    expect(r).toMatchObject({ status: 'Running', meterRate: yuan('2') });
    return { id, orderId: r!.usageOrderId! };
  }

  it('runs 1.5 h on a 1-hour package: 1 h from the package, 0.5 h charged in money, the page shows 0 left', async () => {
    const u = await fundedUser('200');
    const pkgId = await buyPackage(u.token, 1);
    const { orderId } = await running(u.token);
    const before = await cash(u.user.id);
    await tick(40 * MIN);
    expect(await cash(u.user.id)).toBe(before); // the package pays the first 40 minutes
    expect((await pkg(pkgId)).remain).toBe(BigInt(20 * MIN));
    await tick(40 * MIN); // 20 min from the package, 20 min in money
    await tick(10 * MIN);
    expect(before - (await cash(u.user.id))).toBe(yuan('1')); // 0.5 h at ¥2/h
    expect((await pkg(pkgId)).remain).toBe(0n);
    const [o] = await s.ctx.db.select().from(orders).where(eq(orders.id, orderId));
    expect(o!.amount).toBe(yuan('1'));
    const used = await s.ctx.db.select().from(resourcePackageUsages).where(eq(resourcePackageUsages.packageId, pkgId));
    expect(used.reduce((n, x) => n + x.amount, 0n)).toBe(BigInt(HOUR));
    const page = json<{ items: { id: string; unit: string; total: string; remain: string; gpuTypeId: string | null; expired: boolean }[] }>(
      await get(s.app, PACKAGES, u.token),
    );
    expect(page.items.find((p) => p.id === pkgId)).toMatchObject({ unit: '卡时', total: '1', remain: '0', gpuTypeId: 'rtx4090', expired: false });
  });

  it('is exact to the millisecond across irregular ticks and shows the hours left', async () => {
    const u = await fundedUser('200');
    const pkgId = await buyPackage(u.token, 1);
    await running(u.token);
    const before = await cash(u.user.id);
    for (const ms of [7 * MIN + 333, 19 * SEC + 1, 41 * MIN]) await tick(ms);
    const usedMs = 7 * MIN + 333 + 19 * SEC + 1 + 41 * MIN;
    expect((await pkg(pkgId)).remain).toBe(BigInt(HOUR - usedMs));
    expect(await cash(u.user.id)).toBe(before);
    const page = json<{ items: { id: string; remain: string }[] }>(await get(s.app, PACKAGES, u.token));
    expect(page.items.find((p) => p.id === pkgId)!.remain).toBe(inUnits(BigInt(HOUR - usedMs), 3_600_000n));
    expect(inUnits(BigInt(HOUR - usedMs), 3_600_000n)).toBe('0.1946'); // 700,666 ms left: 0.19462… h, shown rounded down
  });

  it('lists what the package paid for in rows that add up to what it shows as used (/compute/detail)', async () => {
    const u = await fundedUser('200');
    const pkgId = await buyPackage(u.token, 1);
    // Three runs of 1 min 0.2 s each: 0.016722… h apiece, 0.050166… h in all.
    const each = BigInt(MIN + 200);
    await s.ctx.db
      .update(resourcePackages)
      .set({ remain: BigInt(HOUR) - 3n * each })
      .where(eq(resourcePackages.id, pkgId));
    await s.ctx.db.insert(resourcePackageUsages).values(
      [1, 2, 3].map((n) => ({
        packageId: pkgId,
        userId: u.user.id,
        jobRef: `gen:t${n}`,
        amount: each,
        key: `test-${pkgId}-${n}`,
        createdAt: new Date(Date.UTC(2026, 10, 28, n)),
      })),
    );
    const shown = json<{ items: { id: string; total: string; remain: string }[] }>(await get(s.app, PACKAGES, u.token)).items.find((p) => p.id === pkgId)!;
    expect(shown).toMatchObject({ total: '1', remain: '0.9498' });
    const rows = json<{ items: { amount: string }[] }>(await get(s.app, `${PACKAGES}/${pkgId}/usages`, u.token)).items;
    const tenThousandths = (text: string) => Math.round(Number(text) * 10_000);
    expect(rows.map((r) => r.amount)).toEqual(['0.0167', '0.0167', '0.0168']); // newest first
    expect(rows.reduce((n, r) => n + tenThousandths(r.amount), 0)).toBe(10_000 - tenThousandths(shown.remain));
  });

  it('leaves a package of another GPU type and an expired package untouched, and charges money', async () => {
    const u = await fundedUser('400');
    const other = await buyPackage(u.token, 1, { gpuTypeId: 'rtx3090' });
    const expired = await buyPackage(u.token, 1, { expiresAt: new Date(s.clock.now().getTime() - 1) });
    await running(u.token);
    const before = await cash(u.user.id);
    await tick(HOUR);
    expect(before - (await cash(u.user.id))).toBe(yuan('2'));
    expect((await pkg(other)).remain).toBe(BigInt(HOUR));
    expect((await pkg(expired)).remain).toBe(BigInt(HOUR));
    expect(await s.ctx.db.select().from(resourcePackageUsages).where(eq(resourcePackageUsages.userId, u.user.id))).toEqual([]);
    const page = json<{ items: { id: string; expired: boolean }[] }>(await get(s.app, PACKAGES, u.token));
    expect(page.items.find((p) => p.id === expired)!.expired).toBe(true);
  });

  it('consumes once when a tick is replayed or runs twice at the same time, then money takes over', async () => {
    const u = await fundedUser('200');
    const pkgId = await buyPackage(u.token, 1);
    const { id } = await running(u.token);
    const before = await cash(u.user.id);
    s.clock.advance(30 * MIN);
    await Promise.all([s.ctx.instanceBilling.meterTick(), s.ctx.instanceBilling.meterTick()]);
    await s.ctx.instanceBilling.meterTick();
    expect((await pkg(pkgId)).remain).toBe(BigInt(30 * MIN));
    expect(await s.ctx.db.select().from(resourcePackageUsages).where(eq(resourcePackageUsages.instanceId, id))).toHaveLength(1);
    await tick(HOUR); // 30 min left on the package, 30 min in money
    expect(before - (await cash(u.user.id))).toBe(yuan('1'));
    expect((await pkg(pkgId)).remain).toBe(0n);
  });

  it('takes the earliest expiry first and counts cards: 2 cards for 1 h need 2 card hours', async () => {
    const u = await fundedUser('400');
    const later = await buyPackage(u.token, 1, { expiresAt: new Date(s.clock.now().getTime() + 80 * 86400_000) });
    const sooner = await buyPackage(u.token, 0.5, { expiresAt: new Date(s.clock.now().getTime() + 10 * 86400_000) });
    await running(u.token, 2);
    const before = await cash(u.user.id);
    await tick(HOUR);
    expect((await pkg(sooner)).remain).toBe(0n);
    expect((await pkg(later)).remain).toBe(0n);
    // 2 card hours used, 1.5 covered: a quarter of the ¥2/h the two cards cost together.
    expect(before - (await cash(u.user.id))).toBe(yuan('0.5'));
  });
});
