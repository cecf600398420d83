/**
 * The meter of post-paid runs: what a run and a data disk cost by the hour, and charging them through the orders
 * module's usage charges (card-hour packages first). The state machine (service.ts) starts and stops runs with it;
 * billing.ts ticks it. Its own file so that both can use it without importing each other.
 */
import { formatYuan } from '@console/contract';
import type { Tx } from '../../db/client.js';
import type { UsageCharge, UsageCharges, UsageRun } from '../orders/index.js';
import type { ResourceService } from '../resources/index.js';
import { instances } from './schema.js';
import type { InstanceRow } from './rows.js';
import { bandwidthRate } from './run-rate.js';

const MS_PER_HOUR = 3_600_000n;
const HOUR_MS = 3_600_000;

export type MeterColumns = Pick<InstanceRow, 'meterMs' | 'meterCharged' | 'meterSince' | 'arrears'>;

/** The columns of an instance that metering reads (a tick selects only these). */
export const meterColumns = {
  id: instances.id,
  userId: instances.userId,
  name: instances.name,
  status: instances.status,
  noCard: instances.noCard,
  gpuTypeId: instances.gpuTypeId,
  gpuCount: instances.gpuCount,
  usageOrderId: instances.usageOrderId,
  meterRate: instances.meterRate,
  meterSince: instances.meterSince,
  meterSegment: instances.meterSegment,
  meterMs: instances.meterMs,
  meterCharged: instances.meterCharged,
  arrears: instances.arrears,
  bandwidthHourlyPrice: instances.bandwidthHourlyPrice,
  /** Not the payer: a child account's instance, run within the child's spending limit. */
  createdBy: instances.createdBy,
};
export type MeterRow = Pick<InstanceRow, keyof typeof meterColumns>;

/** What a run at `ratePerHour` costs after `ms` milliseconds, rounded half up to a whole unit. */
export function runCost(ratePerHour: bigint, ms: bigint): bigint {
  return (ratePerHour * ms + MS_PER_HOUR / 2n) / MS_PER_HOUR;
}

/**
 * What the part of a run not paid by card-hour packages costs: `cardMs` card-milliseconds of a
 * `cards`-card instance at `ratePerHour` for all its cards, rounded half up once. With nothing
 * covered it equals runCost(rate, ms) exactly, so runs without packages are charged as before.
 */
export function uncoveredCost(ratePerHour: bigint, cardMs: bigint, cards: bigint): bigint {
  return (ratePerHour * cardMs + (cards * MS_PER_HOUR) / 2n) / (cards * MS_PER_HOUR);
}

/**
 * What the hour of data disk beginning at `from` costs at `dailyPrice`: the hour's share of the day,
 * the daily price × 1/24 rounded down or up to 0.0001 yuan so that any 24 hours in a row (hours are
 * numbered from the epoch) add up to the daily price exactly.
 */
export function diskHourCost(dailyPrice: bigint, from: Date): bigint {
  const i = BigInt(Math.floor(from.getTime() / HOUR_MS) % 24);
  return (dailyPrice * (i + 1n)) / 24n - (dailyPrice * i) / 24n;
}

/**
 * The memo of an hour of data disk: "<name> 数据盘扩容 70 GB（1 小时，按 ¥0.49/天）". The size and the
 * daily price in it are what the bill of the order (orders/usage-bill.ts) shows.
 */
function diskHourMemo(row: Pick<InstanceRow, 'name' | 'dataDiskGb' | 'freeDataDiskGb' | 'diskDailyPrice'>): string {
  return `${row.name} 数据盘扩容 ${row.dataDiskGb - row.freeDataDiskGb} GB（1 小时，按 ${formatYuan(row.diskDailyPrice, { symbol: true, precision: 'rate' })}/天）`;
}

type DiskBilling = Pick<InstanceRow, 'diskBilledUntil' | 'arrears'>;

/**
 * Charges the data disk beyond the free size of each (locked) post-paid row for every hour begun by
 * `now` since its diskBilledUntil, each hour under its own key `disk:<instance>:<hour start ms>`, all
 * in one ledger batch; returns each row's new diskBilledUntil and arrears (what the balance could not pay).
 */
export async function chargeDiskHours(usage: UsageCharges, tx: Tx, rows: InstanceRow[], now: Date): Promise<Map<string, DiskBilling>> {
  const out = new Map<string, DiskBilling>();
  const items: { id: string; charge: UsageCharge }[] = [];
  for (const row of rows) {
    let from = row.diskBilledUntil!;
    for (; from <= now; from = new Date(from.getTime() + HOUR_MS)) {
      const charge = {
        orderId: row.usageOrderId!,
        amount: diskHourCost(row.diskDailyPrice, from),
        key: `disk:${row.id}:${from.getTime()}`,
        memo: diskHourMemo(row),
      };
      items.push({ id: row.id, charge });
    }
    out.set(row.id, { diskBilledUntil: from, arrears: row.arrears });
  }
  const charged = await usage.chargeUsageMany(
    tx,
    items.map(({ charge }) => charge),
  );
  for (const { id, charge } of items) out.get(id)!.arrears += charge.amount - (charged.get(charge.key) ?? 0n);
  return out;
}

