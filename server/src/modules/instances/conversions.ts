/**
 * Conversions of an instance's billing: day-to-month and post-paid to long-term rental.
 * Both are quoted with the one price function (quoteRenewal, catalogue/quotes.ts), become an order paid through
 * the normal pay flow, and are applied once per order by `apply` (the fulfiller of DayToMonth and
 * TransferToLong orders, registered in context.ts), under the instance's row lock, with an entry in
 * the operation log whose detail starts with the order number (the apply-once check).
 *
 * DayToMonth (日转月): a prepaid Day instance becomes Month. The order is the Month price for one
 * month (the data disk beyond the free size included, student discount as for a purchase) less a
 * credit line: the unused value of the current paid period, pro rata by the whole hours left until
 * expiry, per paying order newest first, of what was paid in cash and gift credit (vouchers count as
 * used), rounded down to 0.0001 yuan; the credit never exceeds the price. Paid, the instance's cycle
 * is Month and expireAt = the moment of payment + 1 month (30 days). The credit is fixed when the
 * order is created (an order lives paymentTimeoutMinutes); if the instance's expiry changed meanwhile
 * (a renewal) or it is no longer a live Day instance, fulfilment fails and the order is refunded.
 *
 * TransferToLong (转长期租用): a post-paid (Usage/Hour) instance becomes prepaid Week or Month for
 * `duration` units. Creating the order first settles the current run through the existing meter
 * (billing.ts Meter.settle: what it used up to now is charged); an instance with arrears cannot be
 * converted. Paid, the run is settled again up to that moment, metering stops (METER_OFF: no
 * meterSince/meterSegment, so the billing tick skips it), the hourly data-disk charge stops (the
 * prepaid price includes the disk and any extra bandwidth; the current hour already charged is not returned), the usage order
 * is completed, and the instance gets the cycle and expireAt = now + duration units. A running
 * instance converts without a restart.
 */
