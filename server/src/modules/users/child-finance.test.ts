import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, orderPath, yuanToUnits, type Child, type Instance, type Order, type PermissionFlag } from '@console/contract';
import { childAccount, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { instances } from '../instances/schema.js';

const DELAYS = 'create=1000,boot=1000,start=1000,stop=1000,restart=1000,destroy=1000';
const POSTPAID_GPU = { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 };

/** The 财务 permission: without it a child sees only what it bought itself, never its parent's money. */
describe('child accounts and the 财务 permission', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { COMPUTE_SIM_DELAYS: DELAYS } });
  });
  afterAll(async () => s.close());

  async function fundedParent(amount = '200') {
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(amount) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits(amount) },
      ],
    });
    return u;
  }
  const child = (parent: { token: string; mobile: string }, childName: string, permissions: Partial<Record<PermissionFlag, boolean>>) =>
    childAccount(s, parent, childName, permissions);
  const orderList = async (token: string) => json<{ items: Order[]; total: number }>(await get(s.app, API.orderList, token));
  const instanceList = async (token: string) => json<{ items: Instance[] }>(await get(s.app, API.instances, token)).items;
  const logInstances = async (token: string) =>
    new Set(json<{ items: { instanceId: string }[] }>(await get(s.app, API.operationLogs, token)).items.map((i) => i.instanceId));

  it('a child without 财务 is refused its parent’s money and sees only its own orders, instances and log', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'gpu_dev', { createGPUInstance: true, gpu: true });
    const parentOrder = json<Order>(await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, parent.token));
    const kidOrder = json<Order>(await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, kid.token));
    expect(kidOrder.status).toBe('Time');
    const [kidInstance] = await instanceList(kid.token);
    const parentInstance = (await instanceList(parent.token)).find((i) => i.id !== kidInstance!.id)!;

    // The parent's money: balance, statement, recharges, gift credit — a documented 403 each.
    for (const url of [API.userMoney, API.userStatement, API.recharge, API.gift]) {
      expect(json(await get(s.app, url, kid.token)), url).toMatchObject({ code: 40330101, message: expect.stringContaining('财务') });
    }
    expect(json(await post(s.app, API.recharge, { amount: '10', method: 'Alipay' }, kid.token))).toMatchObject({ code: 40330101 });
    const me = json<Record<string, unknown>>(await get(s.app, API.meInfo, kid.token));
    expect(me).toMatchObject({ isChild: true, finance: false });
    expect(me).not.toHaveProperty('cash');
    expect(me).not.toHaveProperty('gift');

    // Orders, bills, instances and the log: only what it created.
    const mine = await orderList(kid.token);
    expect(mine.items.map((o) => o.orderUid)).toEqual([kidOrder.orderUid]);
    expect(mine.total).toBe(1);
    expect(json(await get(s.app, orderPath('Personal', parentOrder.orderUid), kid.token))).toMatchObject({ code: 40400004 });
    expect(json(await get(s.app, orderPath('Personal', parentOrder.orderUid, '/usage'), kid.token))).toMatchObject({ code: 40400004 });
    expect((await get(s.app, orderPath('Personal', kidOrder.orderUid), kid.token)).statusCode).toBe(200);
    const csv = (await get(s.app, API.orderListCsv, kid.token)).body;
    expect(csv).toContain(kidOrder.orderUid);
    expect(csv).not.toContain(parentOrder.orderUid);
    expect((await instanceList(kid.token)).map((i) => i.id)).toEqual([kidInstance!.id]);
    expect(json(await get(s.app, `${API.instances}/${parentInstance.id}`, kid.token))).toMatchObject({ code: 40400004 });
    expect(json(await post(s.app, `${API.instances}/${parentInstance.id}/stop`, undefined, kid.token))).toMatchObject({ code: 40400004 });
    expect(await logInstances(kid.token)).toEqual(new Set([kidInstance!.id]));

    // The parent sees everything, as before.
    expect((await orderList(parent.token)).total).toBe(2);
    expect(await logInstances(parent.token)).toEqual(new Set([kidInstance!.id, parentInstance.id]));
    expect(json(await get(s.app, API.meInfo, parent.token))).toMatchObject({ finance: true, cash: expect.any(String) });
  });

  it('a child with 管理 GPU 实例 but no create permission manages the instances its parent hands it, until taken back', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'operator_only', { gpu: true });
    const other = await child(parent, 'llm_only', { usingLLM: true });
    const stranger = await child(await fundedParent(), 'someone_else', { gpu: true });
    json<Order>(await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, parent.token));
    const [machine] = await instanceList(parent.token);
    expect(await instanceList(kid.token)).toEqual([]);
    const holder = (id: string) => API.instanceHolder.replace(':id', id);

    // Refused: a child without the grant, another parent's child, a child asking, bad input.
    expect(json(await put(s.app, holder(machine!.id), { childId: other.id }, parent.token))).toMatchObject({
      code: 40300002,
      detail: expect.stringContaining('管理 GPU 实例'),
    });
    expect(json(await put(s.app, holder(machine!.id), { childId: stranger.id }, parent.token))).toMatchObject({ code: 40400004 });
    expect(json(await put(s.app, holder(machine!.id), { childId: kid.id }, kid.token))).toMatchObject({ code: 40300005 });
    expect((await put(s.app, holder(machine!.id), { childId: 'x' }, parent.token)).statusCode).toBe(400);
    expect(await instanceList(kid.token)).toEqual([]);

    // A ComfyUI API token made before (as the app-token endpoint seals one) is revoked by the hand-over.
    const tokenOf = async () => (await s.ctx.db.select({ enc: instances.appTokenEnc }).from(instances).where(eq(instances.id, machine!.id)))[0]?.enc;
    await s.ctx.db.update(instances).set({ appTokenEnc: 'sealed-token' }).where(eq(instances.id, machine!.id));
    const handed = await put(s.app, holder(machine!.id), { childId: kid.id }, parent.token);
    expect(handed.statusCode, handed.body).toBe(200);
    expect(json<Instance>(handed).holderId).toBe(kid.id);
    expect(await tokenOf()).toBeNull();
    expect((await instanceList(kid.token)).map((i) => i.id)).toEqual([machine!.id]);
    const renamed = await put(s.app, API.instanceName.replace(':id', machine!.id), { name: '交给我的机器' }, kid.token);
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect((await instanceList(parent.token)).map((i) => i.id)).toEqual([machine!.id]); // the parent still sees it

    await s.ctx.db.update(instances).set({ appTokenEnc: 'sealed-by-the-child' }).where(eq(instances.id, machine!.id));
    expect(json<Instance>(await put(s.app, holder(machine!.id), { childId: null }, parent.token)).holderId).toBe(parent.user.id);
    expect(await tokenOf()).toBeNull(); // taken back: what the child could read opens nothing
    expect(await instanceList(kid.token)).toEqual([]);
  });

  it('with 财务 the child sees its parent’s balance, every order, instance and log line', async () => {
    const parent = await fundedParent();
    const kid = await child(parent, 'accountant', { createGPUInstance: true, gpu: true });
    await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, parent.token);
    await post(s.app, API.gpuOrderCreate, POSTPAID_GPU, kid.token);
    expect((await get(s.app, API.userMoney, kid.token)).statusCode).toBe(403);

    const granted = await put(s.app, API.child.replace(':id', kid.id), { permissions: { finance: true } }, parent.token);
    expect(json<Child>(granted).permissions).toMatchObject({ finance: true, createGPUInstance: true, gpu: true });
    // The next request sees the grant: no new login.
    const money = await get(s.app, API.userMoney, kid.token);
    expect(money.statusCode, money.body).toBe(200);
    expect(json(money)).toMatchObject({ cash: String(yuanToUnits('200')) });
    expect(json(await get(s.app, API.meInfo, kid.token))).toMatchObject({ finance: true, cash: String(yuanToUnits('200')) });
    for (const url of [API.userStatement, API.recharge, API.gift]) expect((await get(s.app, url, kid.token)).statusCode, url).toBe(200);
    expect((await orderList(kid.token)).total).toBe(2);
    expect(await instanceList(kid.token)).toHaveLength(2);
    expect((await logInstances(kid.token)).size).toBe(2);
  });
});