/** What the bill needs to know of a run segment (kept by the orders module once, at its first charge). */
function usageRun(row: MeterRow): UsageRun {
  return {
    resourceId: row.id,
    segmentStart: row.meterSegment!,
    noCard: row.noCard,
    cards: row.noCard ? 0 : row.gpuCount,
    ratePerHour: row.meterRate,
    bandwidthPerHour: bandwidthRate(row),
  };
}

/** A post-paid instance the meter stops: the balance ran out, fell below the payer's floor (余额保底), or a child's limit is spent. */
export interface AutoStop {
  id: string;
  cause: 'balance' | 'floor' | 'limit';
  /** The reason in words, for the operation log and the notice. */
  why: string;
}

export class Meter {
  /** `resources` lets GPU runs consume card-hour packages before money (absent: money only). */
  constructor(
    private usage: UsageCharges,
    private resources?: ResourceService,
  ) {}

  /**
   * Charges the run of `row` up to `until` and returns the instance's new metering columns. What
   * the balance could not pay is added to the arrears.
   */
  async settle(tx: Tx, row: InstanceRow, until: Date): Promise<MeterColumns> {
    return (await this.settleMany(tx, [row], until)).get(row.id)!;
  }

  /** settle for a batch of locked instances, charged together (one ledger batch). */
  async settleMany(tx: Tx, rows: MeterRow[], until: Date): Promise<Map<string, MeterColumns>> {
    return (await this.settleBatch(tx, rows, until)).settled;
  }

  /**
   * settleMany for a billing tick: `lane` is passed to the ledger (the lane's revenue shards), and
   * the owners' spendable balances after the charges come back with the new metering columns.
   */
  async settleBatch(
    tx: Tx,
    rows: MeterRow[],
    until: Date,
    lane?: { index: number; count: number },
  ): Promise<{ settled: Map<string, MeterColumns>; spendable: Map<string, bigint> }> {
    const out = new Map<string, MeterColumns>();
    const runs: { row: MeterRow; ms: bigint; key: string }[] = [];
    for (const row of rows) {
      if (!row.meterSince || !row.meterSegment || !row.usageOrderId || until <= row.meterSince) {
        out.set(row.id, { meterMs: row.meterMs, meterCharged: row.meterCharged, meterSince: row.meterSince, arrears: row.arrears });
        continue;
      }
      const ms = row.meterMs + BigInt(until.getTime() - row.meterSince.getTime());
      runs.push({ row, ms, key: `usage:${row.id}:${row.meterSegment.getTime()}:${ms}` });
    }
    // Card-hour packages of the run's GPU type pay first (runs with cards only); money pays the rest.
    const covered = this.resources
      ? await this.resources.coverRuns(
          tx,
          runs
            .filter(({ row }) => row.gpuTypeId && !row.noCard && row.gpuCount > 0)
            .map(({ row, ms }) => ({
              instanceId: row.id,
              segment: row.meterSegment!,
              userId: row.userId,
              gpuTypeId: row.gpuTypeId!,
              cardMs: ms * BigInt(row.gpuCount),
              prevCardMs: row.meterMs * BigInt(row.gpuCount),
            })),
        )
      : new Map<string, bigint>();
    const items = runs.map(({ row, ms, key }) => {
      const cards = BigInt(Math.max(row.gpuCount, 1));
      const cost = covered.has(row.id) ? uncoveredCost(row.meterRate, ms * cards - covered.get(row.id)!, cards) : runCost(row.meterRate, ms);
      return { row, ms, key, due: cost - row.meterCharged };
    });
    const { charged, spendable } = await this.usage.chargeUsageBatch(
      tx,
      items.map((i) => ({
        orderId: i.row.usageOrderId!,
        amount: i.due,
        key: i.key,
        memo: `${i.row.name} 按量计费`,
        run: i.row.meterCharged === 0n ? usageRun(i.row) : undefined,
      })),
      { lane, watch: rows.map((r) => r.userId) },
    );
    for (const i of items) {
      const paid = charged.get(i.key) ?? 0n;
      out.set(i.row.id, { meterMs: i.ms, meterCharged: i.row.meterCharged + i.due, meterSince: until, arrears: i.row.arrears + (i.due - paid) });
    }
    return { settled: out, spendable };
  }

  /** The running runs of child accounts whose spending limit cannot pay their next tick of `tickMs`, with the reason. */
  async overLimit(tx: Tx, rows: MeterRow[], tickMs: number): Promise<Map<string, string>> {
    const runs = rows.filter((r) => r.status === 'Running' && r.createdBy !== r.userId);
    if (!runs.length) return new Map();
    return this.usage.overLimit(
      tx,
      runs.map((r) => ({ id: r.id, childId: r.createdBy, nextTick: runCost(r.meterRate, BigInt(tickMs)) })),
    );
  }

  /** Charges the data-disk hours begun by `now` of each (locked) row (chargeDiskHours). */
  chargeDiskHours(tx: Tx, rows: InstanceRow[], now: Date): Promise<Map<string, DiskBilling>> {
    return chargeDiskHours(this.usage, tx, rows, now);
  }
}
