/**
 * Billing of instances (issue 6, DESIGN.md "Orders and instances").
 *
 * Post-paid (Usage/Hour): a run is metered by the millisecond at the rate it started with (cards or
 * no-card mode). Each tick charges what the run owes in total, rounded once, minus what it has been
 * charged already, so however the run is cut into ticks the sum is the same: 2 h 30 m at ¥1.58/h is
 * ¥3.95 exactly. A tick is charged under a key of the instance, its run and the run's length, with the
 * instance row locked, so two processes (or a retried tick) charge it once. When the balance cannot
 * pay, what is missing is kept as arrears and the instance is stopped: it runs on credit for at most
 * one tick (BILLING_TICK_SECONDS). Data disk beyond the free size is charged by the day, stopped or
 * not, while the instance exists.
 *
 * Prepaid (Day/Week/Month): paid up front until expireAt; stopped at expiry; released
 * expiredReleaseDays later, with a notice releaseNoticeHours before. Post-paid instances stopped
 * for stoppedReleaseDays are released the same way.
 */
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, sql } from 'drizzle-orm';
import { IDLE_MACHINE_STATUSES, formatYuan } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instances } from '../../db/schema.js';
import type { CatalogueStore } from '../catalogue/store.js';
import { pgArray } from '../../db/arrays.js';
import type { OrderService } from '../orders/service.js';
import type { InstanceRow, InstanceService } from './service.js';

const MS_PER_HOUR = 3_600_000n;
const DAY_MS = 86_400_000;
const BATCH = 200;
/** Runs charged together by one tick transaction. */
const METER_BATCH = 5000;

type MeterColumns = Pick<InstanceRow, 'meterMs' | 'meterCharged' | 'meterSince' | 'arrears'>;

/** What a run at `ratePerHour` costs after `ms` milliseconds, rounded half up to a whole unit. */
export function runCost(ratePerHour: bigint, ms: bigint): bigint {
  return (ratePerHour * ms + MS_PER_HOUR / 2n) / MS_PER_HOUR;
}

export class Meter {
  constructor(private orders: OrderService) {}

  /**
   * Charges the run of `row` up to `until` and returns the instance's new metering columns. What
   * the balance could not pay is added to the arrears.
   */
  async settle(tx: Tx, row: InstanceRow, until: Date): Promise<MeterColumns> {
    return (await this.settleMany(tx, [row], until)).get(row.id)!;
  }

  /** settle for a batch of locked instances, charged together (one ledger batch). */
  async settleMany(tx: Tx, rows: InstanceRow[], until: Date): Promise<Map<string, MeterColumns>> {
    const out = new Map<string, MeterColumns>();
    const items: { row: InstanceRow; ms: bigint; due: bigint; key: string }[] = [];
    for (const row of rows) {
      if (!row.meterSince || !row.meterSegment || !row.usageOrderId || until <= row.meterSince) {
        out.set(row.id, { meterMs: row.meterMs, meterCharged: row.meterCharged, meterSince: row.meterSince, arrears: row.arrears });
        continue;
      }
      const ms = row.meterMs + BigInt(until.getTime() - row.meterSince.getTime());
      items.push({ row, ms, due: runCost(row.meterRate, ms) - row.meterCharged, key: `usage:${row.id}:${row.meterSegment.getTime()}:${ms}` });
    }
    const charged = await this.orders.chargeUsageMany(
      tx,
      items.map((i) => ({ orderId: i.row.usageOrderId!, amount: i.due, key: i.key, memo: `${i.row.name} 按量计费` })),
    );
    for (const i of items) {
      const paid = charged.get(i.key) ?? 0n;
      out.set(i.row.id, { meterMs: i.ms, meterCharged: i.row.meterCharged + i.due, meterSince: until, arrears: i.row.arrears + (i.due - paid) });
    }
    return out;
  }

