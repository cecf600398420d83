import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { yuanToUnits, type Instance, type Order } from '@console/contract';
import { countRows, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { catalogueHosts, instances, orders, users } from '../../db/schema.js';
import { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import { checkLedger } from '../ledger/check.js';
import { runCost } from './meter.js';
import { pendingOpColumns } from './tasks.js';

const yuan = yuanToUnits;
const SEC = 1000;
const HOUR = 3600 * SEC;
const LIST = '/upgpu/api/v2.1/instances';
const GPU_ORDER = '/infra/api/v2.1/gpu/order';
/** Simulated delays (ms) these tests run with. */
const DELAYS = { create: 4000, boot: 3000, start: 3000, stop: 2000, restart: 4000, destroy: 2000 };

describe('instances', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
        BILLING_TICK_SECONDS: '60',
      },
    });
    sim = s.ctx.drivers.compute as SimulatedComputeDriver;
  });
  afterAll(async () => s.close());
  afterEach(async () => {
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });

  async function fundedUser(amount: string) {
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuan(amount) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuan(amount) },
      ],
    });
    return u;
  }
  const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
  const gpuFree = async (hostId: string) => (await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, hostId)))[0]!.gpuFree;
  const row = async (id: string) => (await s.ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!;
  async function settle(ms: number) {
    s.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  async function only(token: string, category = 'Gpu'): Promise<Instance> {
    const list = json<{ items: Instance[] }>(await get(s.app, `${LIST}?filterBy=category,${category}`, token));
    expect(list.items).toHaveLength(1);
    return list.items[0]!;
  }
  /** Where the next RTX 4090 would be placed (the quote's placement). */
  async function pickHost(): Promise<string> {
    const q = json<{ placement: { hostId: string } }>(
      await post(s.app, '/infra/api/v2.1/gpu/order/price', { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1 }),
    );
    return q.placement.hostId;
  }
  const act = (token: string, id: string, action: string) => post(s.app, `${LIST}/${id}/${action}`, undefined, token);

  /** Buys a post-paid RTX 4090 and brings it to Running. */
  async function runningUsageInstance(token: string, opts: { hourly?: bigint } = {}) {
    const res = await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, token);
    expect(res.statusCode, res.body).toBe(200);
    const order = json<Order>(res);
    const inst = await only(token);
    if (opts.hourly) await s.ctx.db.update(instances).set({ hourlyPrice: opts.hourly }).where(eq(instances.id, inst.id));
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    return { order, id: inst.id };
  }

  it('buys a post-paid GPU instance that goes Pending → Starting → Running, holding a card of its host', async () => {
    const u = await fundedUser('100');
    const free = await gpuFree('bj-b-1-h03');
    const res = await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: 'bj-b-1-h03', cycle: 'Usage', duration: 1, name: '训练机' }, u.token);
    expect(json<Order>(res)).toMatchObject({ type: 'Usage', status: 'Time', amount: '0', description: 'RTX 4090 × 1 · 按量计费' });
    let inst = await only(u.token);
    expect(inst).toMatchObject({ name: '训练机', status: 'Pending', gpuCount: 1, actions: [], access: null, hourlyPrice: String(yuan('1.98')) });
    // The detail names the order that bills it (linked from the page).
    expect(json<Instance>(await get(s.app, `${LIST}/${inst.id}`, u.token)).orderUid).toBe(json<Order>(res).orderUid);
    expect(inst.orderUid).toBe(json<Order>(res).orderUid);
    expect(await gpuFree('bj-b-1-h03')).toBe(free - 1);

    await settle(DELAYS.create - 1);
    expect((await only(u.token)).status).toBe('Pending');
    await settle(1);
    inst = await only(u.token);
    expect(inst.status).toBe('Starting');
    expect(inst.access?.sshCommand).toMatch(/^ssh -p \d+ root@connect\.bj-b\.gpu\.local$/);
    // The simulated fleet's machines are not behind the console's SSH gateway: no key login offered.
    expect(inst.access?.sshKeyCommand).toBeNull();
    await settle(DELAYS.boot);
    inst = await only(u.token);
    expect(inst).toMatchObject({ status: 'Running', actions: ['stop', 'restart'] });
    expect(inst.access!.sshPassword).toMatch(/^[A-Za-z0-9]{16}$/);

    const log = json<{ items: { action: string; toStatus: string; actorName: string }[] }>(
      await get(s.app, `/api/v1/operation/logs?filterBy=instance,${inst.id}`, u.token),
    );
    expect(log.items.map((i) => i.toStatus)).toEqual(['Running', 'Starting', 'Pending']);
    expect(log.items[2]!.actorName).toMatch(/^139\*{4}\d{4}$/);
  });

  it('charges 2 h 30 m at ¥1.58/h exactly ¥3.95, however the run is cut into ticks', async () => {
    expect(runCost(yuan('1.58'), 9000n * 1000n)).toBe(yuan('3.95'));
    const u = await fundedUser('10');
    const { id, order } = await runningUsageInstance(u.token, { hourly: yuan('1.58') });
    const before = await cash(u.user.id);
    // Irregular ticks: 7 min, 1 h 3 min 11 s, 19 s, then the rest up to the stop request.
    for (const ms of [7 * 60 * SEC, HOUR + 3 * 60 * SEC + 11 * SEC, 19 * SEC]) {
      s.clock.advance(ms);
      await s.ctx.instanceBilling.meterTick();
    }
    s.clock.advance(2.5 * HOUR - (7 * 60 * SEC + HOUR + 3 * 60 * SEC + 11 * SEC + 19 * SEC) - DELAYS.stop);
    expect((await act(u.token, id, 'stop')).statusCode).toBe(200);
    expect((await only(u.token)).status).toBe('Stopping');
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Stopped');
    expect(before - (await cash(u.user.id))).toBe(yuan('3.95'));
    const [o] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid));
    expect(o).toMatchObject({ status: 'Time', amount: yuan('3.95') });
    // Stopped: nothing more is charged, the card went back to the host.
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect(before - (await cash(u.user.id))).toBe(yuan('3.95'));
    expect((await row(id)).gpuHeld).toBe(0);
  });

  it('charges a tick once when it is repeated or run twice at the same time', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    const before = await cash(u.user.id);
    s.clock.advance(HOUR);
    await Promise.all([s.ctx.instanceBilling.meterTick(), s.ctx.instanceBilling.meterTick()]);
    await s.ctx.instanceBilling.meterTick();
    expect(before - (await cash(u.user.id))).toBe(yuan('1.98'));
    expect((await row(id)).meterCharged).toBe(yuan('1.98'));
  });

  it('charges gift credit before cash, and cash for what the gift credit does not cover', async () => {
    const u = await fundedUser('10');
    await s.ctx.db.transaction((tx) =>
      s.ctx.gifts.grant(tx, { userId: u.user.id, amount: yuan('1'), source: 'test', validDays: 30, key: `gift-${randomUUID()}`, memo: '测试赠送' }),
    );
    await runningUsageInstance(u.token);
    const before = await s.ctx.ledger.balances(u.user.id);
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    const after = await s.ctx.ledger.balances(u.user.id);
    expect(before.gift - after.gift).toBe(yuan('1'));
    expect(before.cash - after.cash).toBe(yuan('0.98'));
  });

  it('stops the instance when the balance runs out, never below zero, and collects the arrears before the next start', async () => {
    const u = await fundedUser('2');
    const { id } = await runningUsageInstance(u.token);
    s.clock.advance(HOUR + 10 * 60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    expect(await cash(u.user.id)).toBe(0n);
    const r = await row(id);
    expect(r.status).toBe('Stopping');
    expect(r.arrears).toBeGreaterThan(0n);
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Stopped');
    const notices = json<{ items: { text: string }[] }>(await get(s.app, `/dev/outbox?to=${u.mobile}`));
    expect(notices.items[0]!.text).toMatch(/余额不足.*已自动关机/);

    const refused = await act(u.token, id, 'start');
    expect(json(refused)).toMatchObject({ code: 40011002 });
    expect((await only(u.token)).status).toBe('Stopped');
  });

  it('refuses an action the state machine does not allow, with a code, changing nothing', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    for (const action of ['start', 'startNoCard', 'release']) {
      const res = await act(u.token, id, action);
      expect(res.statusCode).toBe(400);
      expect(json(res)).toMatchObject({ code: 40020010 });
    }
    expect((await only(u.token)).status).toBe('Running');
    expect(json(await act(u.token, id, 'explode'))).toMatchObject({ code: 40000001 });
    expect(json(await act(u.token, 'not-a-uuid', 'stop'))).toMatchObject({ code: 40000001 });
    expect(json(await put(s.app, `${LIST}/${id}/name`, { name: 'x'.repeat(31) }, u.token))).toMatchObject({ code: 40000001 });
    const stranger = await fundedUser('1');
    expect(json(await act(stranger.token, id, 'stop'))).toMatchObject({ code: 40400004 });
    expect((await only(u.token)).status).toBe('Running');
  });

  it('restarts, renames and resets the password', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    const oldPassword = (await only(u.token)).access!.sshPassword;
    expect(json<Instance>(await act(u.token, id, 'restart')).status).toBe('Restarting');
    await settle(DELAYS.restart);
    expect((await only(u.token)).status).toBe('Running');
    expect(json<Instance>(await put(s.app, `${LIST}/${id}/name`, { name: '  推理服务 ' }, u.token)).name).toBe('推理服务');
    const reset = json<Instance>(await put(s.app, `${LIST}/${id}/password`, undefined, u.token));
    expect(reset.access!.sshPassword).not.toBe(oldPassword);
  });

  it('offers no-card mode when the host has no free card, and stops it through Shutdowning into Shutdown', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
    const host = (await row(id)).hostId!;
    const free = await gpuFree(host);
    await s.ctx.db.update(catalogueHosts).set({ gpuFree: 0 }).where(eq(catalogueHosts.id, host));
    const busy = await act(u.token, id, 'start');
    expect(json(busy)).toMatchObject({ code: 40920002 });
    expect((await only(u.token)).status).toBe('Stopped');

    // The owner sees what the machine gets in that mode: the operator's reduced CPU and memory (catalogue settings).
    expect(json<Instance>(await act(u.token, id, 'startNoCard'))).toMatchObject({ status: 'Starting', noCard: true, noCardSpec: '0.5 核 CPU / 2 GB 内存' });
    await settle(DELAYS.start);
    expect((await only(u.token)).status).toBe('Running');
    expect((await row(id)).meterRate).toBe(yuan('0.1'));
    expect(json<Instance>(await act(u.token, id, 'stop')).status).toBe('Shutdowning');
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Shutdown');
    await s.ctx.db.update(catalogueHosts).set({ gpuFree: free }).where(eq(catalogueHosts.id, host));
  });

  it('refunds the order when the machine cannot be created, and gives the card back', async () => {
    const u = await fundedUser('100');
    const before = await cash(u.user.id);
    const host = await pickHost();
    const free = await gpuFree(host);
    await sim.injectFault({ kind: 'create', message: '宿主机磁盘故障' });
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: host, cycle: 'Day', duration: 1 }, u.token));
    const paid = await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, u.token);
    expect(json(paid), paid.body).toMatchObject({ status: 'Success' });
    expect(await cash(u.user.id)).toBeLessThan(before);
    await settle(DELAYS.create);
    const inst = await only(u.token);
    expect(inst).toMatchObject({ status: 'Failed', lastError: '宿主机磁盘故障', actions: ['release'] });
    expect(await cash(u.user.id)).toBe(before);
    expect(json(await get(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}`, u.token))).toMatchObject({ status: 'Refunded' });
    expect(await gpuFree(host)).toBe(free);
  });

  it('moves instances of a lost host to Unknown without charging, and back when the host returns', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    s.clock.advance(10 * 60 * SEC);
    const host = (await row(id)).hostId!;
    await sim.loseHost(host);
    await s.ctx.reconciler.tick();
    expect(await only(u.token)).toMatchObject({ status: 'Unknown' });
    const afterLoss = await cash(u.user.id);
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect(await cash(u.user.id)).toBe(afterLoss);
    await sim.restoreHost(host);
    await s.ctx.reconciler.tick();
    expect((await only(u.token)).status).toBe('Running');
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect(afterLoss - (await cash(u.user.id))).toBe(yuan('1.98'));
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
  });

  it('sends an operation again when the driver never reported on it', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    // The stop reaches the server but not the driver (a network failure): the row says Stopping, the driver knows nothing.
    await s.ctx.db
      .update(instances)
      .set({ status: 'Stopping', ...pendingOpColumns({ opId: `stop:${id}:lost`, kind: 'stop', from: 'Running', at: s.clock.now() }) })
      .where(eq(instances.id, id));
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Stopping');
    await settle(120 * SEC);
    await settle(DELAYS.stop);
    expect((await only(u.token)).status).toBe('Stopped');
  });

  it('stops a prepaid instance at expiry, warns before the release, then releases it and frees the card', async () => {
    const u = await fundedUser('100');
    const host = await pickHost();
    const free = await gpuFree(host);
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: host, cycle: 'Day', duration: 1 }, u.token));
    await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, u.token);
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    const inst = await only(u.token);
    expect(inst.status).toBe('Running');
    expect(Date.parse(inst.expireAt!) - s.clock.now().getTime()).toBeLessThanOrEqual(24 * HOUR);

    s.clock.advance(24 * HOUR);
    await s.ctx.instanceBilling.expiryTick();
    await settle(DELAYS.stop);
    const stopped = await only(u.token);
    expect(stopped.status).toBe('Stopped');
    expect(Date.parse(stopped.releaseAt!) - Date.parse(inst.expireAt!)).toBe(7 * 24 * HOUR);
    // Expired: it cannot be started again without a renewal.
    expect(json(await act(u.token, inst.id, 'start'))).toMatchObject({ code: 40020011 });
    expect(json(await act(u.token, inst.id, 'startNoCard'))).toMatchObject({ code: 40020011 });

    s.clock.advance(6 * 24 * HOUR + HOUR);
    await s.ctx.instanceBilling.releaseTick();
    const outbox = json<{ items: { text: string }[] }>(await get(s.app, `/dev/outbox?to=${u.mobile}`));
    expect(outbox.items[0]!.text).toMatch(/将于 .* 释放/);
    // (The 7-day login has run out by now: the rest is read from the database.)
    expect((await row(inst.id)).status).toBe('Stopped');

    s.clock.advance(24 * HOUR);
    await s.ctx.instanceBilling.releaseTick();
    expect((await row(inst.id)).status).toBe('Deleting');
    await settle(DELAYS.destroy);
    expect((await row(inst.id)).releasedAt).not.toBeNull();
    expect(await gpuFree(host)).toBe(free);
  });

  it('renews a prepaid instance: the same price as buying, paid like an order, once; an expired one runs again', async () => {
    const u = await fundedUser('500');
    const host = await pickHost();
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: host, cycle: 'Day', duration: 1 }, u.token));
    await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, u.token);
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    const inst = await only(u.token);
    const bought = json<{ total: string }>(
      await post(s.app, '/infra/api/v2.1/gpu/order/price', { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 2 }),
    );
    const quote = json<{ total: string }>(await post(s.app, `${LIST}/${inst.id}/renew/price`, { duration: 2 }, u.token));
    expect(quote.total).toBe(bought.total);

    // Let it expire and stop first: renewing brings it back.
    s.clock.advance(24 * HOUR);
    await s.ctx.instanceBilling.expiryTick();
    await settle(DELAYS.stop);
    expect((await only(u.token)).releaseAt).not.toBeNull();
    const before = await cash(u.user.id);
    const renewal = json<Order>(await post(s.app, `${LIST}/${inst.id}/renew`, { duration: 2 }, u.token));
    expect(renewal).toMatchObject({ type: 'Renew', status: 'Unpaid', amount: quote.total });
    expect(json(await post(s.app, `/order/api/v2.1/gpu/order/${renewal.orderUid}/pay`, { method: 'Balance' }, u.token))).toMatchObject({ status: 'Success' });
    expect(before - (await cash(u.user.id))).toBe(BigInt(quote.total));
    const renewed = await only(u.token);
    expect(Date.parse(renewed.expireAt!) - s.clock.now().getTime()).toBe(48 * HOUR);
    expect(renewed.releaseAt).toBeNull();
    // Fulfilling the same order again (a crash recovery) extends nothing more.
    const [row] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, renewal.orderUid));
    await s.ctx.instances.fulfil(row!);
    expect((await only(u.token)).expireAt).toBe(renewed.expireAt);
    expect(json<Instance>(await act(u.token, inst.id, 'start')).status).toBe('Starting');
    await settle(DELAYS.start);
  });

  it('refuses to renew a post-paid instance, and bad renewal input', async () => {
    const u = await fundedUser('10');
    const { id } = await runningUsageInstance(u.token);
    expect(json(await post(s.app, `${LIST}/${id}/renew`, { duration: 1 }, u.token))).toMatchObject({ code: 40020010 });
    expect(json(await post(s.app, `${LIST}/${id}/renew/price`, { duration: 0 }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/${id}/renew/price`, {}, u.token))).toMatchObject({ code: 40000001 });
  });

  it('lets a child manage only the categories it was granted', async () => {
    const parent = await fundedUser('10');
    const { id } = await runningUsageInstance(parent.token);
    const child = await registerUser(s);
    await s.ctx.db
      .update(users)
      // 财务: the child sees the parent's instances at all; what it may manage is the category's flag.
      .set({ isChild: true, parentId: parent.user.id, childName: 'intern', gpu: false, app: true, finance: true })
      .where(eq(users.id, child.user.id));
    const list = json<{ items: Instance[] }>(await get(s.app, LIST, child.token));
    expect(list.items).toEqual([]);
    expect(json(await act(child.token, id, 'stop'))).toMatchObject({ code: 40300002 });
    await s.ctx.db.update(users).set({ gpu: true }).where(eq(users.id, child.user.id));
    expect(json<Instance>(await act(child.token, id, 'stop')).status).toBe('Stopping');
    const log = json<{ items: { actorName: string; action: string }[] }>(
      await get(s.app, `/api/v1/operation/logs?filterBy=actor,${child.user.id}`, parent.token),
    );
    expect(log.items).toEqual([expect.objectContaining({ action: 'stop', actorName: '子账号 intern' })]);
    await settle(DELAYS.stop);
  });

  it('refuses a post-paid purchase the balance cannot carry for an hour, creating nothing', async () => {
    const u = await fundedUser('1');
    const before = await countRows(s, 'instances');
    const res = await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1 }, u.token);
    expect(json(res)).toMatchObject({ code: 40011001 });
    expect(await countRows(s, 'instances')).toBe(before);
  });
});
