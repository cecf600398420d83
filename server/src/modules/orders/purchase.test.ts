/**
 * Purchases racing each other: post-paid starts limited by the balance (each reserves its hour
 * against what already runs) and GPU orders placed on a host that filled up meanwhile.
 */
import { eq, inArray } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { formatYuan } from '@console/contract';
import { get, json, post, type TestServer } from '../../../test/harness.js';
import { DELAYS, GPU_ORDER, LIST, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { catalogueHosts, instances, orders } from '../../db/schema.js';

describe('purchase races', () => {
  let s: TestServer;
  instanceSuite((server) => (s = server));
  const kit = instanceKit(() => s);

  // Every test starts from a fleet where every card no instance holds is free.
  beforeEach(async () => {
    const held = new Map<string, number>();
    for (const r of await s.ctx.db.select().from(instances)) if (r.hostId && r.gpuHeld > 0) held.set(r.hostId, (held.get(r.hostId) ?? 0) + r.gpuHeld);
    for (const h of await s.ctx.db.select().from(catalogueHosts)) {
      await s.ctx.db
        .update(catalogueHosts)
        .set({ gpuFree: h.gpuTotal - (held.get(h.id) ?? 0) })
        .where(eq(catalogueHosts.id, h.id));
    }
    s.ctx.catalogueStore.invalidateInventory();
  });

  const usageOrder = (token: string, body: Record<string, unknown> = {}) =>
    post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1, ...body }, token);
  const hourOf4090 = async () =>
    BigInt(json<{ total: string }>(await post(s.app, `${GPU_ORDER}/price`, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1 })).total);
  const instancesOf = async (userId: string) => s.ctx.db.select().from(instances).where(eq(instances.userId, userId));

  it('starts as many post-paid instances at once as the balance carries for an hour each, and refuses the rest', async () => {
    const hour = await hourOf4090();
    // Ten hours and a half: the half pays for what the ten use while the test runs, not for an eleventh.
    const u = await kit.fundedUser(formatYuan(hour * 10n + hour / 2n));
    const answers = await Promise.all(Array.from({ length: 16 }, () => usageOrder(u.token)));
    const ok = answers.filter((r) => r.statusCode === 200);
    expect(ok).toHaveLength(10);
    for (const r of answers.filter((a) => a.statusCode !== 200)) {
      expect(json(r)).toMatchObject({ code: 40011001, detail: expect.stringContaining('已在运行的按量实例预留 1 小时') });
    }
    expect(await instancesOf(u.user.id)).toHaveLength(10);

    // One at a time it is the same: the eleventh is refused while the ten run.
    await kit.settle(DELAYS.create);
    await kit.settle(DELAYS.boot);
    expect(json(await usageOrder(u.token))).toMatchObject({ code: 40011001 });

    // A stopped one no longer counts: stopping one lets another start, and the stopped one cannot start again meanwhile.
    const [first, second] = (await instancesOf(u.user.id)).map((r) => r.id);
    expect((await kit.act(u.token, first!, 'stop')).statusCode).toBe(200);
    await kit.settle(DELAYS.stop);
    expect((await usageOrder(u.token)).statusCode).toBe(200);
    expect(json(await kit.act(u.token, first!, 'start'))).toMatchObject({ code: 40011001 });
    expect((await kit.act(u.token, second!, 'stop')).statusCode).toBe(200);
    await kit.settle(DELAYS.stop);
    expect(json<{ status: string }>(await kit.act(u.token, first!, 'start')).status).toBe('Starting');
    await kit.settle(DELAYS.start);
    await kit.settle(DELAYS.create + DELAYS.boot);
    for (const r of await instancesOf(u.user.id)) if (r.status === 'Running') await kit.act(u.token, r.id, 'stop');
    await kit.settle(DELAYS.stop);
  });

  it('counts a run once when its order is not yet marked delivered (the moment a concurrent start may see)', async () => {
    const hour = await hourOf4090();
    const u = await kit.fundedUser(formatYuan(hour * 2n + hour / 2n));
    expect((await usageOrder(u.token)).statusCode).toBe(200);
    // The instance exists and its order is still undelivered: what a start sees between the two steps of createPostpaid.
    const [run] = await instancesOf(u.user.id);
    await s.ctx.db.update(orders).set({ fulfilledAt: null }).where(eq(orders.id, run!.usageOrderId!));
    expect((await usageOrder(u.token)).statusCode).toBe(200);
    expect(json(await usageOrder(u.token))).toMatchObject({ code: 40011001 });
  });

  it('places concurrent GPU orders on the next host that fits when the quoted one fills up', async () => {
    // Twelve RTX 3090 cards free on three hosts; every quote picks the tightest host (3 free) first.
    const hosts = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.gpuTypeId, 'rtx3090'));
    const free = [3, 4, 5];
    for (const [i, h] of hosts.slice(0, 3).entries()) await s.ctx.db.update(catalogueHosts).set({ gpuFree: free[i] }).where(eq(catalogueHosts.id, h.id));
    const rest = hosts.slice(3).map((h) => h.id);
    if (rest.length) await s.ctx.db.update(catalogueHosts).set({ gpuFree: 0 }).where(inArray(catalogueHosts.id, rest));
    s.ctx.catalogueStore.invalidateInventory();

    const u = await kit.fundedUser('1000');
    const answers = await Promise.all(Array.from({ length: 10 }, () => usageOrder(u.token, { gpuTypeId: 'rtx3090', imageId: 'pytorch-2.3-cu121' })));
    expect(answers.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
    const mine = await instancesOf(u.user.id);
    expect(mine).toHaveLength(10);
    const after = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.gpuTypeId, 'rtx3090'));
    expect(after.reduce((n, h) => n + h.gpuFree, 0)).toBe(2);
    // Each instance is where its card is: host, room and region agree with the catalogue.
    for (const r of mine) {
      const host = after.find((h) => h.id === r.hostId)!;
      expect(r.roomId).toBe(host.roomId);
      const view = json<{ regionId: string }>(await get(s.app, `${LIST}/${r.id}`, u.token));
      expect(view.regionId).toBe(r.regionId);
    }
    const rooms = new Map((await s.ctx.catalogueStore.get()).rooms.map((r) => [r.id, r.regionId]));
    for (const r of mine) expect(r.regionId).toBe(rooms.get(r.roomId!));

    // A host the buyer chose is kept: no other host is taken when it is full.
    const full = after.find((h) => h.gpuFree === 0)!;
    expect(json(await usageOrder(u.token, { gpuTypeId: 'rtx3090', hostId: full.id }))).toMatchObject({ code: 40920001 });
    await kit.settle(DELAYS.create + DELAYS.boot);
    for (const r of mine) await kit.act(u.token, r.id, 'release');
    await kit.settle(DELAYS.destroy);
  });

  it('keeps an order to the region the buyer asked for', async () => {
    const hosts = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.gpuTypeId, 'rtx3090'));
    const u = await kit.fundedUser('1000');
    const regionOf = new Map((await s.ctx.catalogueStore.get()).rooms.map((r) => [r.id, r.regionId]));
    const region = regionOf.get(hosts[0]!.roomId)!;
    const inRegion = hosts.filter((h) => regionOf.get(h.roomId) === region);
    const cards = inRegion.reduce((n, h) => n + h.gpuFree, 0);
    const answers = await Promise.all(Array.from({ length: cards + 2 }, () => usageOrder(u.token, { gpuTypeId: 'rtx3090', regionId: region })));
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(cards);
    for (const r of answers.filter((a) => a.statusCode !== 200)) expect(json(r)).toMatchObject({ code: 40920001 });
    for (const r of await instancesOf(u.user.id)) expect(r.regionId).toBe(region);
    await kit.settle(DELAYS.create + DELAYS.boot);
    for (const r of await instancesOf(u.user.id)) await kit.act(u.token, r.id, 'release');
    await kit.settle(DELAYS.destroy);
  });
});
