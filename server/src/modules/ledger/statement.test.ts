import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TransferKind, formatYuan, type StatementPage } from '@console/contract';
import { get, json, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { checkLedger } from './check.js';

const MIN = 60_000;
const STATEMENT = '/billing/api/v1/user/statement';
const GROUP = '/billing/api/v1/user/statement/group';

describe('the statement (收支明细)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  /** A post-paid charge as the meter posts it: 0.0033 yuan, a row of 0.00 on its own. */
  const charge = (userId: string, key: string, memo: string, amount = 33n) =>
    s.ctx.ledger.post({
      key,
      kind: 'usage',
      memo,
      orderId: 'O20261123080000aaaa0001',
      legs: [
        { account: { userId, kind: 'cash' }, amount: -amount },
        { account: { platform: 'revenue' }, amount },
      ],
    });

  it('rolls post-paid charges up per instance and Beijing hour, never shows a 0.00 row, and pages by roll-up rows', async () => {
    const u = await registerUser(s);
    const payer = u.user.id;
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      memo: '测试补偿',
      legs: [
        { account: { platform: 'compensation' }, amount: -100_0000n },
        { account: { userId: payer, kind: 'cash' }, amount: 100_0000n },
      ],
    });
    // From 16:30 Beijing time: ticks from 16:31 to 17:40, one a minute, for instance A (29 in the
    // 16 o'clock hour, 41 in the next); five from 17:31 for instance B; a data-disk day of A at 17:10.
    const a = randomUUID();
    const b = randomUUID();
    s.clock.advance(Date.parse('2026-11-23T08:30:00Z') - s.clock.now().getTime());
    const segment = s.clock.now().getTime();
    for (let i = 1; i <= 70; i++) {
      s.clock.advance(MIN);
      await charge(payer, `usage:${a}:${segment}:${i * MIN}`, '训练机 按量计费');
      if (i === 40) await charge(payer, `disk:${a}:${s.clock.now().getTime()}`, '训练机 数据盘扩容 70 GB（1 天）', 4900n);
      if (i > 60 && i <= 65) await charge(payer, `usage:${b}:${segment}:${i * MIN}`, '推理机 按量计费');
    }

    const page = async (q: string) => {
      const res = await get(s.app, `${STATEMENT}?${q}`, u.token);
      expect(res.statusCode, res.body).toBe(200);
      return json<StatementPage>(res);
    };
    const all = await page('kind=cash&page=1&pageSize=10');
    expect(all.total).toBe(4);
    expect(all.items.map((r) => [r.memo, r.entries, r.group])).toEqual([
      ['训练机 按量计费', 42, `${a}@2026112317`],
      ['推理机 按量计费', 5, `${b}@2026112317`],
      ['训练机 按量计费', 29, `${a}@2026112316`],
      ['测试补偿', 1, null],
    ]);
    expect(all.items.map((r) => r.amount)).toEqual([String(-41n * 33n - 4900n), String(-5n * 33n), String(-29n * 33n), '1000000']);
    // No row reads 0.00, and every type has its Chinese label.
    for (const r of all.items) {
      expect(formatYuan(r.amount)).not.toBe('0.00');
      expect(TransferKind.label(r.kind)).not.toBe('其他收支');
    }
    expect(all.items.map((r) => TransferKind.label(r.kind))).toEqual(['按量计费', '按量计费', '按量计费', '平台补偿']);
    // A roll-up shows the balance after its last entry and the hour it covers.
    const balance = (await s.ctx.ledger.balances(payer)).cash;
    expect(all.items[0]!.balanceAfter).toBe(String(balance));
    expect(all.items[1]!.periodStart).toBe('2026-11-23T09:00:00.000Z');
    expect(all.items[2]!).toMatchObject({ periodStart: '2026-11-23T08:00:00.000Z', balanceAfter: String(100_0000n - 29n * 33n) });

    // Paging counts roll-up rows, not ledger entries.
    const first = await page('kind=cash&page=1&pageSize=3');
    const second = await page('kind=cash&page=2&pageSize=3');
    expect([first.total, second.total]).toEqual([4, 4]);
    expect(first.items).toHaveLength(3);
    expect(second.items.map((r) => r.memo)).toEqual(['测试补偿']);

    // Each ledger entry stays reachable from its roll-up.
    const group = `${a}@2026112317`;
    const entries = json<StatementPage>(await get(s.app, `${GROUP}?kind=cash&group=${group}&pageSize=50`, u.token));
    expect(entries.total).toBe(42);
    expect(entries.items).toHaveLength(42);
    expect(entries.items.every((e) => e.entries === 1 && e.group === null)).toBe(true);
    expect(entries.items.reduce((n, e) => n + BigInt(e.amount), 0n)).toBe(-41n * 33n - 4900n);
    expect(entries.items.filter((e) => e.memo.includes('数据盘'))).toHaveLength(1);
    const paged = json<StatementPage>(await get(s.app, `${GROUP}?kind=cash&group=${group}&page=5&pageSize=10`, u.token));
    expect([paged.total, paged.items.length]).toEqual([42, 2]);

    // Another account's roll-up is empty for this user; a malformed group is a 400 with the field named.
    const other = await registerUser(s);
    expect(json<StatementPage>(await get(s.app, `${GROUP}?kind=cash&group=${group}`, other.token)).total).toBe(0);
    const bad = json(await get(s.app, `${GROUP}?kind=cash&group=nope`, u.token));
    expect(bad).toMatchObject({ code: 40000001 });
    expect(bad.detail).toMatch(/group/);
  });
});
