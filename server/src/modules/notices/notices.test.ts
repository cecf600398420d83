import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { yuanToUnits, type GpuSubscription, type GpuSubscriptionList, type NoticeMessagePage, type NoticePreferences } from '@console/contract';
import { get, json, post, put, startTestServer, type TestServer } from '../../../test/harness.js';
import { DELAYS, DELAYS_ENV, HOUR, SEC, instanceKit } from '../../../test/instances-kit.js';
import { catalogueHosts, gpuSubscriptions, instances, outbox, users } from '../../db/schema.js';
import { AliyunSmsDriver } from '../../drivers/sms/aliyun.js';
import { checkLedger } from '../ledger/check.js';
import { loadConfig } from '../../config.js';
import { notices } from './kinds.js';

const DAY = 24 * HOUR;
const MESSAGES = '/userapi/api/v2.1/messages';
const PREFS = '/userapi/api/v2.1/users/me/notice-preferences';
const SUBS = '/userapi/api/v2.1/gpu-subscriptions';
const CODE_TEMPLATE = 'SMS_100000';
const TEMPLATES = 'StoppedForArrears=SMS_900001,ReleaseCountdown=SMS_900002';

/**
 * The server's SMS driver is the production Aliyun driver, its HTTP calls answered here: what a
 * notice puts on the wire (TemplateCode, TemplateParam, PhoneNumbers) is what these tests read.
 */
class AliyunWire {
  calls: URL[] = [];
  fetch = (async (url: string) => {
    this.calls.push(new URL(url));
    return new Response(JSON.stringify({ Code: 'OK', Message: 'OK' }), { status: 200 });
  }) as typeof fetch;
  /** The notices sent to a phone: template and parameters. */
  noticesTo(mobile: string) {
    return this.calls
      .filter((u) => u.searchParams.get('PhoneNumbers') === mobile && u.searchParams.get('TemplateCode') !== CODE_TEMPLATE)
      .map((u) => ({ template: u.searchParams.get('TemplateCode'), params: JSON.parse(u.searchParams.get('TemplateParam')!) as Record<string, string> }));
  }
  codeFor(mobile: string): string {
    const u = this.calls.filter((c) => c.searchParams.get('PhoneNumbers') === mobile && c.searchParams.get('TemplateCode') === CODE_TEMPLATE).at(-1)!;
    return (JSON.parse(u.searchParams.get('TemplateParam')!) as { code: string }).code;
  }
}

let seq = 0;
const mobileOf = () => `137${String(Date.now() % 100000).padStart(5, '0')}${String(++seq).padStart(3, '0')}`;

