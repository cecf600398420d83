import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { API, type IdleStop, type InstanceOperation, type Order } from '@console/contract';
import { get, json, post, put, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, SEC, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceOperations, noticeMessages, users } from '../../db/schema.js';
import { jobsOf } from '../../jobs/scheduler.js';
import { schedulerDeps } from '../../context.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';

const MINUTE = 60 * SEC;

describe('GPU 空闲自动关机 — idle auto-shutdown', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });

  const path = (id: string) => API.instanceIdleStop.replace(':id', id);
  const setIdle = (token: string, id: string, body: unknown) => put(s.app, path(id), body, token);
  const idleOf = async (token: string, id: string) => json<IdleStop>(await get(s.app, path(id), token));
  const jobs = () => jobsOf(schedulerDeps(s.ctx));
  /** `n` minutes of the scheduler: the machines sampled each minute, then the idle job. */
  async function minutes(n: number) {
    for (let i = 0; i < n; i++) {
      s.clock.advance(MINUTE);
      await jobs()['monitoring.sample']!.run();
      await jobs()['instances.idle-stop']!.run();
    }
  }
  const idleNotices = async (userId: string) =>
    s.ctx.db
      .select()
      .from(noticeMessages)
      .where(and(eq(noticeMessages.userId, userId), eq(noticeMessages.kind, 'IdleStop')))
      .orderBy(noticeMessages.createdAt);
  const stops = async (id: string) =>
    s.ctx.db
      .select()
      .from(instanceOperations)
      .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, 'stop')));

  it('warns 30 minutes before and then stops the instance as the system, once, through the state machine', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    sim.setLoad(id, { gpuPercent: 0 });
    const set = await setIdle(u.token, id, { hours: 1 });
    expect(set.statusCode, set.body).toBe(200);
    expect(json<IdleStop>(set)).toMatchObject({ hours: 1, thresholdPercent: 5, idleSince: null, stopAt: null });

    await minutes(1);
    const watching = await idleOf(u.token, id);
    const idleSince = s.clock.now().getTime();
    expect(watching.idleSince).toBe(new Date(idleSince).toISOString());
    expect(watching.stopAt).toBe(new Date(idleSince + HOUR).toISOString());

    await minutes(29);
    expect(await idleNotices(u.user.id)).toHaveLength(0);
    await minutes(1);
    const [warning] = await idleNotices(u.user.id);
    expect(warning).toMatchObject({ title: expect.stringContaining('将于'), link: expect.stringContaining(id) });
    expect(warning!.body).toContain('GPU 空闲 1 小时后自动关机');
    await minutes(29);
    expect(await idleNotices(u.user.id)).toHaveLength(1);
    expect(await stops(id)).toHaveLength(0);
    expect((await k.instance(u.token, id)).status).toBe('Running');

    // An hour of idle samples: two processes run the idle job at once; the instance is stopped once.
    s.clock.advance(MINUTE);
    await jobs()['monitoring.sample']!.run();
    await Promise.all([jobs()['instances.idle-stop']!.run(), s.ctx.idleStops.tick()]);
    expect(await stops(id)).toEqual([
      expect.objectContaining({ actorId: null, fromStatus: 'Running', toStatus: 'Stopping', detail: 'GPU 空闲 1 小时，自动关机' }),
    ]);
    expect(await sim.pendingOf([id])).toHaveLength(1);
    await k.settle(DELAYS.stop);
    expect((await k.instance(u.token, id)).status).toBe('Stopped');
    const log = json<{ items: InstanceOperation[] }>(await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, u.token));
    expect(log.items.find((o) => o.action === 'stop')).toMatchObject({ actionLabel: '关机', detail: 'GPU 空闲 1 小时，自动关机', actorId: null });
    const sent = await idleNotices(u.user.id);
    expect(sent.map((n) => n.title)).toEqual([expect.stringContaining('将于'), expect.stringContaining('已自动关机')]);

    // Stopped: nothing more happens, however long it stays off; the setting stays for the next run.
    await minutes(90);
    expect(await stops(id)).toHaveLength(1);
    expect(await idleOf(u.token, id)).toMatchObject({ hours: 1, idleSince: null, stopAt: null });
  });

  it('starts over when a card is busy, and after a gap in the samples', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    sim.setLoad(id, { gpuPercent: 0 });
    await setIdle(u.token, id, { hours: 1 });
    await minutes(45);
    expect(await idleNotices(u.user.id)).toHaveLength(1);

    // One busy sample: no longer idle; the hour counts again from the next idle sample.
    sim.setLoad(id, { gpuPercent: 80 });
    await minutes(1);
    expect(await idleOf(u.token, id)).toMatchObject({ idleSince: null, stopAt: null });
    sim.setLoad(id, { gpuPercent: 1 });
    await minutes(50);
    expect(await stops(id)).toHaveLength(0);
    // The new stretch is warned of again.
    expect(await idleNotices(u.user.id)).toHaveLength(2);

    // Nobody sampled it for ten minutes (the console was down): what is not known is not idle.
    s.clock.advance(10 * MINUTE);
    await minutes(1);
    const fresh = await idleOf(u.token, id);
    expect(fresh.idleSince).toBe(s.clock.now().toISOString());
    await minutes(59);
    expect(await stops(id)).toHaveLength(0);
    await minutes(1);
    expect(await stops(id)).toHaveLength(1);
    await k.settle(DELAYS.stop);
  });

  it('is off unless chosen, changes only by the owner or a child that manages the instance, and refuses bad input', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    sim.setLoad(id, { gpuPercent: 0 });
    expect(await idleOf(u.token, id)).toMatchObject({ hours: null, idleSince: null, stopAt: null });

    for (const body of [{ hours: 3 }, { hours: 0 }, { hours: 'abc' }, { hours: 1.5 }, {}, { hours: [1] }]) {
      const res = await setIdle(u.token, id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res), JSON.stringify(body)).toMatchObject({ code: 40000001, message: expect.any(String) });
    }
    const stranger = await k.fundedUser('1');
    expect(json(await setIdle(stranger.token, id, { hours: 2 }))).toMatchObject({ code: 40400004 });
    expect(json(await get(s.app, path(id), stranger.token))).toMatchObject({ code: 40400004 });
    expect((await setIdle('', id, { hours: 2 })).statusCode).toBe(401);
    expect(await idleOf(u.token, id)).toMatchObject({ hours: null });

    expect(json<IdleStop>(await setIdle(u.token, id, { hours: 24 }))).toMatchObject({ hours: 24 });
    expect(json<IdleStop>(await setIdle(u.token, id, { hours: null }))).toMatchObject({ hours: null });
    // Switched off: an idle GPU for longer than any window stops nothing.
    await minutes(61);
    expect(await stops(id)).toHaveLength(0);

    // A child that lost the right to manage GPU instances may not change it.
    const child = await k.fundedUser('50');
    await s.ctx.db
      .update(users)
      .set({ isChild: true, parentId: u.user.id, childName: 'intern', createGPUInstance: true, gpu: true })
      .where(eq(users.id, child.user.id));
    const mine = await k.running(child.token);
    expect(json<IdleStop>(await setIdle(child.token, mine.id, { hours: 2 }))).toMatchObject({ hours: 2 });
    await s.ctx.db.update(users).set({ gpu: false, createGPUInstance: false }).where(eq(users.id, child.user.id));
    expect(json(await setIdle(child.token, mine.id, { hours: 4 }))).toMatchObject({ code: 40300002 });

    // An instance without cards has no GPU to watch.
    const order = await post(
      s.app,
      '/infra/api/v2.1/order',
      { sizeId: 'ebz-c2m4', regionId: 'sh-a', imageId: 'win-server-2022', duration: 1, cycle: 'Usage' },
      u.token,
    );
    expect(order.statusCode, order.body).toBe(200);
    const [cpu] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', u.token)).items;
    expect(json(await setIdle(u.token, cpu!.resourceId!, { hours: 2 }))).toMatchObject({ code: 40036001, message: expect.stringContaining('没有 GPU') });

    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });
});
