import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { API, yuanToUnits, type BalanceFloor } from '@console/contract';
import { get, json, put, registerUser, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceOperations, users } from '../../db/schema.js';

const yuan = yuanToUnits;

describe('余额保底 — the balance floor', () => {
  let s: TestServer;
  const k = instanceKit(() => s);
  instanceSuite((server) => {
    s = server;
  });

  const setFloor = (token: string, floor: unknown) => put(s.app, API.meBalanceFloor, { floor }, token);
  const stops = async (id: string) =>
    s.ctx.db
      .select()
      .from(instanceOperations)
      .where(and(eq(instanceOperations.instanceId, id), eq(instanceOperations.action, 'stop')));

  it('is a main account’s setting: 0–100000 yuan in 0.0001 yuan units, or null for off', async () => {
    const u = await k.fundedUser('1');
    expect(json<BalanceFloor>(await get(s.app, API.meBalanceFloor, u.token))).toEqual({ floor: null });
    expect(json<BalanceFloor>(await setFloor(u.token, '100000'))).toEqual({ floor: '100000' });
    expect(json<BalanceFloor>(await get(s.app, API.meBalanceFloor, u.token))).toEqual({ floor: '100000' });
    expect(json<BalanceFloor>(await setFloor(u.token, '1000000000'))).toEqual({ floor: '1000000000' });
    for (const bad of ['1000000001', '-1', '1.5', 'abc', '', 5, true, undefined]) {
      const res = await setFloor(u.token, bad);
      expect(res.statusCode, String(bad)).toBe(400);
      expect(json(res)).toMatchObject({ code: 40000001 });
    }
    expect(json<BalanceFloor>(await get(s.app, API.meBalanceFloor, u.token))).toEqual({ floor: '1000000000' });
    expect(json<BalanceFloor>(await setFloor(u.token, null))).toEqual({ floor: null });

    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: u.user.id, childName: 'intern' }).where(eq(users.id, child.user.id));
    expect(json(await get(s.app, API.meBalanceFloor, child.token))).toMatchObject({ code: 40300005 });
    expect(json(await setFloor(child.token, '0'))).toMatchObject({ code: 40300005 });
    expect((await get(s.app, API.meBalanceFloor)).statusCode).toBe(401);
  });

  it('stops the payer’s running post-paid instances at the tick once the balance is below the floor, a child’s too', async () => {
    const parent = await k.fundedUser('20');
    const child = await registerUser(s);
    await s.ctx.db
      .update(users)
      .set({ isChild: true, parentId: parent.user.id, childName: 'intern', createGPUInstance: true })
      .where(eq(users.id, child.user.id));
    const own = await k.running(parent.token);
    const childs = await k.running(child.token);
    expect(json<BalanceFloor>(await setFloor(parent.token, String(yuan('17'))))).toEqual({ floor: String(yuan('17')) });

    // Two RTX 4090 at ¥1.98/h: after half an hour the balance is about ¥18.02, above the floor.
    s.clock.advance(HOUR / 2);
    await s.ctx.instanceBilling.meterTick();
    expect((await k.instance(parent.token, own.id)).status).toBe('Running');
    expect(await stops(own.id)).toHaveLength(0);

    // Another half hour: about ¥16.04, below ¥17: both stop, well before the balance is empty.
    s.clock.advance(HOUR / 2);
    await s.ctx.instanceBilling.meterTick();
    const left = await k.cash(parent.user.id);
    expect(left).toBeLessThan(yuan('17'));
    expect(left).toBeGreaterThan(yuan('16'));
    for (const { id } of [own, childs]) {
      expect(await stops(id)).toEqual([expect.objectContaining({ actorId: null, detail: '余额低于您设置的 17.00 元保底金额' })]);
      expect((await k.row(id)).status).toBe('Stopping');
    }
    // The notice says it was the floor, not an empty balance.
    const inbox = json<{ items: { title: string }[] }>(await get(s.app, `${API.messages}?pageSize=50`, parent.token)).items.map((m) => m.title);
    expect(inbox).toContain(`实例「${(await k.row(own.id)).name}」因余额低于保底金额已关机`);
    expect(inbox.filter((t) => t.includes('因余额不足已关机'))).toEqual([]);
    await k.settle(DELAYS.stop);
    expect((await k.instance(parent.token, own.id)).status).toBe('Stopped');

    // Starting again below the floor is refused with the reason; without the floor it starts.
    const refused = await k.act(parent.token, own.id, 'start');
    expect(json(refused)).toMatchObject({ code: 40011001, detail: expect.stringContaining('保底金额') });
    expect((await k.instance(parent.token, own.id)).status).toBe('Stopped');
    await setFloor(parent.token, null);
    expect((await k.act(parent.token, own.id, 'start')).statusCode).toBe(200);
    await k.settle(DELAYS.start);
    await s.ctx.instanceBilling.meterTick();
    expect((await k.instance(parent.token, own.id)).status).toBe('Running');
    await k.act(parent.token, own.id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('leaves another account’s instances and accounts without a floor alone', async () => {
    const a = await k.fundedUser('20');
    const b = await k.fundedUser('20');
    const ia = await k.running(a.token);
    const ib = await k.running(b.token);
    await setFloor(a.token, String(yuan('1')));
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    expect((await k.row(ia.id)).status).toBe('Running');
    expect((await k.row(ib.id)).status).toBe('Running');
    for (const { token, id } of [
      { token: a.token, id: ia.id },
      { token: b.token, id: ib.id },
    ]) {
      await k.act(token, id, 'stop');
      await k.settle(DELAYS.stop);
    }
  });
});