  /** One day of data disk beyond the free size, from `row.diskBilledUntil`. */
  async chargeDiskDay(tx: Tx, row: InstanceRow): Promise<Pick<InstanceRow, 'diskBilledUntil' | 'arrears'>> {
    const from = row.diskBilledUntil!;
    const due = row.diskDailyPrice;
    const charged = await this.orders.chargeUsage(tx, row.usageOrderId!, due, `disk:${row.id}:${from.getTime()}`, `${row.name} 数据盘扩容 ${row.dataDiskGb - row.freeDataDiskGb} GB（1 天）`);
    return { diskBilledUntil: new Date(from.getTime() + DAY_MS), arrears: row.arrears + (due - charged) };
  }
}

export class InstanceBilling {
  constructor(
    private deps: { db: Db; clock: Clock; meter: Meter; instances: InstanceService; orders: OrderService; catalogue: CatalogueStore; tickSeconds: number },
  ) {}

  /**
   * Charges every metered run up to now; stops the instances whose balance ran out. Rows another
   * process is charging are skipped (it charges them). Returns how many runs were charged.
   */
  async meterTick(): Promise<number> {
    const now = this.deps.clock.now();
    let handled = 0;
    const toStop: { id: string; why: string }[] = [];
    for (let after = ''; ; ) {
      const batch = await this.deps.db.transaction(async (tx) => {
        const rows = await tx
          .select()
          .from(instances)
          .where(and(isNotNull(instances.meterSince), lt(instances.meterSince, now), after ? gt(instances.id, after) : undefined))
          .orderBy(asc(instances.id))
          .limit(METER_BATCH)
          .for('update', { skipLocked: true });
        if (!rows.length) return rows;
        const settled = await this.deps.meter.settleMany(tx, rows, now);
        const m = rows.map((r) => settled.get(r.id)!);
        await tx.execute(sql`update instances i set meter_ms = v.ms, meter_charged = v.charged, meter_since = v.since, arrears = v.arrears
          from unnest(${pgArray(rows.map((r) => r.id))}::uuid[], ${pgArray(m.map((x) => x.meterMs))}::bigint[], ${pgArray(m.map((x) => x.meterCharged))}::bigint[],
            ${pgArray(m.map((x) => x.meterSince?.toISOString() ?? null))}::timestamptz[], ${pgArray(m.map((x) => x.arrears))}::bigint[]) as v(id, ms, charged, since, arrears)
          where i.id = v.id`);
       
        const wallets = await this.deps.orders.spendableMany(tx, [...new Set(rows.map((r) => r.userId))]);
        for (const r of rows) {
          const why = this.stopReason(r, settled.get(r.id)!.arrears, wallets.get(r.userId)!);
          if (why) toStop.push({ id: r.id, why });
        }
       
        return rows;
      });
     
      handled += batch.length;
      if (batch.length < METER_BATCH) break;
      after = batch[batch.length - 1]!.id;
    }
    for (const s of toStop) await this.stopForBalance(s.id, s.why);
    return handled;
  }

  /** Stops when the balance has run out, or cannot pay the next tick. */
  private stopReason(row: InstanceRow, arrears: bigint, spendable: bigint): string | null {
    if (row.status !== 'Running') return null;
    if (arrears > 0n) return `余额不足，欠费 ${formatYuan(arrears)} 元`;
    const nextTick = runCost(row.meterRate, BigInt(this.deps.tickSeconds * 1000));
    return spendable < nextTick ? `余额 ${formatYuan(spendable)} 元，不足以支付下一计费周期` : null;
  }

  private async stopForBalance(id: string, why: string) {
    const stopped = await this.deps.instances.actAsSystem(id, 'stop', why);
    if (!stopped) return;
    const [row] = await this.deps.db.select().from(instances).where(eq(instances.id, id));
    if (row) await this.deps.instances.notifyOwner(row.userId, `您的按量实例「${row.name}」因${why}已自动关机。充值后可在控制台重新开机，数据盘数据保留。`);
  }

