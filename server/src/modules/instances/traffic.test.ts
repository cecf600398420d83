/**
 * Bandwidth of e-commerce machines (TrafficUpgrade / TrafficDowngrade): validation, the live change
 * through the driver, post-paid metering at each bandwidth for the seconds it had it, prepaid upgrade
 * orders at the remaining hours (refunded when the driver fails), downgrades that return nothing,
 * renewals that price the bandwidth the machine has.
 */
import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { yuanToUnits, type BandwidthQuote, type ChangeBandwidthResponse, type Order, type Quote } from '@console/contract';
import { countRows, get, json, post, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, LIST, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceOperations, orders } from '../../db/schema.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import { runCost } from './meter.js';

const yuan = yuanToUnits;
/** ebz-c2m4: 5 Mbps included, ¥0.30/h post-paid, Day ¥7.20 at 0.95. Bandwidth ¥0.03 per Mbps-hour. */
const SIZE = { sizeId: 'ebz-c2m4', regionId: 'sh-a', imageId: 'win-server-2022', duration: 1 };
const MBPS_HOUR = yuan('0.03');
const BW_DELAY = 2000;

describe('bandwidth of e-commerce machines', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });

  const quote = (token: string, id: string, body: unknown) => post(s.app, `${LIST}/${id}/bandwidth/price`, body, token);
  const change = (token: string, id: string, body: unknown) => post(s.app, `${LIST}/${id}/bandwidth`, body, token);
  const pay = (token: string, uid: string) => post(s.app, `/order/api/v2.1/order/${uid}/pay`, { method: 'Balance' }, token);
  const bandwidthOps = async (id: string) =>
    (
      await s.ctx.db
        .select()
        .from(instanceOperations)
        .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, 'changeBandwidth')))
    ).length;
  const machineMbps = async (id: string) => (await sim.machine(id))?.bandwidthMbps;

  /** Buys an ebz-c2m4 (post-paid, or a day paid from the balance) and brings it to Running. */
  async function ebusiness(token: string, cycle: 'Usage' | 'Day'): Promise<string> {
    const res = await post(s.app, '/infra/api/v2.1/order', { ...SIZE, cycle }, token);
    expect(res.statusCode, res.body).toBe(200);
    const order = json<Order>(res);
    if (cycle === 'Day') expect(json(await pay(token, order.orderUid))).toMatchObject({ status: 'Success' });
    const [fresh] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', token)).items;
    const id = fresh!.resourceId!;
    await k.settle(DELAYS.create);
    await k.settle(DELAYS.boot);
    expect(await k.instance(token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 5, includedBandwidthMbps: 5, tasks: ['changeBandwidth'] });
    expect(await machineMbps(id)).toBe(5);
    return id;
  }

  it('refuses what cannot be: other categories, bandwidths off the steps, the same bandwidth, bad input — writing nothing', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Usage');
    const gpu = await k.running(u.token);
    const before = await countRows(s, 'orders');
    for (const [body, code] of [
      [{ bandwidthMbps: 7 }, 40026002],
      [{ bandwidthMbps: 5 }, 40026002],
      [{ bandwidthMbps: 3 }, 40026002],
      [{ bandwidthMbps: 200 }, 40026002],
      [{ bandwidthMbps: 0 }, 40000001],
      [{ bandwidthMbps: 10.5 }, 40000001],
      [{ bandwidthMbps: 'abc' }, 40000001],
      [{ bandwidthMbps: 100001 }, 40000001],
      [{}, 40000001],
    ] as const) {
      for (const call of [quote, change]) {
        const res = await call(u.token, id, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(json(res)).toMatchObject({ code });
      }
    }
    const onGpu = await change(u.token, gpu.id, { bandwidthMbps: 10 });
    expect(json(onGpu)).toMatchObject({ code: 40026001 });
    expect((await k.instance(u.token, gpu.id)).tasks).not.toContain('changeBandwidth');
    // Someone else's machine does not exist for this user; without a session: 401.
    const other = await k.fundedUser('10');
    expect((await change(other.token, id, { bandwidthMbps: 10 })).statusCode).toBe(404);
    expect((await change('', id, { bandwidthMbps: 10 })).statusCode).toBe(401);
    expect(await countRows(s, 'orders')).toBe(before);
    expect(await bandwidthOps(id)).toBe(0);
    expect((await k.instance(u.token, id)).status).toBe('Running');

    // Stopped, a machine without cards offers no no-card mode, and refuses to start in it; it can still change bandwidth.
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    const stopped = await k.instance(u.token, id);
    expect(stopped).toMatchObject({ status: 'Stopped', actions: ['start', 'release'] });
    expect(stopped.tasks).toContain('changeBandwidth');
    expect(stopped.tasks).not.toContain('migrate');
    expect(json(await k.act(u.token, id, 'startNoCard'))).toMatchObject({ code: 40020010 });
  });

  it('post-paid: changes live with nothing to pay; each second is metered at the bandwidth it had', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Usage');
    const cash0 = await k.cash(u.user.id);
    const ordersBefore = await countRows(s, 'orders');

    const q = json<BandwidthQuote>(await quote(u.token, id, { bandwidthMbps: 20 }));
    expect(q).toMatchObject({
      type: 'TrafficUpgrade',
      currentMbps: 5,
      newMbps: 20,
      includedMbps: 5,
      choices: [5, 10, 20, 30, 50, 100],
      prepaid: false,
      remainingHours: 0,
    });
    expect(q.pricePerMbpsHour).toBe(String(MBPS_HOUR));
    expect(q.hourlyPriceAfter).toBe(String(yuan('0.30') + 15n * MBPS_HOUR)); // ¥0.75/h
    expect(q.quote.total).toBe('0');

    s.clock.advance(HOUR);
    const res = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 20 }));
    expect(res.order).toBeNull();
    expect(res.instance).toMatchObject({ status: 'Operating', bandwidthMbps: 5 });
    // Operating: nothing else can be done, not even a second change.
    expect(json(await change(u.token, id, { bandwidthMbps: 30 }))).toMatchObject({ code: 40020010 });
    await k.settle(BW_DELAY);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 20, hourlyPrice: String(yuan('0.75')) });
    expect(await machineMbps(id)).toBe(20);

    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    // 1 h 2 s at ¥0.30/h until the driver applied it, then 1 h at ¥0.75/h.
    const expected = runCost(yuan('0.30'), BigInt(HOUR + BW_DELAY)) + runCost(yuan('0.75'), BigInt(HOUR));
    expect(cash0 - (await k.cash(u.user.id))).toBe(expected);
    expect(await countRows(s, 'orders')).toBe(ordersBefore);

    // Back down to what the size includes: the rate goes back to the size's price.
    expect(json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 5 })).order).toBeNull();
    await k.settle(BW_DELAY);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 5, hourlyPrice: String(yuan('0.30')) });
    const log = json<{ items: { action: string; actionLabel?: string; detail: string }[] }>(
      await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, u.token),
    );
    expect(log.items.filter((o) => o.action === 'changeBandwidth').map((o) => o.detail)).toEqual([
      '按量计费：20 Mbps → 5 Mbps，生效后 ¥0.30/小时',
      '按量计费：5 Mbps → 20 Mbps，生效后 ¥0.75/小时',
    ]);
  });

  it('prepaid: an upgrade is an order for the hours left, applied once when paid; renewals price the new bandwidth; a downgrade returns nothing', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Day');
    s.clock.advance(HOUR + 1000); // 22 h 59 m … left: 23 whole hours counted
    const q = json<BandwidthQuote>(await quote(u.token, id, { bandwidthMbps: 10 }));
    expect(q).toMatchObject({ type: 'TrafficUpgrade', prepaid: true, hourlyPriceAfter: '0' });
    expect(q.remainingHours).toBe(23);
    expect(q.quote.total).toBe(String(5n * MBPS_HOUR * 23n)); // ¥3.45

    const res = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 10 }));
    expect(res.order).toMatchObject({ type: 'TrafficUpgrade', status: 'Unpaid', amount: String(5n * MBPS_HOUR * 23n) });
    expect(res.instance).toMatchObject({ status: 'Running', bandwidthMbps: 5 });
    const cash0 = await k.cash(u.user.id);
    expect(json(await pay(u.token, res.order!.orderUid))).toMatchObject({ status: 'Success' });
    expect(cash0 - (await k.cash(u.user.id))).toBe(5n * MBPS_HOUR * 23n);
    await k.settle(BW_DELAY);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 10 });
    expect(await machineMbps(id)).toBe(10);
    // Fulfilling the paid order again changes nothing.
    const [row] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, res.order!.orderUid));
    await s.ctx.instances.fulfil(row!);
    expect(await bandwidthOps(id)).toBe(1);

    // A renewal prices the 5 Mbps beyond the included for the whole day.
    const renewal = json<Quote>(await post(s.app, `${LIST}/${id}/renew/price`, { duration: 1 }, u.token));
    expect(renewal.lines.find((l) => l.kind === 'bandwidth')).toMatchObject({ quantity: 5, amount: String(5n * MBPS_HOUR * 24n) });

    // Down again: the unused whole hours of the upgrade come back as a TrafficDowngrade order, once the driver applied it.
    // Paid for 23 h; 2 s after paying, 22 whole hours are left of it (and until expiry): 34500 × 22 / 23.
    const down = json<BandwidthQuote>(await quote(u.token, id, { bandwidthMbps: 5 }));
    expect(down).toMatchObject({ type: 'TrafficDowngrade', prepaid: true, refund: '33000' });
    expect(down.quote.total).toBe('0');
    expect(down.rule).toMatch(/按剩余整小时数退还/);
    const cash1 = await k.cash(u.user.id);
    expect(json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 5 })).order).toBeNull();
    expect(await k.cash(u.user.id)).toBe(cash1); // nothing before the driver applied it
    await k.settle(BW_DELAY);
    expect(await k.instance(u.token, id)).toMatchObject({ bandwidthMbps: 5 });
    expect((await k.cash(u.user.id)) - cash1).toBe(33000n);
    const refunds = await s.ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.type, 'TrafficDowngrade'), eq(orders.userId, u.user.id)));
    expect(refunds.map((o) => [o.status, o.amount])).toEqual([['Refunded', 33000n]]);
    // Replaying the driver's events gives nothing more; the upgrade's Mbps cannot come back twice.
    await s.ctx.reconciler.tick();
    expect((await k.cash(u.user.id)) - cash1).toBe(33000n);
    const renewed = json<Quote>(await post(s.app, `${LIST}/${id}/renew/price`, { duration: 1 }, u.token));
    expect(renewed.lines.some((l) => l.kind === 'bandwidth')).toBe(false);
  });

  it('prepaid: several downgrades return each upgrade’s Mbps once, newest upgrade first, and never more than was paid', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Day'); // 24 whole hours left
    const cash0 = await k.cash(u.user.id);
    const up = async (mbps: number) => {
      const res = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: mbps }));
      expect(json(await pay(u.token, res.order!.orderUid))).toMatchObject({ status: 'Success' });
      await k.settle(BW_DELAY);
    };
    const down = async (mbps: number) => {
      expect(json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: mbps })).order).toBeNull();
      await k.settle(BW_DELAY);
    };
    // Quotes count a started hour (ceil), refunds only whole hours left (floor); the delays move the clock by seconds.
    await up(50); // at 7 s: +45 Mbps for 24 h = 45 × 300 × 24 = 324000
    await down(20); // applied at 11 s: 30 of them back for 23 h = 324000 × 30 × 23 / (45 × 24) = 207000
    await up(50); // at 11 s: +30 Mbps for 24 h = 216000
    await down(5); // newest first: the second's 30 for 23 h (207000), then the first's last 15 for 23 h (324000 × 15 × 23 / 1080 = 103500)
    expect(cash0 - (await k.cash(u.user.id))).toBe(324000n - 207000n + 216000n - 207000n - 103500n);
    const rows = await s.ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.type, 'TrafficDowngrade'), eq(orders.userId, u.user.id)));
    expect(rows.map((o) => o.amount).sort()).toEqual([207000n, 310500n]);
    // At what the size includes nothing is left to return: a further quote from 5 Mbps is refused (no lower step).
    expect(json(await quote(u.token, id, { bandwidthMbps: 5 }))).toMatchObject({ code: 40026002 });
  });

  it('prepaid: when the driver fails the change, the upgrade order is refunded and the bandwidth stays', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Day');
    const cash0 = await k.cash(u.user.id);
    const res = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 50 }));
    await sim.injectFault({ kind: 'changeBandwidth', count: 1, message: '限速规则下发失败' });
    expect(json(await pay(u.token, res.order!.orderUid))).toMatchObject({ status: 'Success' });
    expect(await k.cash(u.user.id)).toBeLessThan(cash0);
    await k.settle(BW_DELAY);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 5 });
    const [row] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, res.order!.orderUid));
    expect(row!.status).toBe('Refunded');
    expect(await k.cash(u.user.id)).toBe(cash0);
  });

  it('a paid upgrade whose instance changed meanwhile is refunded instead of applied', async () => {
    const u = await k.fundedUser('100');
    const id = await ebusiness(u.token, 'Day');
    const first = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 10 }));
    expect(json(await pay(u.token, first.order!.orderUid))).toMatchObject({ status: 'Success' });
    await k.settle(BW_DELAY);
    // An upgrade priced from 10 Mbps waits unpaid while the machine goes down to 5 Mbps.
    const second = json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 50 }));
    expect(second.order).toMatchObject({ status: 'Unpaid' });
    expect(json<ChangeBandwidthResponse>(await change(u.token, id, { bandwidthMbps: 5 })).order).toBeNull();
    await k.settle(BW_DELAY);
    const cash0 = await k.cash(u.user.id);
    expect(json<Order>(await pay(u.token, second.order!.orderUid)).status).toBe('Refunded');
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', bandwidthMbps: 5 });
    expect(await k.cash(u.user.id)).toBe(cash0);
    expect(await bandwidthOps(id)).toBe(2);
  });
});
