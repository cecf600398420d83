import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits, type Order, type UsageBill } from '@console/contract';
import { get, json, post, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, SEC, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { orders } from '../../db/schema.js';
import { diskHourCost, runCost } from '../instances/index.js';

const yuan = yuanToUnits;
const ORDER = '/order/api/v2.1/gpu/order';

describe('the bill of a post-paid order', () => {
  let s: TestServer;
  const k = instanceKit(() => s);
  instanceSuite((server) => {
    s = server;
  });

  it('itemises GPU time, no-card time and data-disk hours, adding up to what the ledger took; 完成时间 is the release', async () => {
    const u = await k.fundedUser('100');
    const before = await k.cash(u.user.id);
    // A name with a size in it ("4 GB") must not be read as the disk's size.
    const { id, order } = await k.running(u.token, { extra: { dataDiskGb: 120, name: '训练机 4 GB' } });
    const diskFrom = (await k.row(id)).diskBilledUntil!;
    await s.ctx.instanceBilling.diskTick(); // the first hour of the 70 GB beyond the free 50 GB
    const gpuStart = (await k.row(id)).meterSegment!;

    // While it bills, the order has no completion time.
    expect(json<Order>(await get(s.app, `${ORDER}/${order.orderUid}`, u.token))).toMatchObject({ status: 'Time', fulfilledAt: null });

    // 12 min 13 s with the card, in two ticks and the stop.
    s.clock.advance(10 * 60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    s.clock.advance(2 * 60 * SEC + 13 * SEC - DELAYS.stop);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    const gpuEnd = (await k.row(id)).stoppedAt!;

    // Then 31 min 7 s in no-card mode.
    await k.act(u.token, id, 'startNoCard');
    await k.settle(DELAYS.start);
    const noCardStart = (await k.row(id)).meterSegment!;
    s.clock.advance(25 * 60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    s.clock.advance(6 * 60 * SEC + 7 * SEC - DELAYS.stop);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    const noCardEnd = (await k.row(id)).stoppedAt!;

    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.diskTick(); // its second hour
    await k.act(u.token, id, 'release');
    await k.settle(DELAYS.destroy);
    const released = (await k.row(id)).releasedAt!;
    expect(released).not.toBeNull();

    const res = await get(s.app, `${ORDER}/${order.orderUid}/usage`, u.token);
    expect(res.statusCode, res.body).toBe(200);
    const bill = json<UsageBill>(res);
    const taken = before - (await k.cash(u.user.id));
    const charges = await s.ctx.ledger.orderCharges(u.user.id, order.orderUid, 'usage');
    const [row] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid));

    // Every line, and the lines add up to the ledger's total, to the 0.0001 yuan.
    expect(bill.lines.map((l) => [l.kind, l.label])).toEqual([
      ['dataDisk', '数据盘扩容'],
      ['gpu', 'GPU 运行'],
      ['noCard', '无卡模式运行'],
    ]);
    const sum = bill.lines.reduce((n, l) => n + BigInt(l.amount), 0n);
    expect(sum).toBe(taken);
    expect(sum).toBe(charges.reduce((n, c) => n + c.paid, 0n));
    expect(BigInt(bill.total)).toBe(taken);
    expect(row!.amount).toBe(taken);
    expect(bill.lines.reduce((n, l) => n + l.charges, 0)).toBe(charges.length);
    expect(bill.billing).toBe(false);

    const [disk, gpu, noCard] = bill.lines;
    expect(disk).toMatchObject({
      resource: '训练机 4 GB',
      detail: '70 GB × 2 小时',
      start: diskFrom.toISOString(),
      end: new Date(diskFrom.getTime() + 2 * HOUR).toISOString(),
      seconds: 7200,
      rate: String(70n * yuan('0.007')),
      rateUnit: '天',
      amount: String(diskHourCost(4900n, diskFrom) + diskHourCost(4900n, new Date(diskFrom.getTime() + HOUR))),
    });
    const gpuMs = BigInt(gpuEnd.getTime() - gpuStart.getTime());
    expect(gpu).toMatchObject({
      resource: '训练机 4 GB',
      detail: 'RTX 4090 × 1',
      start: gpuStart.toISOString(),
      end: gpuEnd.toISOString(),
      seconds: 12 * 60 + 13,
      rate: String(yuan('1.98')),
      rateUnit: '小时',
      amount: String(runCost(yuan('1.98'), gpuMs)),
    });
    const noCardMs = BigInt(noCardEnd.getTime() - noCardStart.getTime());
    expect(noCard).toMatchObject({
      detail: '无卡模式（不占用 GPU）',
      start: noCardStart.toISOString(),
      end: noCardEnd.toISOString(),
      seconds: 31 * 60 + 7,
      rate: String(yuan('0.1')),
      amount: String(runCost(yuan('0.1'), noCardMs)),
    });

    // 完成时间 is when the instance was released, not when it was ordered.
    const done = json<Order>(await get(s.app, `${ORDER}/${order.orderUid}`, u.token));
    expect(done).toMatchObject({ status: 'Success', fulfilledAt: released.toISOString() });
    expect(done.fulfilledAt).not.toBe(done.createdAt);
  });

  it('gives a run its bandwidth line: the segment at the higher bandwidth splits into the machine and the bandwidth, still adding up', async () => {
    const u = await k.fundedUser('100');
    const before = await k.cash(u.user.id);
    const placed = await post(
      s.app,
      '/infra/api/v2.1/order',
      { sizeId: 'ebz-c2m4', regionId: 'sh-a', imageId: 'win-server-2022', duration: 1, cycle: 'Usage' },
      u.token,
    );
    const order = json<Order>(placed);
    const id = json<Order>(await get(s.app, `/order/api/v2.1/order/${order.orderUid}`, u.token)).resourceId!;
    await k.settle(DELAYS.create);
    await k.settle(DELAYS.boot);
    s.clock.advance(HOUR);
    expect((await post(s.app, `/upgpu/api/v2.1/instances/${id}/bandwidth`, { bandwidthMbps: 20 }, u.token)).statusCode).toBe(200);
    await k.settle(2000);
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();

    const bill = json<UsageBill>(await get(s.app, `/order/api/v2.1/order/${order.orderUid}/usage`, u.token));
    expect(bill.billing).toBe(true);
    expect(bill.lines.map((l) => [l.kind, l.rate, l.seconds])).toEqual([
      ['run', String(yuan('0.30')), 3602],
      ['run', String(yuan('0.30')), 3600],
      ['bandwidth', String(15n * yuan('0.03')), 3600],
    ]);
    const [, machine, bandwidth] = bill.lines;
    // The second segment took ¥0.75 for its hour: ¥0.45 of it for the 15 Mbps beyond the included 5.
    expect(BigInt(machine!.amount) + BigInt(bandwidth!.amount)).toBe(runCost(yuan('0.75'), BigInt(HOUR)));
    expect(bandwidth!.amount).toBe(String(yuan('0.45')));
    expect(BigInt(bill.total)).toBe(before - (await k.cash(u.user.id)));
    expect(bill.lines.reduce((n, l) => n + BigInt(l.amount), 0n)).toBe(BigInt(bill.total));
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('answers 40020013 for an order that is not post-paid, and 404 for someone else’s', async () => {
    const u = await k.fundedUser('100');
    const { order } = await k.running(u.token, { cycle: 'Day' });
    expect(json(await get(s.app, `${ORDER}/${order.orderUid}/usage`, u.token))).toMatchObject({ code: 40020013 });
    const other = await k.fundedUser('1');
    expect(json(await get(s.app, `${ORDER}/${order.orderUid}/usage`, other.token))).toMatchObject({ code: 40400004 });
  });
});