  /** Data disk days that have begun, for post-paid instances that still exist. */
  async diskTick(): Promise<number> {
    const now = this.deps.clock.now();
    const toStop: { id: string; why: string }[] = [];
    const n = await this.deps.db.transaction(async (tx) => {
      const rows = await tx
        .select()
        .from(instances)
        .where(and(isNotNull(instances.diskBilledUntil), lte(instances.diskBilledUntil, now), isNull(instances.releasedAt)))
        .limit(BATCH)
        .for('update', { skipLocked: true });
      for (const row of rows) {
        let cur = row;
        while (cur.diskBilledUntil! <= now) {
          const set = await this.deps.meter.chargeDiskDay(tx, cur);
          cur = { ...cur, ...set };
        }
        await tx.update(instances).set({ diskBilledUntil: cur.diskBilledUntil, arrears: cur.arrears }).where(eq(instances.id, row.id));
        if (cur.arrears > 0n && row.status === 'Running') toStop.push({ id: row.id, why: `余额不足，欠费 ${formatYuan(cur.arrears)} 元` });
      }
      return rows.length;
    });
    for (const s of toStop) await this.stopForBalance(s.id, s.why);
    return n;
  }

  /** Prepaid instances past expireAt: stopped, and their release scheduled after the grace period. */
  async expiryTick(): Promise<number> {
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const due = await this.deps.db
      .select()
      .from(instances)
      .where(and(isNotNull(instances.expireAt), lte(instances.expireAt, now), isNull(instances.releasedAt), isNull(instances.releaseAt), inArray(instances.status, [...IDLE_MACHINE_STATUSES])))
      .limit(BATCH);
    for (const row of due) {
      const releaseAt = new Date(row.expireAt!.getTime() + settings.expiredReleaseDays * DAY_MS);
      await this.deps.db.update(instances).set({ releaseAt }).where(and(eq(instances.id, row.id), isNull(instances.releaseAt)));
      if (row.status === 'Running') await this.deps.instances.actAsSystem(row.id, 'stop', '包周期已到期');
      await this.deps.instances.notifyOwner(row.userId, `您的实例「${row.name}」已到期并关机，将于 ${beijing(releaseAt)} 释放，请在此之前续费或备份数据。`);
    }
    return due.length;
  }

  /** Notices before a scheduled release, then the release itself. */
  async releaseTick(): Promise<number> {
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const noticeBy = new Date(now.getTime() + settings.releaseNoticeHours * 3_600_000);
    const soon = await this.deps.db
      .select()
      .from(instances)
      .where(and(isNotNull(instances.releaseAt), lte(instances.releaseAt, noticeBy), isNull(instances.releaseNoticeAt), isNull(instances.releasedAt)))
      .limit(BATCH);
    for (const row of soon) {
      const [claimed] = await this.deps.db
        .update(instances)
        .set({ releaseNoticeAt: now })
        .where(and(eq(instances.id, row.id), isNull(instances.releaseNoticeAt)))
        .returning();
      if (claimed) await this.deps.instances.notifyOwner(row.userId, `您的实例「${row.name}」将于 ${beijing(row.releaseAt!)} 释放，数据将被清除且无法恢复。如需保留，请在此之前开机或续费。`);
    }
    const due = await this.deps.db
      .select()
      .from(instances)
      .where(and(isNotNull(instances.releaseAt), lte(instances.releaseAt, now), isNull(instances.releasedAt), inArray(instances.status, ['Stopped', 'Shutdown', 'Failed'])))
      .limit(BATCH);
    let n = 0;
    for (const row of due) if (await this.deps.instances.actAsSystem(row.id, 'release', '关机超期自动释放')) n++;
    return soon.length + n;
  }
}

function beijing(d: Date): string {
  return new Date(d.getTime() + 8 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
}