describe('notices that arrive', () => {
  let s: TestServer;
  const wire = new AliyunWire();
  const k = instanceKit(() => s);
  beforeAll(async () => {
    s = await startTestServer({
      env: { COMPUTE_SIM_DELAYS: DELAYS_ENV, BILLING_TICK_SECONDS: '60', ALIYUN_SMS_NOTICE_TEMPLATES: TEMPLATES },
      drivers: {
        sms: new AliyunSmsDriver({
          accessKeyId: 'id',
          accessKeySecret: 'secret',
          signName: '算力云',
          templateCode: CODE_TEMPLATE,
          endpoint: 'https://sms.test/',
          fetch: wire.fetch,
        }),
      },
    });
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  /** Registers through the real code path (the code read off the wire), with an e-mail address and cash. */
  async function user(cash: string, opts: { email?: boolean } = {}) {
    const mobile = mobileOf();
    expect((await post(s.app, '/api/v1/users/verify/smscode', { mobile, scene: 'register' })).statusCode).toBe(200);
    const res = await post(s.app, '/userapi/api/v2.1/register', { mobile, code: wire.codeFor(mobile), password: 'Abcd1234', agreed: true });
    expect(res.statusCode, res.body).toBe(200);
    s.clock.advance(61 * SEC);
    const u = { mobile, ...json<{ token: string; user: { id: string } }>(res), email: opts.email === false ? null : `n${seq}-${Date.now()}@example.com` };
    if (u.email) await s.ctx.db.update(users).set({ email: u.email }).where(eq(users.id, u.user.id));
    if (cash === '0') return u;
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(cash) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits(cash) },
      ],
    });
    return u;
  }
  const setTo = (at: Date) => s.clock.advance(at.getTime() - s.clock.now().getTime());
  const messages = async (token: string, q = '') => json<NoticeMessagePage>(await get(s.app, `${MESSAGES}${q}`, token));
  const unread = async (token: string) => json<{ count: number }>(await get(s.app, `${MESSAGES}/unread-count`, token)).count;
  const mails = async (to: string) =>
    (
      await s.ctx.db
        .select()
        .from(outbox)
        .where(and(eq(outbox.to, to), eq(outbox.channel, 'email')))
    ).map((r) => r.text);

  it('sends a stop for arrears through the provider with its template and parameters, once; a kind without a template goes by e-mail and 站内信 only, logged', async () => {
    const warn = vi.spyOn(s.app.log, 'warn');
    const u = await user('2');
    // The user wants SMS for a low balance too, but no template is configured for it.
    const prefs = await put(s.app, PREFS, { items: [{ kind: 'BalanceLow', sms: true, mail: true }] }, u.token);
    expect(json<NoticePreferences>(prefs).items.find((i) => i.kind === 'BalanceLow')).toMatchObject({ site: true, sms: true, mail: true });
    const { id } = await k.running(u.token);
    const name = (await k.row(id)).name;

    // 10 minutes in, ¥2 less what ran no longer pays 2 hours: told once, however often the tick runs.
    s.clock.advance(10 * 60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    await s.ctx.instanceBilling.meterTick();
    let inbox = await messages(u.token);
    expect(inbox.items.map((m) => m.kind)).toEqual(['BalanceLow']);
    expect(inbox.items[0]!.body).toMatch(/不足以支付按量实例 2 小时的费用/);
    expect(wire.noticesTo(u.mobile)).toEqual([]);
    expect((await mails(u.email!)).filter((t) => t.startsWith('【算力云】余额不足提醒'))).toHaveLength(1);
    expect(warn.mock.calls.filter(([, msg]) => String(msg).includes('ALIYUN_SMS_NOTICE_TEMPLATES 中的 BalanceLow'))).toHaveLength(1);

    // The balance runs out: stopped, and the provider gets the StoppedForArrears template once.
    s.clock.advance(HOUR);
    await s.ctx.instanceBilling.meterTick();
    await k.settle(DELAYS.stop);
    await s.ctx.instanceBilling.meterTick();
    expect(wire.noticesTo(u.mobile)).toEqual([{ template: 'SMS_900001', params: { name } }]);
    inbox = await messages(u.token);
    expect(inbox.items.map((m) => m.kind)).toEqual(['StoppedForArrears', 'BalanceLow']);
    expect(inbox.items[0]).toMatchObject({ title: `实例「${name}」因余额不足已关机`, link: `/console/ipvm/detail/Gpu/${id}`, readAt: null });
    expect(inbox.items[0]!.body).toMatch(/余额不足.*已自动关机/);
    expect((await mails(u.email!)).filter((t) => t.includes('因余额不足已关机'))).toHaveLength(1);

    // Another low-balance notice without a template is not logged again by this process.
    await s.ctx.notices.send(u.user.id, notices.balanceLow({ spendable: 1n, hourly: 1n, hours: 2, since: new Date(1) }));
    expect(warn.mock.calls.filter(([, msg]) => String(msg).includes('ALIYUN_SMS_NOTICE_TEMPLATES 中的 BalanceLow'))).toHaveLength(1);
    warn.mockRestore();
  });

  it('honours the preferences: SMS and e-mail off leave the 站内信 only; the balance-low notice comes again after a recharge', async () => {
    const u = await user('2');
    const before = json<NoticePreferences>(await get(s.app, PREFS, u.token));
    expect(before).toMatchObject({ mobile: u.mobile, email: u.email });
    expect(before.items.find((i) => i.kind === 'StoppedForArrears')).toMatchObject({ sms: true, mail: true, site: true });
    expect(before.items.find((i) => i.kind === 'BalanceLow')).toMatchObject({ sms: false, mail: true });
    const off = await put(
      s.app,
      PREFS,
      {
        items: [
          { kind: 'StoppedForArrears', sms: false, mail: false },
          { kind: 'BalanceLow', sms: false, mail: false },
        ],
      },
      u.token,
    );
    expect(off.statusCode, off.body).toBe(200);
    expect(json(await put(s.app, PREFS, { items: [{ kind: 'Nope', sms: true, mail: true }] }, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await put(s.app, PREFS, { items: [] }, u.token))).toMatchObject({ code: 40000001 });

    const { id } = await k.running(u.token);
    s.clock.advance(10 * 60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    // A recharge covers the 2 hours: the flag clears; the next drop is told again.
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits('10') },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits('10') },
      ],
    });
    s.clock.advance(60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    const hourly = (await k.row(id)).meterRate;
    const cashNow = await k.cash(u.user.id);
    await s.ctx.ledger.post({
      key: `drain-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { userId: u.user.id, kind: 'cash' }, amount: -(cashNow - hourly) },
        { account: { platform: 'compensation' }, amount: cashNow - hourly },
      ],
    });
    s.clock.advance(60 * SEC);
    await s.ctx.instanceBilling.meterTick();
    expect((await messages(u.token)).items.map((m) => m.kind)).toEqual(['BalanceLow', 'BalanceLow']);

    s.clock.advance(2 * HOUR);
    await s.ctx.instanceBilling.meterTick();
    await k.settle(DELAYS.stop);
    expect((await k.row(id)).status).toBe('Stopped');
    expect((await messages(u.token)).items.map((m) => m.kind)).toEqual(['StoppedForArrears', 'BalanceLow', 'BalanceLow']);
    expect(wire.noticesTo(u.mobile)).toEqual([]);
    expect(await mails(u.email!)).toEqual([]);
  });

  it('counts down a stopped instance’s release 7 days and 1 day before, once each however often the job runs, and again for a new schedule', async () => {
    const u = await user('20');
    const { id } = await k.stopped(u.token);
    const r = await k.row(id);
    const releaseAt = r.releaseAt!;
    expect(releaseAt.getTime() - r.stoppedAt!.getTime()).toBe(15 * DAY);
    const tick = async () => {
      await s.ctx.instanceBilling.releaseTick();
      await s.ctx.instanceBilling.releaseTick();
    };
    setTo(new Date(releaseAt.getTime() - 8 * DAY));
    await tick();
    expect(wire.noticesTo(u.mobile)).toEqual([]);
    setTo(new Date(releaseAt.getTime() - 7 * DAY + 60 * SEC));
    await tick();
    setTo(new Date(releaseAt.getTime() - 3 * DAY));
    await tick();
    setTo(new Date(releaseAt.getTime() - DAY + 60 * SEC));
    await tick();
    await tick();
    const sent = wire.noticesTo(u.mobile);
    expect(sent.map((n) => [n.template, n.params.name, n.params.days])).toEqual([
      ['SMS_900002', r.name, '7 天'],
      ['SMS_900002', r.name, '1 天'],
    ]);
    const inbox = (await s.ctx.notices.list(u.user.id, { page: 1, pageSize: 10 })).items;
    expect(inbox.map((m) => m.title)).toEqual([`实例「${r.name}」将于 1 天后释放`, `实例「${r.name}」将于 7 天后释放`]);
    expect(inbox[0]!.body).toMatch(/将于 .* 释放，数据将被清除且无法恢复/);

    // Started and stopped again (a new release date): the countdown starts over.
    const again = new Date(s.clock.now().getTime() + 15 * DAY);
    await s.ctx.db.update(instances).set({ releaseAt: again }).where(eq(instances.id, id));
    setTo(new Date(again.getTime() - 7 * DAY + 60 * SEC));
    await tick();
    expect(wire.noticesTo(u.mobile)).toHaveLength(3);
  });

  it('tells a prepaid owner before expiry (2 hours ahead for a Day instance), at expiry, and 1 day before release, each once', async () => {
    const u = await user('300', { email: false });
    const { id } = await k.running(u.token, { cycle: 'Day' });
    const expireAt = (await k.row(id)).expireAt!;
    const kinds = async () => (await s.ctx.notices.list(u.user.id, { page: 1, pageSize: 20 })).items.map((m) => m.title);
    expect(await s.ctx.prepaid.expiringNoticeTick()).toBe(0);
    setTo(new Date(expireAt.getTime() - 3 * HOUR));
    expect(await s.ctx.prepaid.expiringNoticeTick()).toBe(0);
    setTo(new Date(expireAt.getTime() - 2 * HOUR + SEC));
    expect(await s.ctx.prepaid.expiringNoticeTick()).toBe(1);
    expect(await s.ctx.prepaid.expiringNoticeTick()).toBe(0);
    const name = (await k.row(id)).name;
    expect(await kinds()).toEqual([`实例「${name}」即将到期`]);

    setTo(new Date(expireAt.getTime() + SEC));
    await s.ctx.instanceBilling.expiryTick();
    await k.settle(DELAYS.stop);
    await s.ctx.instanceBilling.releaseTick();
    // The expiry notice names the release date: no separate 7-day countdown right after it.
    expect(await kinds()).toEqual([`实例「${name}」已到期关机`, `实例「${name}」即将到期`]);
    const releaseAt = (await k.row(id)).releaseAt!;
    setTo(new Date(releaseAt.getTime() - DAY + SEC));
    await s.ctx.instanceBilling.releaseTick();
    await s.ctx.instanceBilling.releaseTick();
    expect(await kinds()).toEqual([`实例「${name}」将于 1 天后释放`, `实例「${name}」已到期关机`, `实例「${name}」即将到期`]);
    // No e-mail address: nothing mailed; SMS for the countdown (a template exists), none for expiry (none configured).
    expect(wire.noticesTo(u.mobile).map((n) => n.template)).toEqual(['SMS_900002']);
  });

  it('pages the message center newest first, filters unread, marks one and all read, and keeps each account’s messages its own', async () => {
    const u = await user('0');
    const other = await user('0');
    for (let n = 1; n <= 25; n++) {
      s.clock.advance(SEC);
      await s.ctx.notices.send(u.user.id, notices.instanceEvent({ instance: { id: randomUUID(), name: `机-${n}`, category: 'Gpu' }, text: `第 ${n} 条` }));
    }
    const p2 = await messages(u.token, '?page=2&pageSize=10');
    expect(p2).toMatchObject({ total: 25, page: 2, pageSize: 10 });
    expect(p2.items.map((m) => m.body)).toEqual(Array.from({ length: 10 }, (_, i) => `第 ${15 - i} 条`));
    expect(await unread(u.token)).toBe(25);

    const first = p2.items[0]!;
    const read = await post(s.app, `${MESSAGES}/${first.id}/read`, undefined, u.token);
    expect(json(read)).toMatchObject({ id: first.id, readAt: s.clock.now().toISOString() });
    expect(json(await post(s.app, `${MESSAGES}/${first.id}/read`, undefined, u.token))).toMatchObject({ readAt: s.clock.now().toISOString() });
    expect(await unread(u.token)).toBe(24);
    expect((await messages(u.token, '?unread=true&pageSize=100')).items.map((m) => m.id)).not.toContain(first.id);

    // Someone else's message, a malformed id: refused, nothing changed.
    expect(json(await post(s.app, `${MESSAGES}/${first.id}/read`, undefined, other.token))).toMatchObject({ code: 40400004 });
    expect(json(await post(s.app, `${MESSAGES}/not-an-id/read`, undefined, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await get(s.app, `${MESSAGES}?pageSize=0`, u.token))).toMatchObject({ code: 40000001 });
    expect((await messages(other.token)).total).toBe(0);
    expect((await get(s.app, MESSAGES)).statusCode).toBe(401);

    expect(json(await post(s.app, `${MESSAGES}/read-all`, undefined, u.token))).toEqual({ count: 24 });
    expect(await unread(u.token)).toBe(0);
    expect(json(await post(s.app, `${MESSAGES}/read-all`, undefined, u.token))).toEqual({ count: 0 });
  });

  it('notifies a 有卡时通知我 subscription once when cards free up, and limits waiting subscriptions to 20', async () => {
    const u = await user('0');
    const host = 'bj-b-2-h01'; // the only H800 host of 北京 B 区
    const [h] = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, host));
    await s.ctx.db.update(catalogueHosts).set({ gpuFree: 0 }).where(eq(catalogueHosts.id, host));
    s.ctx.catalogueStore.invalidateInventory();

    const sub = await post(s.app, SUBS, { gpuTypeId: 'h800', regionId: 'bj-b' }, u.token);
    expect(json<GpuSubscription>(sub)).toMatchObject({
      gpuTypeId: 'h800',
      gpuName: 'H800',
      regionId: 'bj-b',
      regionName: '北京 B 区',
      gpuCount: 1,
      notifiedAt: null,
    });
    // The same subscription again is the same one.
    expect(json<GpuSubscription>(await post(s.app, SUBS, { gpuTypeId: 'h800', regionId: 'bj-b', gpuCount: '1' }, u.token)).id).toBe(
      json<GpuSubscription>(sub).id,
    );
    expect(json(await post(s.app, SUBS, { gpuTypeId: 'nope', regionId: 'bj-b' }, u.token))).toMatchObject({ code: 40020001 });
    expect(json(await post(s.app, SUBS, { gpuTypeId: 'h800', regionId: 'bj-b', gpuCount: 9 }, u.token))).toMatchObject({ code: 40000001 });

    expect(await s.ctx.gpuSubscriptions.tick()).toBe(0);
    // Two cards come back (an instance released them): told once, however often the job runs.
    await s.ctx.inventory.release(s.ctx.db, host, 2);
    const [first, second] = await Promise.all([s.ctx.gpuSubscriptions.tick(), s.ctx.gpuSubscriptions.tick()]);
    expect(first + second).toBe(1);
    expect(await s.ctx.gpuSubscriptions.tick()).toBe(0);
    const inbox = await messages(u.token);
    expect(inbox.items.map((m) => [m.kind, m.title])).toEqual([['GpuAvailable', '北京 B 区 H800 有卡了']]);
    expect(inbox.items[0]!.link).toBe('/stats/cloud/gpu?regionId=bj-b&gpuTypeId=h800');
    const list = json<GpuSubscriptionList>(await get(s.app, SUBS, u.token));
    expect(list.limit).toBe(20);
    expect(list.items[0]!.notifiedAt).not.toBeNull();

    // 20 waiting: the 21st is refused with the documented code; cancelling one makes room.
    await s.ctx.db.insert(gpuSubscriptions).values(
      Array.from({ length: 20 }, (_, n) => ({
        id: randomUUID(),
        userId: u.user.id,
        gpuTypeId: ['rtx4090', 'rtx3090', 'l20', 'a100-80g', 'v100-32g'][n % 5]!,
        regionId: 'cq-a',
        gpuCount: Math.floor(n / 5) + 1,
        createdAt: s.clock.now(),
      })),
    );
    const refused = await post(s.app, SUBS, { gpuTypeId: 'h800', regionId: 'sh-a' }, u.token);
    expect(refused.statusCode).toBe(400);
    expect(json(refused)).toMatchObject({ code: 40028001 });
    const waiting = json<GpuSubscriptionList>(await get(s.app, SUBS, u.token)).items.filter((i) => !i.notifiedAt);
    expect(json(await s.app.inject({ method: 'DELETE', url: `${SUBS}/${waiting[0]!.id}`, headers: { authorization: `Bearer ${u.token}` } }))).toEqual({
      ok: true,
    });
    expect((await post(s.app, SUBS, { gpuTypeId: 'h800', regionId: 'sh-a' }, u.token)).statusCode).toBe(200);
    await s.ctx.db.update(catalogueHosts).set({ gpuFree: h!.gpuFree }).where(eq(catalogueHosts.id, host));
    s.ctx.catalogueStore.invalidateInventory();
  });
});

describe('ALIYUN_SMS_NOTICE_TEMPLATES', () => {
  it('maps kinds to template codes and names what is wrong', () => {
    expect(loadConfig({ ALIYUN_SMS_NOTICE_TEMPLATES: ' StoppedForArrears=SMS_1 , GpuAvailable=SMS_22' }).ALIYUN_SMS_NOTICE_TEMPLATES).toEqual({
      StoppedForArrears: 'SMS_1',
      GpuAvailable: 'SMS_22',
    });
    expect(loadConfig({}).ALIYUN_SMS_NOTICE_TEMPLATES).toEqual({});
    expect(() => loadConfig({ ALIYUN_SMS_NOTICE_TEMPLATES: 'Stopped=SMS_1' })).toThrow(/ALIYUN_SMS_NOTICE_TEMPLATES.*「Stopped=SMS_1」应为 类型=模板编号/);
    expect(() => loadConfig({ ALIYUN_SMS_NOTICE_TEMPLATES: 'BalanceLow=123' })).toThrow(/BalanceLow 的模板编号「123」应为 SMS_ 加数字/);
    expect(() => loadConfig({ ALIYUN_SMS_NOTICE_TEMPLATES: 'BalanceLow=SMS_1,BalanceLow=SMS_2' })).toThrow(/BalanceLow 重复配置了模板/);
  });
});
