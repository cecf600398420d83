/**
 * Billing of instances (DESIGN.md "Orders and instances").
 *
 * Post-paid (Usage/Hour): a run is metered by the millisecond at the rate it started with (cards or
 * no-card mode). Each tick charges what the run owes in total, rounded once, minus what it has been
 * charged already, so however the run is cut into ticks the sum is the same: 2 h 30 m at ¥1.58/h is
 * ¥3.95 exactly. A tick is charged under a key of the instance, its run and the run's length, with the
 * instance row locked, so two processes (or a retried tick) charge it once. When the balance cannot
 * pay, what is missing is kept as arrears and the instance is stopped: it runs on credit for at most
 * one tick (BILLING_TICK_SECONDS). Data disk beyond the free size is charged by the hour, stopped or
 * not, while the instance exists: each hour when it begins, its share of the daily price (diskHourCost),
 * so releasing a minute after an expansion costs at most that hour.
 *
 * Prepaid (Day/Week/Month): paid up front until expireAt; stopped at expiry; released
 * expiredReleaseDays later, with notices RELEASE_COUNTDOWN_DAYS and releaseNoticeHours before.
 * Post-paid instances stopped for stoppedReleaseDays are released the same way. Payers hear of a
 * low balance, a stop for arrears, an expiry and a coming release through the notices module.
 */
