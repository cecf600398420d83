import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { API, type StorageCharge, type DataDiskPage, type DiskExpansionQuote, type ExpandDiskResponse, type Order, type UsageBill } from '@console/contract';
import { countRows, get, json, post, type TestServer } from '../../../test/harness.js';
import { DELAYS, GPU_ORDER, HOUR, LIST, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceOperations, instances, orders } from '../../db/schema.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import { diskHourCost } from './meter.js';

const DAY = 86_400_000n;
const DISKS = '/upgpu/api/v2.1/disks';

describe('data disks', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });

  const quote = (token: string, id: string, body: unknown) => post(s.app, `${LIST}/${id}/disk/price`, body, token);
  const expand = (token: string, id: string, body: unknown) => post(s.app, `${LIST}/${id}/disk`, body, token);
  const pay = (token: string, uid: string) => post(s.app, `/order/api/v2.1/gpu/order/${uid}/pay`, { method: 'Balance' }, token);
  const resizeOps = async (id: string) =>
    (
      await s.ctx.db
        .select()
        .from(instanceOperations)
        .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, 'resizeDisk')))
    ).length;

  it('lists the data disks of the account’s instances with size, free part, usage and daily cost', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token, { extra: { dataDiskGb: 120 } });
    const page = json<DataDiskPage>(await get(s.app, DISKS, u.token));
    expect(page).toMatchObject({ total: 1, page: 1, pageSize: 10, pricePerGbDay: '70' });
    const disk = page.items[0]!;
    expect(disk).toMatchObject({
      instanceId: id,
      sizeGb: 120,
      freeGb: 50,
      chargeableGb: 70,
      dailyPrice: String(70n * 70n),
      prepaid: false,
      maxGb: 800,
      expandBlocked: null,
      status: 'Stopped',
    });
    expect(disk.usedGb).toBeGreaterThanOrEqual(0);
    expect(disk.usedGb).toBeLessThanOrEqual(120);
    // Running: it says why it cannot be expanded now.
    await k.act(u.token, id, 'start');
    await k.settle(DELAYS.start);
    expect(json<DataDiskPage>(await get(s.app, DISKS, u.token)).items[0]!.expandBlocked).toMatch(/请先关机/);
    expect(json(await get(s.app, `${DISKS}?pageSize=0`, u.token))).toMatchObject({ code: 40000001 });
    expect((await get(s.app, DISKS)).statusCode).toBe(401);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('expands a post-paid disk at once, with no order; the hourly charge follows the new size', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    expect((await k.instance(u.token, id)).dataDiskGb).toBe(50); // the free size, though none was asked for
    const ordersBefore = await countRows(s, 'orders');

    // Running: stop first. Bad sizes: nothing written.
    const running = await expand(u.token, id, { dataDiskGb: 200 });
    expect(running.statusCode).toBe(400);
    expect(json(running)).toMatchObject({ code: 40021001 });
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    for (const [body, code] of [
      [{ dataDiskGb: 50 }, 40021002],
      [{ dataDiskGb: 20 }, 40021002],
      [{ dataDiskGb: 801 }, 40021002],
      [{ dataDiskGb: 99999 }, 40000001],
      [{ dataDiskGb: 'abc' }, 40000001],
      [{ dataDiskGb: 100.5 }, 40000001],
      [{}, 40000001],
    ] as const) {
      const res = await expand(u.token, id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res)).toMatchObject({ code });
      expect(json(await quote(u.token, id, body))).toMatchObject({ code });
    }
    expect((await k.instance(u.token, id)).status).toBe('Stopped');
    expect(await resizeOps(id)).toBe(0);

    const q = json<DiskExpansionQuote>(await quote(u.token, id, { dataDiskGb: 200 }));
    expect(q).toMatchObject({ currentGb: 50, newGb: 200, freeGb: 50, maxGb: 800, prepaid: false, remainingHours: 0, dailyPriceAfter: String(150n * 70n) });
    expect(q.quote.total).toBe('0');

    const res = json<ExpandDiskResponse>(await expand(u.token, id, { dataDiskGb: 200 }));
    expect(res.order).toBeNull();
    expect(res.instance).toMatchObject({ status: 'Operating', dataDiskGb: 50 });
    expect(await countRows(s, 'orders')).toBe(ordersBefore);
    await k.settle(DELAYS.resizeDisk);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopped', dataDiskGb: 200, diskDailyPrice: String(150n * 70n) });
    expect((await sim.overview()).machines.find((m) => m.instanceId === id)!.diskGb).toBe(200);

    // The data disk is now beyond the free size: its first hour of 150 GB is charged, stopped or not —
    // 1/24 of the ¥1.05 a day, not the day up front.
    const before = await k.cash(u.user.id);
    const billedFrom = (await k.row(id)).diskBilledUntil!;
    await s.ctx.instanceBilling.diskTick();
    const hour1 = diskHourCost(150n * 70n, billedFrom);
    expect([437n, 438n]).toContain(hour1);
    expect(before - (await k.cash(u.user.id))).toBe(hour1);
    expect((await k.row(id)).diskBilledUntil).toEqual(new Date(billedFrom.getTime() + HOUR));
    // Within the hour another tick charges nothing more.
    s.clock.advance(HOUR / 4);
    await s.ctx.instanceBilling.diskTick();
    expect(before - (await k.cash(u.user.id))).toBe(hour1);
    // …and the storage bill detail lists that hour, for this account only.
    const bill = json<{ items: StorageCharge[]; total: number }>(await get(s.app, API.storageCharges, u.token));
    expect(bill.total, JSON.stringify(bill)).toBe(1);
    expect(bill.items[0]).toMatchObject({
      instanceId: id,
      instanceName: (await k.instance(u.token, id)).name,
      amount: String(hour1),
      periodStart: billedFrom.toISOString(),
    });
    expect(bill.items[0]!.memo).toMatch(/150 GB（1 小时，按 ¥1\.05\/天）$/);
    // Half an hour in, a second expansion pays the difference for the rest of the hour already charged.
    s.clock.advance(HOUR / 4);
    await expand(u.token, id, { dataDiskGb: 300 });
    await k.settle(DELAYS.resizeDisk);
    expect((await k.instance(u.token, id)).dataDiskGb).toBe(300);
    const rest = (100n * 70n * BigInt(HOUR / 2 - DELAYS.resizeDisk) + DAY - 1n) / DAY;
    expect(before - (await k.cash(u.user.id))).toBe(hour1 + rest);
    expect(await resizeOps(id)).toBe(2);
    // The next hour is the larger disk's.
    s.clock.advance(HOUR / 2);
    await s.ctx.instanceBilling.diskTick();
    expect(before - (await k.cash(u.user.id))).toBe(hour1 + rest + diskHourCost(250n * 70n, new Date(billedFrom.getTime() + HOUR)));
    await k.act(u.token, id, 'release');
    await k.settle(DELAYS.destroy);
    const stranger = await k.fundedUser('1');
    expect(json<{ total: number }>(await get(s.app, API.storageCharges, stranger.token)).total).toBe(0);
  });

  it('charges a post-paid disk by the hour: expanding and releasing a minute later costs that hour, not a day', async () => {
    const u = await k.fundedUser('50');
    const { id, order } = await k.stopped(u.token);
    const before = await k.cash(u.user.id);
    await expand(u.token, id, { dataDiskGb: 200 });
    await k.settle(DELAYS.resizeDisk);
    const billedFrom = (await k.row(id)).diskBilledUntil!;
    await s.ctx.instanceBilling.diskTick();
    s.clock.advance(60 * 1000);
    await k.act(u.token, id, 'release');
    await k.settle(DELAYS.destroy);
    // Nothing more, however long after.
    s.clock.advance(48 * HOUR);
    await s.ctx.instanceBilling.diskTick();
    const spent = before - (await k.cash(u.user.id));
    expect(spent).toBe(diskHourCost(150n * 70n, billedFrom));
    expect(spent).toBeLessThanOrEqual((150n * 70n + 23n) / 24n);
    // The order's bill says it in hours, and its lines add up to what was taken.
    const usage = json<UsageBill>(await get(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/usage`, u.token));
    const disk = usage.lines.find((l) => l.kind === 'dataDisk')!;
    expect(disk).toMatchObject({ detail: '150 GB × 1 小时', rate: String(150n * 70n), rateUnit: '天', seconds: 3600, amount: String(spent) });
    expect(usage.lines.reduce((n, l) => n + BigInt(l.amount), 0n)).toBe(BigInt(usage.total));
  });

  it('charges no disk hours for a post-paid machine that never came up', async () => {
    const u = await k.fundedUser('50');
    const before = await k.cash(u.user.id);
    await sim.injectFault({ kind: 'create', message: '宿主机磁盘故障' });
    const res = await post(
      s.app,
      GPU_ORDER,
      { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: await k.pickHost(), cycle: 'Usage', duration: 1, dataDiskGb: 120 },
      u.token,
    );
    expect(res.statusCode, res.body).toBe(200);
    await k.settle(DELAYS.create);
    const [row] = await s.ctx.db.select().from(instances).where(eq(instances.userId, u.user.id));
    expect(row).toMatchObject({ status: 'Failed', diskBilledUntil: null });
    s.clock.advance(3 * HOUR);
    await s.ctx.instanceBilling.diskTick();
    expect(await k.cash(u.user.id)).toBe(before);
  });

  it('makes any 24 hours in a row of a disk add up to its daily price exactly', () => {
    for (const daily of [1n, 23n, 70n, 4900n, 10500n, 17500n, 123_456_789n]) {
      for (const offset of [0, 1, 7 * 60_000 + 13, HOUR - 1, 5 * HOUR + 17]) {
        let sum = 0n;
        for (let h = 0; h < 24; h++) {
          const cost = diskHourCost(daily, new Date(Date.UTC(2026, 10, 23) + offset + h * HOUR));
          expect(cost === daily / 24n || cost === daily / 24n + 1n).toBe(true);
          sum += cost;
        }
        expect(sum, `${daily} @ ${offset}`).toBe(daily);
      }
    }
  });

  it('prices a prepaid expansion pro rata for the time left, pays it as an order and expands once however often it is fulfilled', async () => {
    const u = await k.fundedUser('200');
    const { id } = await k.stopped(u.token, { cycle: 'Day' });
    s.clock.advance(6 * HOUR);
    const q = json<DiskExpansionQuote>(await quote(u.token, id, { dataDiskGb: 150 }));
    // 100 GB more × ¥0.007 per GB-day × 18 of 24 hours left.
    expect(q).toMatchObject({ prepaid: true, remainingHours: 18, currentGb: 50, newGb: 150, dailyPriceAfter: '0' });
    expect(q.quote.total).toBe('5250');
    expect(q.quote.lines[0]).toMatchObject({ kind: 'dataDisk', quantity: 100, unitPrice: '70', amount: '5250' });

    const res = json<ExpandDiskResponse>(await expand(u.token, id, { dataDiskGb: 150, total: '0' }));
    expect(res.order).toMatchObject({ type: 'ChangeDataDisk', status: 'Unpaid', amount: '5250', kind: 'Personal' });
    expect(res.instance.status).toBe('Stopped'); // nothing happens before it is paid
    const before = await k.cash(u.user.id);
    expect(json(await pay(u.token, res.order!.orderUid))).toMatchObject({ status: 'Success' });
    expect(before - (await k.cash(u.user.id))).toBe(5250n);
    expect((await k.instance(u.token, id)).status).toBe('Operating');

    // Paying again is refused; fulfilling again (crash recovery, a second poll) expands nothing more.
    expect(json(await pay(u.token, res.order!.orderUid))).toMatchObject({ code: 40020005 });
    const [row] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, res.order!.orderUid));
    await s.ctx.instances.fulfil(row!);
    await s.ctx.orders.fulfil({ ...row!, status: 'Paid' });
    expect(await resizeOps(id)).toBe(1);
    expect(await sim.pendingOf([id])).toHaveLength(1);
    await k.settle(DELAYS.resizeDisk);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopped', dataDiskGb: 150, diskDailyPrice: '0' });
    await s.ctx.instances.fulfil(row!);
    expect(await resizeOps(id)).toBe(1);
    expect((await k.instance(u.token, id)).dataDiskGb).toBe(150);
    expect(before - (await k.cash(u.user.id))).toBe(5250n);

    // Renewing now prices the bigger disk.
    const renewal = json<{ lines: { kind: string; quantity: number }[] }>(await post(s.app, `${LIST}/${id}/renew/price`, { duration: 1 }, u.token));
    expect(renewal.lines.find((l) => l.kind === 'dataDisk')).toMatchObject({ quantity: 100 });
  });

  it('refunds a paid expansion when the instance was started again before the payment', async () => {
    const u = await k.fundedUser('200');
    const { id } = await k.stopped(u.token, { cycle: 'Day' });
    const { order } = json<ExpandDiskResponse>(await expand(u.token, id, { dataDiskGb: 100 }));
    await k.act(u.token, id, 'start');
    const before = await k.cash(u.user.id);
    expect(json(await pay(u.token, order!.orderUid))).toMatchObject({ status: 'Refunded' });
    expect(await k.cash(u.user.id)).toBe(before);
    const o = json<Order>(await get(s.app, `/order/api/v2.1/gpu/order/${order!.orderUid}`, u.token));
    expect(o).toMatchObject({ status: 'Refunded' });
    expect(o.failReason).toMatch(/请先关机/);
    expect(await resizeOps(id)).toBe(0);
    await k.settle(DELAYS.start);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', dataDiskGb: 50 });
  });

  it('refunds a paid expansion the driver fails, and the instance goes back Stopped with the reason', async () => {
    const u = await k.fundedUser('200');
    const { id } = await k.stopped(u.token, { cycle: 'Day' });
    const { order } = json<ExpandDiskResponse>(await expand(u.token, id, { dataDiskGb: 300 }));
    await sim.injectFault({ kind: 'resizeDisk', message: '存储集群容量不足' });
    const before = await k.cash(u.user.id);
    expect(json(await pay(u.token, order!.orderUid))).toMatchObject({ status: 'Success' });
    expect(await k.cash(u.user.id)).toBeLessThan(before);
    await k.settle(DELAYS.resizeDisk);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopped', dataDiskGb: 50, lastError: '存储集群容量不足' });
    expect(await k.cash(u.user.id)).toBe(before);
    expect(json(await get(s.app, `/order/api/v2.1/gpu/order/${order!.orderUid}`, u.token))).toMatchObject({
      status: 'Refunded',
      failReason: '存储集群容量不足',
    });
    const outbox = json<{ items: { text: string }[] }>(await get(s.app, `/dev/outbox?to=${u.mobile}`));
    expect(outbox.items[0]!.text).toMatch(/扩容失败.*已原路退回/);
  });

  it('refuses an expired prepaid instance (renew first) and other accounts’ instances', async () => {
    const u = await k.fundedUser('200');
    const { id } = await k.stopped(u.token, { cycle: 'Day' });
    const stranger = await k.fundedUser('1');
    expect(json(await quote(stranger.token, id, { dataDiskGb: 100 }))).toMatchObject({ code: 40400004 });
    expect(json(await expand(stranger.token, id, { dataDiskGb: 100 }))).toMatchObject({ code: 40400004 });
    s.clock.advance(25 * HOUR);
    expect(json(await quote(u.token, id, { dataDiskGb: 100 }))).toMatchObject({ code: 40020011 });
    expect(json(await expand(u.token, id, { dataDiskGb: 100 }))).toMatchObject({ code: 40020011 });
    expect((await k.instance(u.token, id)).tasks).toEqual(['saveImage']);
  });
});
