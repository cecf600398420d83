import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq, inArray, ne } from 'drizzle-orm';
import type { Instance, InstanceOperation } from '@console/contract';
import { countRows, get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { instanceKit } from '../../../test/instances-kit.js';
import { catalogueHosts, catalogueRooms, instances } from '../../db/schema.js';
import { checkLedger } from '../ledger/check.js';

const LIST = '/upgpu/api/v2.1/instances';
const GPU_ORDER = '/infra/api/v2.1/gpu/order';
/** Simulated delays (ms) these tests run with. */
const DELAYS = { create: 4000, boot: 3000, start: 3000, stop: 2000, restart: 4000, destroy: 2000, migrate: 8000 };

describe('migrating a stopped instance to another host', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
        BILLING_TICK_SECONDS: '60',
      },
    });
  });
  afterAll(async () => s.close());
  // Each test sets free cards as it needs; start each from a fleet where every card not held is free.
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
  afterEach(async () => {
    const report = await checkLedger(s.ctx.db);
    expect(report.problems).toEqual([]);
  });

  /** A new account with `amount` yuan of cash (the shared test kit). */
  const { fundedUser } = instanceKit(() => s);
  const gpuFree = async (hostId: string) => (await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, hostId)))[0]!.gpuFree;
  const setFree = async (hostIds: string[], gpuFree: number) => {
    if (hostIds.length) await s.ctx.db.update(catalogueHosts).set({ gpuFree }).where(inArray(catalogueHosts.id, hostIds));
    s.ctx.catalogueStore.invalidateInventory();
  };
  const row = async (id: string) => (await s.ctx.db.select().from(instances).where(eq(instances.id, id)))[0]!;
  const view = async (token: string, id: string) => json<Instance>(await get(s.app, `${LIST}/${id}`, token));
  async function settle(ms: number) {
    s.clock.advance(ms);
    await s.ctx.reconciler.tick();
  }
  const act = (token: string, id: string, action: string) => post(s.app, `${LIST}/${id}/${action}`, undefined, token);
  const migrate = (token: string, id: string, body?: unknown) => post(s.app, `${LIST}/${id}/migrate`, body, token);
  const log = async (token: string, id: string) =>
    json<{ items: InstanceOperation[] }>(await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, token)).items;

  /** Other active RTX 4090 hosts in the instance's region: where a migration may go. */
  async function othersOf(hostId: string): Promise<string[]> {
    const rooms = (await s.ctx.db.select().from(catalogueRooms).where(eq(catalogueRooms.regionId, 'bj-b'))).map((r) => r.id);
    const hosts = await s.ctx.db
      .select()
      .from(catalogueHosts)
      .where(
        and(eq(catalogueHosts.gpuTypeId, 'rtx4090'), eq(catalogueHosts.active, true), ne(catalogueHosts.id, hostId), inArray(catalogueHosts.roomId, rooms)),
      );
    return hosts.map((h) => h.id);
  }

  /** A post-paid RTX 4090 in bj-b, bought, booted and stopped again. */
  async function stoppedInstance(token: string, hostId?: string) {
    const res = await post(
      s.app,
      GPU_ORDER,
      { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', ...(hostId ? { hostId } : {}), cycle: 'Usage', duration: 1 },
      token,
    );
    expect(res.statusCode, res.body).toBe(200);
    const list = json<{ items: Instance[] }>(await get(s.app, `${LIST}?filterBy=category,Gpu`, token));
    const id = list.items[0]!.id;
    await settle(DELAYS.create);
    await settle(DELAYS.boot);
    expect((await act(token, id, 'stop')).statusCode).toBe(200);
    await settle(DELAYS.stop);
    expect((await view(token, id)).status).toBe('Stopped');
    return id;
  }

  it('moves a stopped instance whose host is full to a host with a free card, free of charge, and then starts with its card', async () => {
    const u = await fundedUser('20');
    const id = await stoppedInstance(u.token);
    const home = (await row(id)).hostId!;
    const others = await othersOf(home);
    expect(others.length).toBeGreaterThan(0);
    const [target, ...rest] = others;
    await setFree([home, ...rest], 0);
    await setFree([target!], 2);

    const busy = await act(u.token, id, 'start');
    expect(busy.statusCode).toBe(409);
    expect(json(busy)).toMatchObject({ code: 40920002 });
    expect(json<{ detail?: string; message: string }>(busy).message + (json<{ detail?: string }>(busy).detail ?? '')).toMatch(/迁移/);
    expect((await view(u.token, id)).tasks).toContain('migrate');

    const transfers = await countRows(s, 'ledger_transfers');
    const balances = await s.ctx.ledger.balances(u.user.id);
    const res = await migrate(u.token, id);
    expect(res.statusCode, res.body).toBe(200);
    expect(json<Instance>(res)).toMatchObject({ status: 'Pending_Migrate', hostId: home, actions: [], tasks: [] });
    expect(await gpuFree(target!)).toBe(1); // reserved for the move
    // The list shows it moving (数据迁移中), and nothing else can be done meanwhile.
    const listed = json<{ items: Instance[] }>(await get(s.app, `${LIST}?filterBy=status,Pending_Migrate`, u.token)).items;
    expect(listed.map((i) => i.id)).toEqual([id]);
    expect(json(await act(u.token, id, 'start'))).toMatchObject({ code: 40020010 });
    expect(json(await migrate(u.token, id))).toMatchObject({ code: 40020010 });

    await settle(DELAYS.migrate);
    const moved = await view(u.token, id);
    expect(moved).toMatchObject({ status: 'Stopped', hostId: target, lastError: null, noCard: false });
    expect(moved.actions).toContain('start');
    expect(await gpuFree(target!)).toBe(1); // kept for its next start
    expect(await gpuFree(home)).toBe(0);
    // Free of charge: no ledger movement at all.
    expect(await countRows(s, 'ledger_transfers')).toBe(transfers);
    expect(await s.ctx.ledger.balances(u.user.id)).toEqual(balances);

    const ops = await log(u.token, id);
    expect(ops.slice(0, 2).map((o) => [o.action, o.actionLabel, o.fromStatus, o.toStatus])).toEqual([
      ['done:migrate', '迁移完成', 'Pending_Migrate', 'Stopped'],
      ['migrate', '迁移到其他主机', 'Stopped', 'Pending_Migrate'],
    ]);
    expect(ops[1]!.detail).toMatch(/免费/);

    // Starting with the card now works, on the card the migration reserved (no second reservation).
    expect(json<Instance>(await act(u.token, id, 'start'))).toMatchObject({ status: 'Starting', noCard: false });
    expect(await gpuFree(target!)).toBe(1);
    await settle(DELAYS.start);
    expect(await view(u.token, id)).toMatchObject({ status: 'Running', hostId: target });
    expect((await row(id)).gpuHeld).toBe(1);
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
    expect(await gpuFree(target!)).toBe(2);
  });

  /** A stopped instance whose own host is full, with exactly one other host that has one free card. */
  async function stoppedWithOneFreeTarget() {
    const u = await fundedUser('20');
    const id = await stoppedInstance(u.token);
    const home = (await row(id)).hostId!;
    const [target, ...rest] = await othersOf(home);
    await setFree([home, ...rest], 0);
    await setFree([target!], 1);
    return { u, id, home, target: target! };
  }

  /** A stopped instance moved to the only other host with a free card (now held for it). */
  async function migratedToOneFreeCard() {
    const { u, id, target } = await stoppedWithOneFreeTarget();
    await migrate(u.token, id, { hostId: target });
    await settle(DELAYS.migrate);
    return { u, id, target };
  }

  it('gives the reserved cards back when the migrated instance is not started within the hold; it can still start later', async () => {
    const { u, id, target } = await migratedToOneFreeCard();
    expect(await gpuFree(target)).toBe(0);
    expect((await log(u.token, id))[0]!.detail).toMatch(/GPU 保留 2 小时/);

    // Within the hold nothing happens; a tick repeated after it releases once.
    s.clock.advance(119 * 60_000);
    expect(await s.ctx.instanceBilling.heldCardsTick()).toBe(0);
    expect(await gpuFree(target!)).toBe(0);
    s.clock.advance(60_000);
    expect(await s.ctx.instanceBilling.heldCardsTick()).toBe(1);
    expect(await s.ctx.instanceBilling.heldCardsTick()).toBe(0);
    expect(await gpuFree(target!)).toBe(1);
    expect(await row(id)).toMatchObject({ gpuHeld: 0, cardsHeldUntil: null, hostId: target });
    expect((await log(u.token, id))[0]).toMatchObject({ action: 'releaseCards', actionLabel: '释放预留 GPU' });

    // It starts like any stopped instance, taking a free card again.
    expect(json<Instance>(await act(u.token, id, 'start'))).toMatchObject({ status: 'Starting' });
    expect(await gpuFree(target!)).toBe(0);
    await settle(DELAYS.start);
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
  });

  it('does not release cards of an instance started within the hold', async () => {
    const { u, id } = await migratedToOneFreeCard();
    await act(u.token, id, 'start');
    await settle(DELAYS.start);
    expect((await row(id)).cardsHeldUntil).toBeNull();
    s.clock.advance(3 * 3_600_000);
    expect(await s.ctx.instanceBilling.heldCardsTick()).toBe(0);
    expect(await row(id)).toMatchObject({ status: 'Running', gpuHeld: 1 });
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
  });

  it('lists the hosts it may move to, its own room first, with their free cards', async () => {
    const u = await fundedUser('20');
    const id = await stoppedInstance(u.token);
    const home = (await row(id)).hostId!;
    const others = await othersOf(home);
    await setFree(others, 0);
    await setFree([others[0]!], 3);
    const targets = json<{ hostId: string; sameRoom: boolean; gpuFree: number; available: boolean }[]>(
      await get(s.app, `${LIST}/${id}/migrate/targets`, u.token),
    );
    expect(targets.map((t) => t.hostId).sort()).toEqual([...others].sort());
    expect(targets.find((t) => t.hostId === others[0])).toMatchObject({ gpuFree: 3, available: true });
    expect(targets.filter((t) => t.available).map((t) => t.hostId)).toEqual([others[0]]);
    // The catalogue has no RTX 4090 in another room of bj-b: every target is in its own room.
    expect(targets.every((t) => t.sameRoom)).toBe(true);
    expect((await get(s.app, `${LIST}/${id}/migrate/targets`)).statusCode).toBe(401);
    const other = await fundedUser('1');
    expect((await get(s.app, `${LIST}/${id}/migrate/targets`, other.token)).statusCode).toBe(404);
  });

  it('goes back to the old host when the driver fails the migration, and gives the target card back', async () => {
    const { u, id, home, target } = await stoppedWithOneFreeTarget();
    const fault = await post(s.app, '/dev/compute/faults', { kind: 'migrate', message: '目标主机数据盘写入失败' });
    expect(fault.statusCode, fault.body).toBe(200);

    expect(json<Instance>(await migrate(u.token, id, { hostId: target }))).toMatchObject({ status: 'Pending_Migrate' });
    expect(await gpuFree(target!)).toBe(0);
    await settle(DELAYS.migrate);
    expect(await view(u.token, id)).toMatchObject({ status: 'Stopped', hostId: home, lastError: '目标主机数据盘写入失败' });
    expect(await gpuFree(target!)).toBe(1);
    expect((await row(id)).gpuHeld).toBe(0);
    expect((await log(u.token, id))[0]).toMatchObject({ action: 'fail:migrate', actionLabel: '迁移到其他主机失败', toStatus: 'Stopped' });
    // The owner is told, with what to do next.
    const notices = json<{ items: { text: string }[] }>(await get(s.app, `/dev/outbox?to=${u.mobile}`)).items.map((i) => i.text);
    expect(notices.some((t) => t.includes('迁移失败（目标主机数据盘写入失败），实例仍在原主机'))).toBe(true);
    // And it can be tried again.
    expect(json<Instance>(await migrate(u.token, id))).toMatchObject({ status: 'Pending_Migrate' });
    await settle(DELAYS.migrate);
    expect(await view(u.token, id)).toMatchObject({ status: 'Stopped', hostId: target, lastError: null });
  });

  it('refuses with a clear code when no host can take it, when it runs, and for a wrong host', async () => {
    const u = await fundedUser('20');
    const id = await stoppedInstance(u.token);
    const home = (await row(id)).hostId!;
    const others = await othersOf(home);
    await setFree([home, ...others], 0);

    const none = await migrate(u.token, id, {});
    expect(none.statusCode).toBe(409);
    expect(json(none)).toMatchObject({ code: 40925001 });
    expect(JSON.stringify(json(none))).toMatch(/稍后再试.*无卡模式/);
    expect(json(await migrate(u.token, id, { hostId: others[0] }))).toMatchObject({ code: 40925001 });
    expect(json(await migrate(u.token, id, { hostId: home }))).toMatchObject({ code: 40025001 });
    expect(json(await migrate(u.token, id, { hostId: 'no-such-host' }))).toMatchObject({ code: 40025001 });
    expect(json(await migrate(u.token, id, { hostId: 42 }))).toMatchObject({ code: 40000001 });
    expect(json(await migrate(u.token, id, { hostId: '' }))).toMatchObject({ code: 40000001 });
    expect(json(await post(s.app, `${LIST}/not-a-uuid/migrate`, {}, u.token))).toMatchObject({ code: 40000001 });
    const stranger = await registerUser(s);
    expect(json(await migrate(stranger.token, id))).toMatchObject({ code: 40400004 });
    expect(await view(u.token, id)).toMatchObject({ status: 'Stopped', hostId: home });
    for (const h of others) expect(await gpuFree(h)).toBe(0);

    // Running: stop first.
    await setFree([home], 1);
    await act(u.token, id, 'start');
    await settle(DELAYS.start);
    await setFree(others, 1);
    const running = await migrate(u.token, id);
    expect(running.statusCode).toBe(400);
    expect(json(running)).toMatchObject({ code: 40021001 });
    expect(JSON.stringify(json(running))).toMatch(/请先关机/);
    expect(await view(u.token, id)).toMatchObject({ status: 'Running', hostId: home });
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
  });

  it('never gives the same card to two concurrent migrations', async () => {
    const a = await fundedUser('20');
    const b = await fundedUser('20');
    const ia = await stoppedInstance(a.token);
    const home = (await row(ia)).hostId!;
    const ib = await stoppedInstance(b.token, home);
    expect((await row(ib)).hostId).toBe(home);
    const [target, ...rest] = await othersOf(home);
    await setFree([home, ...rest], 0);
    await setFree([target!], 1);

    const answers = await Promise.all([migrate(a.token, ia), migrate(b.token, ib)]);
    const codes = answers.map((r) => (r.statusCode === 200 ? 200 : json<{ code: number }>(r).code)).sort();
    expect(codes).toEqual([200, 40925001]);
    expect(await gpuFree(target!)).toBe(0);
    await settle(DELAYS.migrate);
    const hosts = [(await row(ia)).hostId, (await row(ib)).hostId].sort();
    expect(hosts).toEqual([home, target].sort());
    expect(await gpuFree(target!)).toBe(0);
  });

  it('takes a no-card stopped (Shutdown) instance along too, and it ends Stopped ready for cards', async () => {
    const { u, id, target } = await stoppedWithOneFreeTarget();
    await act(u.token, id, 'startNoCard');
    await settle(DELAYS.start);
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
    expect((await view(u.token, id)).status).toBe('Shutdown');
    await migrate(u.token, id);
    await settle(DELAYS.migrate);
    expect(await view(u.token, id)).toMatchObject({ status: 'Stopped', noCard: false, hostId: target });
    // Starting without cards gives back the card kept for it.
    expect(json<Instance>(await act(u.token, id, 'startNoCard'))).toMatchObject({ status: 'Starting', noCard: true });
    expect(await gpuFree(target!)).toBe(1);
    await settle(DELAYS.start);
    await act(u.token, id, 'stop');
    await settle(DELAYS.stop);
  });
});

