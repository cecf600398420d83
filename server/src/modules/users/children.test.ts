import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, PERMISSION_FLAGS, yuanToUnits, type Child, type Instance, type PermissionFlag } from '@console/contract';
import { eq } from 'drizzle-orm';
import { get, json, latestCode, newMobile, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { users } from '../../db/schema.js';

const CHILD_PASSWORD = 'Kid12345';
const LIMIT = 8;
const DELAYS = 'create=1000,boot=1000,start=1000,stop=1000,restart=1000,destroy=1000';

describe('child accounts', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { COMPUTE_SIM_DELAYS: DELAYS, CHILD_ACCOUNT_LIMIT: String(LIMIT) } });
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
  const del = (url: string, token: string) => s.app.inject({ method: 'DELETE', url, headers: { authorization: `Bearer ${token}` } });
  const childUrl = (id: string) => API.child.replace(':id', id);
  async function createChild(parentToken: string, childName: string, permissions: Partial<Record<PermissionFlag, boolean>> = {}) {
    const res = await post(s.app, API.children, { childName, password: CHILD_PASSWORD, permissions }, parentToken);
    expect(res.statusCode, res.body).toBe(200);
    return json<Child>(res);
  }
  async function childLogin(parentMobile: string, childName: string, password = CHILD_PASSWORD) {
    return post(s.app, API.childLogin, { parentMobile, childName, password });
  }

  it('creates a child that logs in with the parent mobile and its name, holding only its grants', async () => {
    const parent = await registerUser(s);
    const child = await createChild(parent.token, 'Intern_1', { gpu: true });
    expect(child.permissions).toEqual({
      createGPUInstance: false,
      createImageAPP: false,
      openYunBucket: false,
      gpu: true,
      app: false,
      image: false,
      usingLLM: false,
      finance: false,
    });

    const login = await childLogin(parent.mobile, 'intern_1');
    expect(login.statusCode, login.body).toBe(200);
    const me = json(await get(s.app, API.meInfo, json(login).token));
    expect(me).toMatchObject({ isChild: true, childName: 'Intern_1', gpu: true, createGPUInstance: false, usingLLM: false, mobile: '' });

    expect(json(await childLogin(parent.mobile, 'intern_1', 'Wrong1234'))).toMatchObject({ code: 40010005 });
    expect(json(await childLogin(newMobile(), 'intern_1'))).toMatchObject({ code: 40010005 });
    const list = json<{ items: Child[]; total: number }>(await get(s.app, API.children, parent.token));
    expect(list.total).toBe(1);
    expect(list.items[0]!.lastLoginAt).not.toBeNull();
  });

  it('refuses bad input and duplicates with their codes, writing nothing', async () => {
    const parent = await registerUser(s);
    expect(json(await post(s.app, API.children, { childName: '1abc', password: CHILD_PASSWORD }, parent.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, API.children, { childName: 'abc', password: 'short' }, parent.token))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, API.children, { childName: 'abc', password: 'abcdefgh' }, parent.token))).toMatchObject({ code: 40010004 });
    expect(json(await post(s.app, API.children, { childName: 'abc', password: CHILD_PASSWORD, permissions: { root: true } }, parent.token)).code).not.toBe(200);
    await createChild(parent.token, 'abc');
    expect(json(await post(s.app, API.children, { childName: 'abc', password: CHILD_PASSWORD }, parent.token))).toMatchObject({ code: 40930101 });
    for (let i = 1; i < LIMIT; i++) await createChild(parent.token, `more_${i}`);
    expect(json(await post(s.app, API.children, { childName: 'one_too_many', password: CHILD_PASSWORD }, parent.token))).toMatchObject({ code: 40030010 });
    expect(json<{ total: number }>(await get(s.app, API.children, parent.token)).total).toBe(LIMIT);
    expect(json(await put(s.app, childUrl('not-a-uuid'), { disabled: true }, parent.token))).toMatchObject({ code: 40000001 });
  });

  it('keeps two creations racing for the last place within the limit', async () => {
    const parent = await registerUser(s);
    for (let i = 1; i < LIMIT; i++) await createChild(parent.token, `early_${i}`);
    const [a, b] = await Promise.all([
      post(s.app, API.children, { childName: 'three', password: CHILD_PASSWORD }, parent.token),
      post(s.app, API.children, { childName: 'four', password: CHILD_PASSWORD }, parent.token),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 400]);
    expect(json<{ total: number }>(await get(s.app, API.children, parent.token)).total).toBe(LIMIT);
  });

  it('ends the sessions of a child that is disabled, given a new password or deleted; its name is free again', async () => {
    const parent = await registerUser(s);
    const child = await createChild(parent.token, 'ops');
    let token = json(await childLogin(parent.mobile, 'ops')).token as string;

    expect((await put(s.app, childUrl(child.id), { disabled: true }, parent.token)).statusCode).toBe(200);
    expect((await get(s.app, API.meInfo, token)).statusCode).toBe(401);
    expect(json(await childLogin(parent.mobile, 'ops'))).toMatchObject({ code: 40300003 });
    await put(s.app, childUrl(child.id), { disabled: false }, parent.token);

    token = json(await childLogin(parent.mobile, 'ops')).token;
    expect((await put(s.app, API.childPassword.replace(':id', child.id), { password: 'Newpass123' }, parent.token)).statusCode).toBe(200);
    expect((await get(s.app, API.meInfo, token)).statusCode).toBe(401);
    token = json(await childLogin(parent.mobile, 'ops', 'Newpass123')).token;

    expect((await del(childUrl(child.id), parent.token)).statusCode).toBe(200);
    expect((await get(s.app, API.meInfo, token)).statusCode).toBe(401);
    expect(json(await childLogin(parent.mobile, 'ops', 'Newpass123'))).toMatchObject({ code: 40010005 });
    await createChild(parent.token, 'ops');
  });

  it("does not let one parent see or touch another parent's child", async () => {
    const a = await registerUser(s);
    const b = await registerUser(s);
    const child = await createChild(a.token, 'mine');
    expect(json(await put(s.app, childUrl(child.id), { disabled: true }, b.token))).toMatchObject({ code: 40400004 });
    expect(json(await del(childUrl(child.id), b.token))).toMatchObject({ code: 40400004 });
    expect(json<{ total: number }>(await get(s.app, API.children, b.token)).total).toBe(0);
  });

  it('changes what a logged-in child may do as soon as the parent changes its grants', async () => {
    const parent = await fundedParent();
    const child = await createChild(parent.token, 'buyer');
    const token = json(await childLogin(parent.mobile, 'buyer')).token as string;
    const buy = () => post(s.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, token);
    expect(json(await buy())).toMatchObject({ code: 40300002 });
    await put(s.app, childUrl(child.id), { permissions: { createGPUInstance: true } }, parent.token);
    const res = await buy();
    expect(res.statusCode, res.body).toBe(200);
    // The child spent the parent's balance: the order is the parent's.
    expect(json(res)).toMatchObject({ status: 'Time' });
  });

  it("refuses a child without the category's permission paying, opening a QR for or cancelling the parent's order", async () => {
    const parent = await fundedParent('200');
    // A prepaid order the parent left unpaid.
    const order = await post(s.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1 }, parent.token);
    expect(order.statusCode, order.body).toBe(200);
    const uid = json<{ orderUid: string }>(order).orderUid;
    // 财务 lets a child see the parent's orders at all (child-finance.test.ts); the category's permission is what this is about.
    await createChild(parent.token, 'nobody', { finance: true });
    const token = json(await childLogin(parent.mobile, 'nobody')).token as string;
    const cashBefore = (await s.ctx.ledger.balances(parent.user.id)).cash;
    const base = `/order/api/v2.1/gpu/order/${uid}`;
    for (const res of [
      await post(s.app, `${base}/pay`, { method: 'Balance' }, token),
      await get(s.app, `${base}/qrcode/alipay`, token),
      await post(s.app, `${base}/cancel`, undefined, token),
    ]) {
      expect(res.statusCode, res.body).toBe(403);
      expect(json(res)).toMatchObject({ code: 40300002 });
    }
    expect((await s.ctx.ledger.balances(parent.user.id)).cash).toBe(cashBefore);
    expect(json(await get(s.app, base, parent.token))).toMatchObject({ status: 'Unpaid' });
    // A child holding the permission pays it from the parent's balance.
    await createChild(parent.token, 'gpu_buyer', { createGPUInstance: true, finance: true });
    const buyer = json(await childLogin(parent.mobile, 'gpu_buyer')).token as string;
    expect(json(await post(s.app, `${base}/pay`, { method: 'Balance' }, buyer))).toMatchObject({ status: 'Success' });
  });

  /**
   * Security finding 5 of the accounts issue: a child bound its own mobile, then logged in through
   * the main login and reset its password by SMS outside the parent's control.
   */
  describe("a child's mobile, e-mail and password belong to its parent", () => {
    const MANAGED = 40300006;

    it('refuses a child session changing its mobile, e-mail or password, or asking for the codes to do so', async () => {
      const parent = await registerUser(s);
      await createChild(parent.token, 'solo');
      const token = json(await childLogin(parent.mobile, 'solo')).token as string;
      const mobile = newMobile();
      for (const res of [
        await post(s.app, API.smsCode, { mobile, scene: 'mobile' }, token),
        await put(s.app, API.meMobile, { mobile, code: '123456' }, token),
        await post(s.app, API.emailCode, { email: 'kid@example.com', scene: 'email' }, token),
        await put(s.app, API.meEmail, { email: 'kid@example.com', code: '123456' }, token),
        await put(s.app, API.mePassword, { oldPassword: CHILD_PASSWORD, password: 'Other1234' }, token),
      ]) {
        expect(res.statusCode, res.body).toBe(403);
        expect(json(res)).toMatchObject({ code: MANAGED, message: expect.stringContaining('主账号') });
      }
      // Nothing was sent, nothing changed: the old password still logs in, no number is bound.
      expect(json(await get(s.app, `/dev/outbox?to=${mobile}`)).items).toEqual([]);
      expect((await childLogin(parent.mobile, 'solo')).statusCode).toBe(200);
      expect(json(await get(s.app, API.meInfo, token))).toMatchObject({ mobile: '', email: '' });
    });

    it('keeps a child out of the main login and the SMS reset even with a mobile and e-mail on its row', async () => {
      const parent = await registerUser(s);
      const child = await createChild(parent.token, 'legacy');
      // A child that bound a number before this was refused.
      const mobile = newMobile();
      const email = `legacy-${mobile}@example.com`;
      await s.ctx.db.update(users).set({ mobile, email }).where(eq(users.id, child.id));

      expect(json(await post(s.app, API.login, { account: mobile, password: CHILD_PASSWORD }))).toMatchObject({ code: 40010005 });
      expect(json(await post(s.app, API.login, { account: email, password: CHILD_PASSWORD }))).toMatchObject({ code: 40010005 });
      for (const scene of ['login', 'reset']) {
        expect(json(await post(s.app, API.smsCode, { mobile, scene }))).toMatchObject({ code: 40010006 });
      }
      expect(json(await post(s.app, API.login, { mobile, code: '123456' }))).toMatchObject({ code: 40010006 });
      expect(json(await post(s.app, API.passwordReset, { mobile, code: '123456', password: 'Taken1234' }))).toMatchObject({ code: 40010006 });
      // The child still logs in the way it should, with its own password unchanged.
      expect((await childLogin(parent.mobile, 'legacy')).statusCode).toBe(200);
    });

    it('frees the mobile and e-mail of a deleted child for someone else', async () => {
      const parent = await registerUser(s);
      const child = await createChild(parent.token, 'leaver');
      const mobile = newMobile();
      const email = `leaver-${mobile}@example.com`;
      await s.ctx.db.update(users).set({ mobile, email }).where(eq(users.id, child.id));
      expect(json(await post(s.app, API.smsCode, { mobile, scene: 'register' }))).toMatchObject({ code: 40900001 });

      expect((await s.app.inject({ method: 'DELETE', url: childUrl(child.id), headers: { authorization: `Bearer ${parent.token}` } })).statusCode).toBe(200);
      const someone = await registerUser(s, mobile);
      expect(json(await get(s.app, API.meInfo, someone.token))).toMatchObject({ mobile });
      expect((await post(s.app, API.emailCode, { email, scene: 'email' }, someone.token)).statusCode).toBe(200);
      const code = await latestCode(s.app, email);
      expect(json(await put(s.app, API.meEmail, { email, code }, someone.token))).toMatchObject({ email });
    });
  });

  /**
   * Spec §6 on the server: for every flag, a child holding only that flag is refused (403 40300002
   * or 40300005) exactly on the routes that flag does not open.
   */
  it('enforces every permission flag on every protected route (the matrix)', async () => {
    const parent = await fundedParent('500');
    const gpu = await post(s.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, parent.token);
    expect(gpu.statusCode, gpu.body).toBe(200);
    const list = json<{ items: Instance[] }>(await get(s.app, `${API.instances}?filterBy=category,Gpu`, parent.token));
    expect(list.items, JSON.stringify(list)).toHaveLength(1);
    const gpuInstance = list.items[0]!;

    type Route = { name: string; opens: readonly PermissionFlag[]; call: (token: string) => Promise<{ statusCode: number; body: string }> };
    const ROUTES: Route[] = [
      {
        name: 'buy a GPU instance',
        opens: ['createGPUInstance'],
        call: (t) => post(s.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Usage', duration: 1 }, t),
      },
      { name: 'buy a model resource package', opens: ['usingLLM'], call: (t) => post(s.app, API.aiOrderCreate, { productId: 'llm-tokens-10m', count: 1 }, t) },
      {
        name: 'buy a CPU instance',
        opens: [],
        call: (t) => post(s.app, API.orderCreate, { sizeId: 'gen-c2m4', regionId: 'bj-b', cycle: 'Usage', duration: 1 }, t),
      },
      { name: 'view a GPU instance', opens: ['createGPUInstance', 'gpu'], call: (t) => get(s.app, API.instance.replace(':id', gpuInstance.id), t) },
      {
        name: 'rename a GPU instance',
        opens: ['createGPUInstance', 'gpu'],
        call: (t) => put(s.app, API.instanceName.replace(':id', gpuInstance.id), { name: 'x' }, t),
      },
      { name: 'certify', opens: [], call: (t) => post(s.app, API.certifyPersonal, { name: '张三', idNumber: '11010519491231002X' }, t) },
      { name: 'student verification', opens: [], call: (t) => get(s.app, API.student, t) },
      { name: 'manage child accounts', opens: [], call: (t) => get(s.app, API.children, t) },
      { name: 'recharge (into the parent balance)', opens: PERMISSION_FLAGS, call: (t) => post(s.app, API.recharge, { amount: '100', method: 'Alipay' }, t) },
      { name: 'request an invoice', opens: [], call: (t) => get(s.app, API.invoiceable, t) },
      { name: 'list my images', opens: ['openYunBucket', 'image'], call: (t) => get(s.app, API.userImages, t) },
      { name: 'list data disks', opens: ['openYunBucket', 'image'], call: (t) => get(s.app, API.dataDisks, t) },
    ];

    const refused = (res: { statusCode: number; body: string }) => res.statusCode === 403 && [40300002, 40300005].includes(json(res as never).code);
    const table: string[] = [];
    for (const flag of PERMISSION_FLAGS) {
      // Each child also holds 财务, which lets it see the parent's instances and money at all (what a
      // child without it sees is child-finance.test.ts): the matrix is about what each flag opens.
      await createChild(parent.token, `only_${flag}`.slice(0, 20), { [flag]: true, finance: true });
      const token = json(await childLogin(parent.mobile, `only_${flag}`.slice(0, 20))).token as string;
      for (const route of ROUTES) {
        const res = await route.call(token);
        const expected = route.opens.includes(flag) ? 'allowed' : 'refused';
        table.push(
          `${flag} × ${route.name}: ${refused(res) ? 'refused' : 'allowed'}${expected === (refused(res) ? 'refused' : 'allowed') ? '' : ` (expected ${expected}; ${res.statusCode} ${res.body})`}`,
        );
      }
    }
    expect(table.filter((line) => line.includes('expected'))).toEqual([]);
    // The main account is refused nowhere.
    for (const route of ROUTES) expect(refused(await route.call(parent.token)), route.name).toBe(false);
  });
});