import { eq } from 'drizzle-orm';
import {
  BillingCycleUnit,
  formatYuan,
  InstanceStatus,
  isPostpaid,
  type BillingCycle,
  type ConversionQuote,
  type Order,
  type TransferToLongRequest,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { instances } from './schema.js';
import { AppError } from '../../http/errors.js';
import { HOURS_PER_UNIT } from '../catalogue/index.js';
import type { Quotes } from '../catalogue/index.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { OrderRow, OrderService } from '../orders/index.js';
import type { UsageCharges } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import type { Meter } from './meter.js';
import { unusedValue } from './prepaid.js';
import { type InstanceService } from './service.js';
import { METER_OFF, type InstanceRow } from './rows.js';

const HOUR_MS = 3_600_000;

export const DAY_TO_MONTH_RULE =
  '日转月：按包月价格支付 1 个月（自支付时起算），并抵扣当前包日周期未使用部分的价值：按距到期的剩余整小时数，按各笔订单实付的现金与赠送金比例折算（向下取整到 0.0001 元），代金券抵扣部分不计；抵扣不超过包月价格。下单后 15 分钟内有效；若期间实例续费或状态变化，订单失败并原路退款。';
export const TRANSFER_RULE =
  '转长期租用：先结清本次运行至今的按量费用，再按所选包周/包月价格支付（含超出免费容量的数据盘）；支付后停止按量计费与数据盘按小时扣费（当前小时已扣的数据盘费用不退），到期时间自支付时起算；运行中的实例无需重启。有欠费的实例需先结清。';

export interface ConversionDeps {
  db: Db;
  clock: Clock;
  instances: InstanceService;
  orders: OrderService;
  /** Ends the Usage order of an instance transferred to long-term rental. */
  usage: UsageCharges;
  pricing: Pick<Quotes, 'quoteRenewal'>;
  catalogue: CatalogueStore;
  meter: Meter;
}

interface ConversionRequest {
  instanceId: string;
  cycle: BillingCycle;
  duration: number;
  /** DayToMonth: the instance's expiry the credit was computed against (ms). */
  fromExpireAt?: number;
  credit?: string;
  creditHours?: number;
}

export class ConversionService {
  constructor(private deps: ConversionDeps) {}

  // --- day to month ---------------------------------------------------------------------

  async dayToMonthQuote(user: UserRow, id: string): Promise<ConversionQuote> {
    const row = await this.deps.instances.mustFind(user, id);
    return this.dayToMonthPrice(user, row);
  }

  /** A DayToMonth order for the quote, to be paid like any order. */
  async dayToMonth(user: UserRow, id: string): Promise<Order> {
    const row = await this.deps.instances.mustFind(user, id);
    const q = await this.dayToMonthPrice(user, row);
    const { credit, creditHours, expireAt: _e, rule: _r, ...quote } = q;
    return this.deps.orders.create({
      payerId: row.userId,
      createdBy: user.id,
      kind: kindOf(row),
      type: 'DayToMonth',
      category: row.category,
      request: { instanceId: row.id, cycle: 'Month', duration: 1, fromExpireAt: row.expireAt!.getTime(), credit, creditHours } satisfies ConversionRequest,
      quote,
      description: `日转月 ${row.name}（抵扣 ${formatYuan(BigInt(credit))} 元）`,
    });
  }

  private async dayToMonthPrice(user: UserRow, row: InstanceRow): Promise<ConversionQuote> {
    const now = this.deps.clock.now();
    this.checkDay(row, now);
    const quote = await this.price(user, row, 'Month', 1, `日转月 ${row.name}`);
    const unusedHours = BigInt(Math.floor((row.expireAt!.getTime() - now.getTime()) / HOUR_MS));
    const paying = await this.deps.db.transaction((tx) => this.deps.orders.prepaidPaymentsOf(tx, row.id, row.orderId));
    const value = unusedValue(paying, row, unusedHours);
    const total = BigInt(quote.total);
    const credit = value < total ? value : total;
    return {
      ...quote,
      lines: [
        ...quote.lines,
        ...(credit > 0n
          ? [{ kind: 'credit' as const, name: `包日剩余 ${unusedHours} 小时抵扣`, unitPrice: String(-credit), quantity: 1, amount: String(-credit) }]
          : []),
      ],
      total: String(total - credit),
      credit: String(credit),
      creditHours: Number(unusedHours),
      expireAt: new Date(now.getTime() + Number(HOURS_PER_UNIT.Month) * HOUR_MS).toISOString(),
      rule: DAY_TO_MONTH_RULE,
    };
  }

  private checkDay(row: InstanceRow, now: Date) {
    if (row.cycle !== 'Day') throw new AppError('CONVERT_NOT_DAY', `实例当前为${cycleText(row.cycle)}，仅包日实例可以日转月`);
    checkLive(row);
    if (!row.expireAt || row.expireAt <= now) throw new AppError('CONVERT_EXPIRED');
  }

  // --- post-paid to long-term rental ------------------------------------------------------

  async transferQuote(user: UserRow, id: string, req: TransferToLongRequest): Promise<ConversionQuote> {
    const row = await this.deps.instances.mustFind(user, id);
    this.checkPostpaid(row);
    return this.transferPrice(user, row, req);
  }

  /** Settles the current run (through the meter), then a TransferToLong order, to be paid like any order. */
  async transfer(user: UserRow, id: string, req: TransferToLongRequest): Promise<Order> {
    const row = await this.deps.instances.mustFind(user, id);
    this.checkPostpaid(row);
    const quote = await this.transferPrice(user, row, req);
    const settled = await this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, id);
      this.checkPostpaid(cur);
      const m = await this.deps.meter.settle(tx, cur, this.deps.clock.now());
      await tx.update(instances).set(m).where(eq(instances.id, id));
      return m;
    });
    if (settled.arrears > 0n) throw new AppError('CONVERT_ARREARS', `本次运行结算后欠费 ${formatYuan(settled.arrears)} 元，请充值后再转长期租用`);
    const { credit: _c, creditHours: _h, expireAt: _e, rule: _r, ...price } = quote;
    return this.deps.orders.create({
      payerId: row.userId,
      createdBy: user.id,
      kind: kindOf(row),
      type: 'TransferToLong',
      category: row.category,
      request: { instanceId: row.id, cycle: req.cycle, duration: req.duration } satisfies ConversionRequest,
      quote: price,
      description: quote.lines[0]!.name,
    });
  }

  private async transferPrice(user: UserRow, row: InstanceRow, req: TransferToLongRequest): Promise<ConversionQuote> {
    const now = this.deps.clock.now();
    const quote = await this.price(user, row, req.cycle, req.duration, `转长期租用 ${row.name}`);
    return {
      ...quote,
      credit: '0',
      creditHours: 0,
      expireAt: new Date(now.getTime() + Number(HOURS_PER_UNIT[req.cycle]) * req.duration * HOUR_MS).toISOString(),
      rule: TRANSFER_RULE,
    };
  }

  private checkPostpaid(row: InstanceRow) {
    if (!isPostpaid(row.cycle)) throw new AppError('CONVERT_NOT_POSTPAID', `实例已是${cycleText(row.cycle)}，仅按量计费实例可以转长期租用`);
    checkLive(row);
    if (row.arrears > 0n) throw new AppError('CONVERT_ARREARS', `还欠 ${formatYuan(row.arrears)} 元，请充值结清后再转长期租用`);
  }

  // --- fulfilment (once per order) -----------------------------------------------------

  async apply(order: OrderRow): Promise<{ resourceId: string }> {
    const req = order.request as ConversionRequest;
    await this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, req.instanceId);
      if (await this.deps.instances.orderApplied(tx, cur.id, actionOf(order), order.orderUid)) return;
      const now = this.deps.clock.now();
      const expireAt = new Date(now.getTime() + Number(HOURS_PER_UNIT[req.cycle]) * req.duration * HOUR_MS);
      let set: Partial<InstanceRow>;
      let detail: string;
      if (order.type === 'DayToMonth') {
        this.checkDay(cur, now);
        if (cur.expireAt!.getTime() !== req.fromExpireAt) throw new AppError('INSTANCE_STATE_INVALID', '下单后实例到期时间已变化（如已续费），请重新日转月');
        set = { cycle: 'Month' };
        detail = `${order.orderUid}：包日 → 包月，抵扣 ${formatYuan(BigInt(req.credit ?? '0'))} 元`;
      } else {
        if (!isPostpaid(cur.cycle)) throw new AppError('CONVERT_NOT_POSTPAID');
        checkLive(cur);
        const m = await this.deps.meter.settle(tx, cur, now);
        if (m.arrears > 0n) throw new AppError('CONVERT_ARREARS', `按量费用结算后欠费 ${formatYuan(m.arrears)} 元`);
        if (cur.usageOrderId) await this.deps.usage.finishUsage(tx, cur.usageOrderId);
        set = { cycle: req.cycle, arrears: 0n, ...METER_OFF, diskDailyPrice: 0n, diskBilledUntil: null, noCardHourlyPrice: 0n, bandwidthHourlyPrice: 0n };
        detail = `${order.orderUid}：${cycleText(cur.cycle)} → ${cycleText(req.cycle)} ${req.duration} ${BillingCycleUnit[req.cycle]}`;
      }
      await tx
        .update(instances)
        .set({ ...set, expireAt, releaseAt: null, releaseNoticeAt: null, autoRenewFailedFor: null, updatedAt: now })
        .where(eq(instances.id, cur.id));
      await this.deps.instances.logOp(tx, cur, { action: actionOf(order), actorId: order.createdBy, from: cur.status, to: cur.status, detail });
    });
    return { resourceId: req.instanceId };
  }

  // --- helpers --------------------------------------------------------------------------

  private async price(user: UserRow, row: InstanceRow, cycle: BillingCycle, duration: number, what: string) {
    const snap = await this.deps.catalogue.get();
    const gpu = row.gpuTypeId ? snap.gpuTypes.find((g) => g.id === row.gpuTypeId) : undefined;
    const size = row.sizeId ? snap.sizes.find((x) => x.id === row.sizeId) : undefined;
    return this.deps.pricing.quoteRenewal(
      {
        category: row.category,
        gpuTypeId: row.gpuTypeId,
        sizeId: row.sizeId,
        quantity: row.gpuTypeId ? row.gpuCount : 1,
        productName: `${what}（${gpu ? `${gpu.name} × ${row.gpuCount}` : (size?.name ?? row.sizeId)}）`,
        cycle,
        duration,
        dataDiskGb: row.dataDiskGb,
        freeDataDiskGb: row.freeDataDiskGb,
        extraBandwidthMbps: row.bandwidthMbps - row.includedBandwidthMbps,
        regionId: row.regionId,
      },
      user,
    );
  }
}

function checkLive(row: InstanceRow) {
  if (row.status === 'Deleting' || row.status === 'Failed' || row.status === 'Pending') {
    throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能转换计费方式`);
  }
}

function actionOf(order: OrderRow): string {
  return order.type === 'DayToMonth' ? 'dayToMonth' : 'transferToLong';
}

function kindOf(row: InstanceRow) {
  return row.category === 'Gpu' || row.category === 'App' ? ('Personal' as const) : ('default' as const);
}

function cycleText(c: BillingCycle): string {
  return { Usage: '按量计费', Hour: '按小时计费', Day: '包日', Week: '包周', Month: '包月' }[c];
}