describe('migration targets in several rooms', () => {
  let s: TestServer;
  beforeAll(async () => {
    // The shipped catalogue plus one RTX 4090 host in bj-b's other room.
    const catalogue = JSON.parse(readFileSync(new URL('../../../catalogue/catalogue.json', import.meta.url), 'utf8')) as {
      hosts: { id: string; roomId: string }[];
    };
    const model = catalogue.hosts.find((h) => h.id === 'bj-b-1-h01')!;
    catalogue.hosts.push({ ...model, id: 'bj-b-2-h09', roomId: 'bj-b-2' });
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'catalogue-')), 'catalogue.json');
    writeFileSync(file, JSON.stringify(catalogue));
    s = await startTestServer({
      env: {
        CATALOGUE_FILE: file,
        COMPUTE_SIM_DELAYS: Object.entries(DELAYS)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      },
    });
  });
  afterAll(async () => s.close());
  const { fundedUser } = instanceKit(() => s);

  it('lists the hosts of its own room first, then those of the other rooms', async () => {
    const u = await fundedUser('20');
    const res = await post(
      s.app,
      GPU_ORDER,
      { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', hostId: 'bj-b-1-h01', cycle: 'Usage', duration: 1 },
      u.token,
    );
    expect(res.statusCode, res.body).toBe(200);
    const id = json<{ items: Instance[] }>(await get(s.app, `${LIST}?filterBy=category,Gpu`, u.token)).items[0]!.id;
    for (const ms of [DELAYS.create, DELAYS.boot]) {
      s.clock.advance(ms);
      await s.ctx.reconciler.tick();
    }
    expect((await post(s.app, `${LIST}/${id}/stop`, undefined, u.token)).statusCode).toBe(200);
    s.clock.advance(DELAYS.stop);
    await s.ctx.reconciler.tick();
    const targets = json<{ hostId: string; sameRoom: boolean }[]>(await get(s.app, `${LIST}/${id}/migrate/targets`, u.token));
    expect(
      targets
        .slice(0, 2)
        .map((t) => [t.hostId, t.sameRoom])
        .sort(),
    ).toEqual([
      ['bj-b-1-h02', true],
      ['bj-b-1-h03', true],
    ]);
    expect(targets.slice(2).map((t) => [t.hostId, t.sameRoom])).toEqual([['bj-b-2-h09', false]]);
  });
});
