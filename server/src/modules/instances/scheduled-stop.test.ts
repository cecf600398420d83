import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import type { Instance, InstanceOperation } from '@console/contract';
import { get, json, put, registerUser, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, LIST, SEC, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceOperations, users } from '../../db/schema.js';
import { jobsOf } from '../../jobs/scheduler.js';
import { schedulerDeps } from '../../context.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';

describe('定时关机 — scheduled stop', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });

  const schedule = (token: string, id: string, body: unknown) => put(s.app, `${LIST}/${id}/scheduled-stop`, body, token);
  const cancel = (token: string, id: string) =>
    s.app.inject({ method: 'DELETE', url: `${LIST}/${id}/scheduled-stop`, headers: { authorization: `Bearer ${token}` } });
  /** The scheduler's own job, as every server process runs it. */
  const job = () => jobsOf(schedulerDeps(s.ctx))['instances.scheduled-stop']!.run();
  const ops = async (id: string, action: string) =>
    s.ctx.db
      .select()
      .from(instanceOperations)
      .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, action)));

  it('stops the instance once at its time, as the system through the state machine, and shows the schedule until then', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    const at = new Date(s.clock.now().getTime() + 2 * HOUR);

    const res = await schedule(u.token, id, { hours: 2 });
    expect(res.statusCode, res.body).toBe(200);
    expect(json<Instance>(res).scheduledStopAt).toBe(at.toISOString());
    // The list and the detail show it; the log says who set it, for when.
    const list = json<{ items: Instance[] }>(await get(s.app, `${LIST}?filterBy=category,Gpu`, u.token));
    expect(list.items.find((i) => i.id === id)?.scheduledStopAt).toBe(at.toISOString());
    expect(await ops(id, 'scheduleStop')).toEqual([expect.objectContaining({ actorId: u.user.id, detail: expect.stringMatching(/^将于 .* 关机$/) })]);

    // Not yet due: nothing happens.
    s.clock.advance(2 * HOUR - 10 * SEC);
    expect(await job()).toBe(0);
    expect((await k.instance(u.token, id)).status).toBe('Running');

    // Due: two processes run the job at once; the instance is stopped once.
    s.clock.advance(10 * SEC);
    const handled = await Promise.all([job(), job(), s.ctx.scheduledStops.tick()]);
    expect(handled.reduce((a, b) => a + b, 0)).toBe(1);
    const stops = await ops(id, 'stop');
    expect(stops).toEqual([expect.objectContaining({ actorId: null, fromStatus: 'Running', toStatus: 'Stopping', detail: '定时关机' })]);
    expect(await sim.pendingOf([id])).toHaveLength(1);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopping', scheduledStopAt: null });
    await k.settle(DELAYS.stop);
    expect((await k.instance(u.token, id)).status).toBe('Stopped');
    expect(await job()).toBe(0);
    expect(await ops(id, 'stop')).toHaveLength(1);
    const log = json<{ items: InstanceOperation[] }>(await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, u.token));
    expect(log.items.find((o) => o.action === 'stop')).toMatchObject({ actionLabel: '关机', detail: '定时关机', actorId: null });
    expect(log.items.find((o) => o.action === 'scheduleStop')).toMatchObject({ actionLabel: '设置定时关机' });
  });

  it('takes a Beijing time, replaces the pending schedule, and cancels it', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    const now = s.clock.now().getTime();
    const at = new Date(Math.ceil((now + 3 * HOUR) / HOUR) * HOUR);
    // The time the dialog sends: Beijing wall-clock time with its offset.
    const beijing = new Date(at.getTime() + 8 * HOUR).toISOString().slice(0, 19) + '+08:00';
    expect(json<Instance>(await schedule(u.token, id, { at: beijing })).scheduledStopAt).toBe(at.toISOString());
    const replaced = json<Instance>(await schedule(u.token, id, { hours: '0.5' }));
    expect(replaced.scheduledStopAt).toBe(new Date(now + HOUR / 2).toISOString());
    expect((await ops(id, 'scheduleStop')).map((o) => o.detail)[1]).toMatch(/（原定 .*）$/);

    const cancelled = await cancel(u.token, id);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(json<Instance>(cancelled).scheduledStopAt).toBeNull();
    expect(await ops(id, 'cancelScheduledStop')).toHaveLength(1);
    // Cancelling again changes nothing and is no error.
    expect((await cancel(u.token, id)).statusCode).toBe(200);
    expect(await ops(id, 'cancelScheduledStop')).toHaveLength(1);
    s.clock.advance(4 * HOUR);
    expect(await job()).toBe(0);
    expect((await k.instance(u.token, id)).status).toBe('Running');
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('refuses times in the past or beyond 720 hours, bad input, stopped instances and other accounts', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    const iso = (ms: number) => new Date(s.clock.now().getTime() + ms).toISOString();
    for (const [body, code] of [
      [{ at: iso(-60 * SEC) }, 40027001],
      [{ at: iso(721 * HOUR) }, 40027001],
      [{ hours: 0.2 }, 40000001],
      [{ hours: 721 }, 40000001],
      [{ hours: 'abc' }, 40000001],
      [{ hours: 2, at: iso(HOUR) }, 40000001],
      [{}, 40000001],
      [{ at: '明天早上' }, 40000001],
    ] as const) {
      const res = await schedule(u.token, id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res), JSON.stringify(body)).toMatchObject({ code });
      expect(json<{ message: string }>(res).message).toBeTruthy();
    }
    expect((await k.instance(u.token, id)).scheduledStopAt).toBeNull();
    expect(await ops(id, 'scheduleStop')).toHaveLength(0);

    const stranger = await k.fundedUser('1');
    expect(json(await schedule(stranger.token, id, { hours: 1 }))).toMatchObject({ code: 40400004 });
    expect(json(await cancel(stranger.token, id))).toMatchObject({ code: 40400004 });
    expect((await schedule(u.token, id, { hours: 1 })).statusCode).toBe(200);
    expect((await cancel('', id)).statusCode).toBe(401);

    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    expect(json(await schedule(u.token, id, { hours: 1 }))).toMatchObject({ code: 40020010, detail: expect.stringContaining('已关机') });
  });

  it('checks a child account’s permission like the other instance actions', async () => {
    const parent = await k.fundedUser('50');
    const child = await registerUser(s);
    await s.ctx.db
      .update(users)
      .set({ isChild: true, parentId: parent.user.id, childName: 'intern', createGPUInstance: true, gpu: true })
      .where(eq(users.id, child.user.id));
    const { id } = await k.running(child.token);
    await s.ctx.db.update(users).set({ gpu: false, createGPUInstance: false }).where(eq(users.id, child.user.id));
    expect(json(await schedule(child.token, id, { hours: 1 }))).toMatchObject({ code: 40300002 });
    expect(json(await cancel(child.token, id))).toMatchObject({ code: 40300002 });
    await s.ctx.db.update(users).set({ gpu: true }).where(eq(users.id, child.user.id));
    expect(json<Instance>(await schedule(child.token, id, { hours: 1 })).scheduledStopAt).not.toBeNull();
    expect(json<Instance>(await cancel(child.token, id)).scheduledStopAt).toBeNull();
    await k.act(child.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('is cleared by a stop of the user; an instance not running at the time keeps running and the log says why', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    await schedule(u.token, id, { hours: 1 });
    const stopped = json<Instance>(await k.act(u.token, id, 'stop'));
    expect(stopped).toMatchObject({ status: 'Stopping', scheduledStopAt: null });
    expect((await ops(id, 'stop'))[0]!.detail).toMatch(/^已取消原定 .* 的定时关机$/);
    await k.settle(DELAYS.stop);
    await k.act(u.token, id, 'start');
    await k.settle(DELAYS.start);
    s.clock.advance(2 * HOUR);
    expect(await job()).toBe(0);
    expect((await k.instance(u.token, id)).status).toBe('Running');

    // Restarting when the time comes: not stopped, the schedule is gone, the log says why.
    await schedule(u.token, id, { hours: 1 });
    s.clock.advance(HOUR - SEC);
    await k.act(u.token, id, 'restart');
    s.clock.advance(2 * SEC);
    expect(await job()).toBe(1);
    expect(await ops(id, 'scheduledStop')).toEqual([expect.objectContaining({ actorId: null, detail: expect.stringMatching(/定时关机未执行：实例重启中$/) })]);
    await k.settle(DELAYS.restart);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Running', scheduledStopAt: null });
    expect(await ops(id, 'stop')).toHaveLength(1);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });
});