import { and, asc, eq, gte, inArray, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { IDLE_MACHINE_STATUSES, formatYuan } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { instances } from './schema.js';
import type { CatalogueStore } from '../catalogue/index.js';
import { pgArray } from '../../db/arrays.js';
import type { BalanceFloors } from '../users/index.js';
import type { MigrationService } from './migrate.js';
import { notices, type PayerLoad } from '../notices/index.js';
import type { InstanceService } from './service.js';
import { meterColumns, runCost, type AutoStop, type Meter, type MeterRow } from './meter.js';

const DAY_MS = 86_400_000;
/** The release countdown's first notice: this many days before a stopped instance is released (the last one is releaseNoticeHours before). */
export const RELEASE_COUNTDOWN_DAYS = 7;
const BATCH = 200;
/** Runs charged together by one tick transaction. */
const METER_BATCH = 5000;
/** Lanes of a meter tick on PostgreSQL: transactions charging at the same time, each on a pool connection. */
export const METER_LANES = 3;

export class InstanceBilling {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      meter: Meter;
      instances: InstanceService;
      /** Gives back the cards a migrated instance did not start on in time. */
      migration: MigrationService;
      catalogue: CatalogueStore;
      tickSeconds: number;
      /** Lanes of a meter tick running at once, each on its own connection (1 on PGlite, which has one). */
      workers?: number;
      /** After a tick: each payer's spendable balance against their running runs' hourly cost (the balance-low notice). */
      balanceLow?: (loads: PayerLoad[]) => Promise<unknown>;
      /** The payers' balance floors (余额保底): their running post-paid instances stop below it. */
      floors?: Pick<BalanceFloors, 'floorsOf'>;
    },
  ) {}

  /**
   * Charges every metered run up to now; stops the instances whose balance ran out. Rows another
   * process is charging are skipped (it charges them). Returns how many runs were charged.
   *
   * On PostgreSQL the runs are split into `workers` lanes by owner, each lane charging its batches
   * in its own transaction on its own connection at the same time as the others: a payer's accounts
   * belong to one lane and each lane posts revenue to its own platform shards, so lanes do not wait
   * for each other's locks. Every lock is still taken in the ledger's order, so lanes (and other
   * processes) that do meet queue instead of deadlocking.
   */
  async meterTick(): Promise<number> {
    const now = this.deps.clock.now();
    const lanes = Math.max(1, this.deps.workers ?? 1);
    const toStop: AutoStop[] = [];
    const loads = new Map<string, PayerLoad & { ids: string[] }>();
    const results = await Promise.allSettled(Array.from({ length: lanes }, (_, index) => this.meterLane(now, { index, count: lanes }, toStop, loads)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    for (const s of toStop) await (s.cause === 'limit' ? this.stopForLimit(s.id, s.why) : this.stopForBalance(s.id, s.why, s.cause));
    // Payers whose runs are being stopped hear that instead of a balance-low notice.
    const stopping = new Set(toStop.map((s) => s.id));
    await this.deps.balanceLow?.(
      [...loads.values()].filter((l) => !l.ids.some((id) => stopping.has(id))).map(({ userId, spendable, hourly }) => ({ userId, spendable, hourly })),
    );
    return results.reduce((n, r) => n + (r as PromiseFulfilledResult<number>).value, 0);
  }

  /**
   * One lane of a tick: the runs of its range of owners, METER_BATCH at a time in (owner, id) order
   * (a payer's runs mostly land in one batch), each batch one transaction.
   */
  private async meterLane(
    now: Date,
    lane: { index: number; count: number },
    toStop: AutoStop[],
    loads: Map<string, PayerLoad & { ids: string[] }>,
  ): Promise<number> {
    let handled = 0;
    const [from, to] = laneOwners(lane);
    for (let after: { userId: string; id: string } | null = null; ;) {
      const batch = await this.deps.db.transaction(async (tx) => {
        const rows = await tx
          .select(meterColumns)
          .from(instances)
          .where(
            and(
              isNotNull(instances.meterSegment),
              isNotNull(instances.meterSince),
              lt(instances.meterSince, now),
              from ? gte(instances.userId, from) : undefined,
              to ? lt(instances.userId, to) : undefined,
              after ? sql`(${instances.userId}, ${instances.id}) > (${after.userId}::uuid, ${after.id}::uuid)` : undefined,
            ),
          )
          .orderBy(asc(instances.userId), asc(instances.id))
          .limit(METER_BATCH)
          .for('update', { skipLocked: true });
        if (!rows.length) return rows;
        const { settled, spendable } = await this.deps.meter.settleBatch(tx, rows, now, lane.count > 1 ? lane : undefined);
        for (const r of rows) {
          if (r.status !== 'Running') continue;
          const l = loads.get(r.userId) ?? { userId: r.userId, spendable: 0n, hourly: 0n, ids: [] };
          loads.set(r.userId, { ...l, spendable: spendable.get(r.userId) ?? l.spendable, hourly: l.hourly + r.meterRate, ids: [...l.ids, r.id] });
        }
        const payers = rows.map((r) => r.userId);
        const floors = this.deps.floors ? await this.deps.floors.floorsOf(tx, payers) : new Map<string, bigint>();
        const m = rows.map((r) => settled.get(r.id)!);
        await tx.execute(sql`update instances i set meter_ms = v.ms, meter_charged = v.charged, meter_since = v.since, arrears = v.arrears
          from unnest(${pgArray(rows.map((r) => r.id))}::uuid[], ${pgArray(m.map((x) => x.meterMs))}::bigint[], ${pgArray(m.map((x) => x.meterCharged))}::bigint[],
            ${pgArray(m.map((x) => x.meterSince?.toISOString() ?? null))}::timestamptz[], ${pgArray(m.map((x) => x.arrears))}::bigint[]) as v(id, ms, charged, since, arrears)
          where i.id = v.id`);
        for (const r of rows) {
          const stop = this.stopReason(r, settled.get(r.id)!.arrears, spendable.get(r.userId)!, floors.get(r.userId));
          if (stop) toStop.push({ id: r.id, ...stop });
        }
        // A child's runs stop, like an empty balance, when its spending limit cannot pay their next tick.
        for (const [id, why] of await this.deps.meter.overLimit(tx, rows, this.deps.tickSeconds * 1000)) {
          if (!toStop.some((s) => s.id === id)) toStop.push({ id, why, cause: 'limit' });
        }
        return rows;
      });
      handled += batch.length;
      if (batch.length < METER_BATCH) break;
      after = batch[batch.length - 1]!;
    }
    return handled;
  }

  /** Stops when the balance has run out, has fallen below the payer's floor (余额保底), or cannot pay the next tick. */
  private stopReason(row: MeterRow, arrears: bigint, spendable: bigint, floor?: bigint): Omit<AutoStop, 'id'> | null {
    if (row.status !== 'Running') return null;
    if (arrears > 0n) return { cause: 'balance', why: `余额不足，欠费 ${formatYuan(arrears)} 元` };
    if (floor !== undefined && spendable < floor) return { cause: 'floor', why: `余额低于您设置的 ${formatYuan(floor)} 元保底金额` };
    const nextTick = runCost(row.meterRate, BigInt(this.deps.tickSeconds * 1000));
    return spendable < nextTick ? { cause: 'balance', why: `余额 ${formatYuan(spendable)} 元，不足以支付下一计费周期` } : null;
  }

  private async stopForBalance(id: string, why: string, cause: 'balance' | 'floor') {
    const stopped = await this.deps.instances.actAsSystem(id, 'stop', why);
    if (!stopped) return;
    const [row] = await this.deps.db.select().from(instances).where(eq(instances.id, id));
    if (row) await this.deps.instances.notifyOwner(row.userId, notices.stoppedForArrears({ instance: row, why, cause, at: this.deps.clock.now() }));
  }

  /** A child's instance whose spending limit is spent: stopped, and the parent told how to let it run again. */
  private async stopForLimit(id: string, why: string) {
    const stopped = await this.deps.instances.actAsSystem(id, 'stop', why);
    if (!stopped) return;
    const [row] = await this.deps.db.select().from(instances).where(eq(instances.id, id));
    if (row)
      await this.deps.instances.notifyOwner(
        row.userId,
        notices.instanceEvent({
          instance: row,
          text: `子账号的按量实例「${row.name}」因${why}已自动关机。提高该子账号的消费额度（或月度额度在下月恢复）后可重新开机，数据盘数据保留。`,
        }),
      );
  }

  /** Data disk hours that have begun, for post-paid instances that still exist; BATCH instances a transaction. */
  async diskTick(): Promise<number> {
    const now = this.deps.clock.now();
    const toStop: { id: string; why: string }[] = [];
    let handled = 0;
    for (;;) {
      const n = await this.deps.db.transaction(async (tx) => {
        const rows = await tx
          .select()
          .from(instances)
          .where(
            and(isNotNull(instances.diskBilledUntil), lte(instances.diskBilledUntil, now), isNotNull(instances.usageOrderId), isNull(instances.releasedAt)),
          )
          .limit(BATCH)
          .for('update', { skipLocked: true });
        // A machine that never came up (Failed) has no disk to charge for: its hours stop.
        const set = await this.deps.meter.chargeDiskHours(
          tx,
          rows.filter((r) => r.status !== 'Failed'),
          now,
        );
        for (const row of rows) {
          const cur = set.get(row.id) ?? { diskBilledUntil: null, arrears: row.arrears };
          await tx.update(instances).set(cur).where(eq(instances.id, row.id));
          if (cur.arrears > 0n && row.status === 'Running') toStop.push({ id: row.id, why: `余额不足，欠费 ${formatYuan(cur.arrears)} 元` });
        }
        return rows.length;
      });
      handled += n;
      if (n < BATCH) break;
    }
    for (const s of toStop) await this.stopForBalance(s.id, s.why, 'balance');
    return handled;
  }

  /** Prepaid instances past expireAt: stopped, and their release scheduled after the grace period. */
  async expiryTick(): Promise<number> {
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const due = await this.deps.db
      .select()
      .from(instances)
      .where(
        and(
          isNotNull(instances.expireAt),
          lte(instances.expireAt, now),
          isNull(instances.releasedAt),
          isNull(instances.releaseAt),
          inArray(instances.status, [...IDLE_MACHINE_STATUSES]),
        ),
      )
      .limit(BATCH);
    for (const row of due) {
      const releaseAt = new Date(row.expireAt!.getTime() + settings.expiredReleaseDays * DAY_MS);
      // The expiry notice names the release date: it counts as the release countdown's first notice (releaseTick).
      await this.deps.db
        .update(instances)
        .set({ releaseAt, releaseNoticeAt: now })
        .where(and(eq(instances.id, row.id), isNull(instances.releaseAt)));
      if (row.status === 'Running') await this.deps.instances.actAsSystem(row.id, 'stop', '包周期已到期');
      await this.deps.instances.notifyOwner(row.userId, notices.prepaidExpired({ instance: row, expireAt: row.expireAt!, releaseAt }));
    }
    return due.length;
  }

  /**
   * The release countdown, then the release itself. A stopped instance's owner is told
   * RELEASE_COUNTDOWN_DAYS and releaseNoticeHours before its release (only the latest of the two
   * when both are already due). releaseNoticeAt is when the last countdown notice went out: one
   * from before the current releaseAt's first notice time belongs to an earlier schedule.
   */
  async releaseTick(): Promise<number> {
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const finalMs = settings.releaseNoticeHours * 3_600_000;
    const firstMs = Math.max(RELEASE_COUNTDOWN_DAYS * DAY_MS, finalMs);
    const before = (ms: number) => sql`${instances.releaseAt} - (${ms} * interval '1 millisecond')`;
    const soon = await this.deps.db
      .select()
      .from(instances)
      .where(
        and(
          isNotNull(instances.releaseAt),
          lte(instances.releaseAt, new Date(now.getTime() + firstMs)),
          isNull(instances.releasedAt),
          inArray(instances.status, ['Stopped', 'Shutdown', 'Failed']),
          or(
            isNull(instances.releaseNoticeAt),
            sql`${instances.releaseNoticeAt} < ${before(firstMs)}`,
            and(lte(instances.releaseAt, new Date(now.getTime() + finalMs)), sql`${instances.releaseNoticeAt} < ${before(finalMs)}`),
          ),
        ),
      )
      .limit(BATCH);
    for (const row of soon) {
      const [claimed] = await this.deps.db
        .update(instances)
        .set({ releaseNoticeAt: now })
        .where(
          and(
            eq(instances.id, row.id),
            eq(instances.releaseAt, row.releaseAt!),
            row.releaseNoticeAt ? eq(instances.releaseNoticeAt, row.releaseNoticeAt) : isNull(instances.releaseNoticeAt),
          ),
        )
        .returning();
      const left = row.releaseAt!.getTime() - now.getTime();
      const final = left <= finalMs;
      if (claimed)
        await this.deps.instances.notifyOwner(
          row.userId,
          notices.releaseCountdown({ instance: row, releaseAt: row.releaseAt!, lead: final ? finalMs : firstMs, final }),
        );
    }
    const due = await this.deps.db
      .select()
      .from(instances)
      .where(
        and(
          isNotNull(instances.releaseAt),
          lte(instances.releaseAt, now),
          isNull(instances.releasedAt),
          inArray(instances.status, ['Stopped', 'Shutdown', 'Failed']),
        ),
      )
      .limit(BATCH);
    let n = 0;
    for (const row of due) if (await this.deps.instances.actAsSystem(row.id, 'release', '关机超期自动释放')) n++;
    return soon.length + n;
  }

  /** Migrated instances not started within the hold give the reserved cards back (MigrationService.releaseHeldCards). */
  async heldCardsTick(): Promise<number> {
    const due = await this.deps.db
      .select({ id: instances.id })
      .from(instances)
      .where(and(isNotNull(instances.cardsHeldUntil), lte(instances.cardsHeldUntil, this.deps.clock.now())))
      .limit(BATCH);
    let n = 0;
    for (const row of due) if (await this.deps.migration.releaseHeldCards(row.id)) n++;
    return n;
  }
}

/**
 * The owners of a tick lane: an equal slice of the uuid space ([from, to), open ends as null), so
 * lanes never share a payer (nor the payer's account rows) and the range is an index scan.
 */
export function laneOwners(lane: { index: number; count: number }): [string | null, string | null] {
  const bound = (i: number) =>
    i <= 0 || i >= lane.count
      ? null
      : `${Math.floor((i * 0x1_0000_0000) / lane.count)
          .toString(16)
          .padStart(8, '0')}-0000-0000-0000-000000000000`;
  return [bound(lane.index), bound(lane.index + 1)];
}
