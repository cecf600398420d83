/**
 * Public bandwidth of e-commerce machines (TrafficUpgrade / TrafficDowngrade).
 *
 * The size includes some bandwidth (catalogue sizes' bandwidthMbps, copied to the instance as
 * includedBandwidthMbps); an e-commerce machine may go up to any of the operator's steps
 * (settings.bandwidthStepsMbps) above it, and back down to any of them or to what it includes. Each
 * Mbps beyond the included costs settings.bandwidthPricePerMbpsHour. The driver applies the change
 * live (running or stopped; the instance is Operating for those seconds).
 *
 * How it is paid follows the instance's billing:
 * - prepaid (Day/Week/Month) upgrade: the added chargeable Mbps × price × the whole hours left
 *   until expireAt (a started hour counts), student discount as for a purchase, as a TrafficUpgrade
 *   order paid through the normal pay flow; paying fulfils it (TrafficService.fulfil), a failure
 *   refunds it. Renewals, day-to-month and 退订 price the bandwidth the machine has then.
 * - prepaid downgrade: applies at once; when the driver has applied it, the unused value of the
 *   removed Mbps comes back (traffic-refund.ts). Renewals are cheaper from then on.
 * - post-paid (Usage/Hour): nothing up front. The hourly price becomes the size's price plus the
 *   extra Mbps; a running meter is settled at the old rate up to the moment the driver applied the
 *   change and goes on at the new one (ChangeBandwidthTask).
 *
 * The change itself is the changeBandwidth task (see tasks.ts).
 */
import { z } from 'zod';
import { bandwidthChoices, formatYuan, isPostpaid, type BandwidthQuote, type ChangeBandwidthResponse, type Instance, type Quote } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import type { DriverEvent, InstanceOp } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { Quotes } from '../catalogue/index.js';
import type { CatalogueStore, Settings } from '../catalogue/index.js';
import type { Fulfiller, OrderRow, OrderService } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import type { Meter } from './meter.js';
import { type InstanceService } from './service.js';
import { meterStart, type InstanceRow } from './rows.js';
import { bigintParam, TaskParam, type TaskDone, type TaskFailed, type TaskHandler } from './tasks.js';
import { extraOf, type DowngradeRefunds, type UpgradeRequest } from './traffic-refund.js';
import type { InstanceViews } from './views.js';

const HOUR_MS = 3_600_000;

export const UPGRADE_PREPAID_RULE = '包周期实例升级带宽：按新增带宽 × 剩余整小时数（不足 1 小时按 1 小时）一次性支付，支付后立即生效；续费按新带宽计价。';
export const DOWNGRADE_PREPAID_RULE =
  '包周期实例降低带宽：立即生效；按剩余整小时数退还升级带宽时实付的现金与赠送金（按比例，向下取整到 0.0001 元），代金券抵扣部分、已过期的赠送金和续费中包含的带宽费用不退；续费按新带宽计价。';
export const POSTPAID_RULE = '按量计费实例调整带宽：无需预付，生效后按新的每小时价格按秒计费，生效前按原带宽计费。';

/** The bandwidth the machine goes to; the TrafficUpgrade order that paid for it (null: nothing paid up front); post-paid, what the Mbps beyond the included cost per hour from then on. */
interface ChangeBandwidthParam {
  mbps: number;
  orderId: string | null;
  hourly: bigint;
}

const changeBandwidthParam = new TaskParam<'changeBandwidth', ChangeBandwidthParam>(
  'changeBandwidth',
  z.object({ mbps: z.number().int().nonnegative(), orderId: z.string().nullable(), hourly: bigintParam }),
  (text) => {
    // Before JSON: "mbps:orderId:hourly", orderId empty when nothing was paid up front.
    const [mbps = '0', orderId = '', hourly = '0'] = text.split(':');
    return { mbps: Number(mbps), orderId: orderId || null, hourly: BigInt(hourly) };
  },
);

export interface TrafficDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  pricing: Pick<Quotes, 'quoteBandwidthChange'>;
  orders: OrderService;
  refunds: DowngradeRefunds;
  instances: InstanceService;
  views: InstanceViews;
}

export class TrafficService implements Fulfiller {
  constructor(private deps: TrafficDeps) {}

  async quote(user: UserRow, id: string, mbps: number): Promise<BandwidthQuote> {
    const row = await this.deps.instances.mustFind(user, id);
    const { settings } = await this.deps.catalogue.get();
    this.checkBandwidth(row, mbps, settings);
    const prepaid = !isPostpaid(row.cycle);
    const now = this.deps.clock.now().getTime();
    if (prepaid && (!row.expireAt || row.expireAt.getTime() <= now)) throw new AppError('INSTANCE_EXPIRED', '实例已到期，请先续费再调整带宽');
    const upgrade = mbps > row.bandwidthMbps;
    const hours = prepaid ? Math.ceil((row.expireAt!.getTime() - now) / HOUR_MS) : 0;
    const extraBefore = extraOf(row, row.bandwidthMbps);
    const extraAfter = extraOf(row, mbps);
    const quote: Quote = await this.deps.pricing.quoteBandwidthChange(
      {
        category: row.category,
        cycle: row.cycle,
        regionId: row.regionId,
        extraBefore,
        // Only a prepaid upgrade is paid up front; everything else is a zero quote.
        extraAfter: prepaid && upgrade ? extraAfter : extraBefore,
        hours,
        note: prepaid ? `${row.bandwidthMbps} → ${mbps} Mbps，按剩余 ${hours} 小时计` : `${row.bandwidthMbps} → ${mbps} Mbps，按量计费`,
      },
      user,
    );
    const refund = prepaid && !upgrade ? (await this.deps.db.transaction((tx) => this.deps.refunds.planDowngradeRefund(tx, row, mbps))).refund : 0n;
    return {
      instanceId: row.id,
      type: upgrade ? 'TrafficUpgrade' : 'TrafficDowngrade',
      currentMbps: row.bandwidthMbps,
      newMbps: mbps,
      includedMbps: row.includedBandwidthMbps,
      choices: bandwidthChoices(row.includedBandwidthMbps, settings.bandwidthStepsMbps),
      pricePerMbpsHour: String(settings.bandwidthPricePerMbpsHour),
      prepaid,
      remainingHours: hours,
      hourlyPriceAfter: String(prepaid ? 0n : row.hourlyPrice + BigInt(extraAfter) * settings.bandwidthPricePerMbpsHour),
      quote,
      refund: String(refund),
      rule: prepaid ? (upgrade ? UPGRADE_PREPAID_RULE : DOWNGRADE_PREPAID_RULE) : POSTPAID_RULE,
    };
  }

  /**
   * Prepaid upgrade: an Unpaid TrafficUpgrade order at the server's price. Anything else starts
   * the change now, with nothing to pay up front.
   */
  async change(user: UserRow, id: string, mbps: number): Promise<ChangeBandwidthResponse> {
    const q = await this.quote(user, id, mbps);
    const row = await this.deps.instances.mustFind(user, id);
    if (q.prepaid && q.type === 'TrafficUpgrade') {
      const order = await this.deps.orders.create({
        payerId: row.userId,
        createdBy: user.id,
        kind: 'default',
        type: 'TrafficUpgrade',
        category: row.category,
        request: { instanceId: row.id, bandwidthMbps: mbps, fromMbps: row.bandwidthMbps, hours: q.remainingHours } satisfies UpgradeRequest,
        quote: q.quote,
        description: `带宽升级 ${row.name}：${row.bandwidthMbps} Mbps → ${mbps} Mbps`,
      });
      return { order, instance: await this.deps.views.get(user, id) };
    }
    const { settings } = await this.deps.catalogue.get();
    const hourly = q.prepaid ? 0n : BigInt(extraOf(row, mbps)) * settings.bandwidthPricePerMbpsHour;
    const detail = q.prepaid
      ? `${row.bandwidthMbps} Mbps → ${mbps} Mbps（预计退还 ¥${formatYuan(BigInt(q.refund))}，生效时结算；续费按新带宽计价）`
      : `按量计费：${row.bandwidthMbps} Mbps → ${mbps} Mbps，生效后 ¥${formatYuan(BigInt(q.hourlyPriceAfter))}/小时`;
    const instance = await this.beginUnpaidChange(user, id, { mbps, orderId: null, hourly }, settings, detail);
    return { order: null, instance };
  }

  /**
   * Starts a bandwidth change that needs no payment first (post-paid, or a prepaid downgrade): the
   * instance goes Operating and the driver applies it; `detail` says what it costs from then on.
   */
  private async beginUnpaidChange(user: UserRow, id: string, change: ChangeBandwidthParam, settings: Settings, detail: string): Promise<Instance> {
    const core = this.deps.instances;
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      // Checked again under the row lock: another change may have started meanwhile.
      this.checkBandwidth(cur, change.mbps, settings);
      const opId = `changeBandwidth:${cur.id}:${this.deps.clock.now().getTime()}`;
      return core.beginTask(tx, cur, changeBandwidthParam.start(change), { actorId: user.id, opId, detail });
    });
    await core.submit(row);
    return this.deps.views.get(user, id);
  }

  /**
   * Fulfils a paid TrafficUpgrade order once: the change starts now and applies when the driver
   * reports it. An instance that cannot take it any more (released, downgraded or upgraded since)
   * fails the order here, which refunds it; a driver failure refunds it too (ChangeBandwidthTask.onFailed).
   */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, bandwidthMbps, fromMbps } = order.request as UpgradeRequest;
    const core = this.deps.instances;
    const { settings } = await this.deps.catalogue.get();
    const row = await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, instanceId);
      if (await core.orderApplied(tx, instanceId, 'changeBandwidth', order.orderUid)) return null;
      if (cur.bandwidthMbps !== fromMbps) throw new AppError('INSTANCE_STATE_INVALID', '下单后实例带宽已变化，请重新选择');
      this.checkBandwidth(cur, bandwidthMbps, settings);
      return core.beginTask(tx, cur, changeBandwidthParam.start({ mbps: bandwidthMbps, orderId: order.id, hourly: 0n }), {
        actorId: order.createdBy,
        opId: `changeBandwidth:${order.id}`,
        detail: `${order.orderUid}：${cur.bandwidthMbps} Mbps → ${bandwidthMbps} Mbps`,
      });
    });
    if (row) await core.submit(row);
    return { resourceId: instanceId };
  }

  /** Why the instance cannot go to `mbps` of bandwidth now, as the error the request gets. */
  private checkBandwidth(cur: InstanceRow, mbps: number, settings: Settings): void {
    if (cur.category !== 'Ebusiness') throw new AppError('BANDWIDTH_NOT_EBUSINESS');
    this.deps.instances.assertTask(cur, 'changeBandwidth');
    if (mbps === cur.bandwidthMbps) throw new AppError('BANDWIDTH_INVALID', `当前带宽已是 ${mbps} Mbps`);
    const choices = bandwidthChoices(cur.includedBandwidthMbps, settings.bandwidthStepsMbps);
    if (!choices.includes(mbps)) throw new AppError('BANDWIDTH_INVALID', `可选带宽：${choices.join('、')} Mbps`);
  }
}

/** The changeBandwidth task's outcome: the machine has its new bandwidth; what that costs or gives back. */
export class ChangeBandwidthTask implements TaskHandler<'changeBandwidth', ChangeBandwidthParam> {
  readonly param = changeBandwidthParam;

  constructor(private deps: { meter: Meter; refunds: DowngradeRefunds }) {}

  op(_row: InstanceRow, p: ChangeBandwidthParam): InstanceOp {
    return { kind: 'changeBandwidth', params: { bandwidthMbps: p.mbps } };
  }

  /**
   * Post-paid: a running meter is settled up to that moment at the old rate and goes on at the new
   * one (a new segment), so each second is charged at the bandwidth it had. Prepaid: an upgrade was
   * paid up front by its order; a downgrade's refund is posted now, in this transaction; renewals
   * price the new bandwidth.
   */
  async onDone(tx: Tx, row: InstanceRow, p: ChangeBandwidthParam, e: DriverEvent): Promise<TaskDone> {
    const refunded = isPostpaid(row.cycle) || !row.pendingOpId ? 0n : await this.deps.refunds.refundDowngrade(tx, row, p.mbps, row.pendingOpId);
    const set: Partial<InstanceRow> = { bandwidthMbps: p.mbps, ...(isPostpaid(row.cycle) ? await this.repriceRun(tx, row, p.hourly, e.at) : {}) };
    return { set, detail: `带宽 ${row.bandwidthMbps} Mbps → ${p.mbps} Mbps${refunded > 0n ? `，退还 ¥${formatYuan(refunded)}` : ''}` };
  }

  private async repriceRun(tx: Tx, row: InstanceRow, hourly: bigint, at: Date): Promise<Partial<InstanceRow>> {
    const set: Partial<InstanceRow> = { bandwidthHourlyPrice: hourly };
    if (row.meterSegment && row.meterSince)
      Object.assign(set, await this.deps.meter.settle(tx, row, at), meterStart({ ...row, bandwidthHourlyPrice: hourly }, at));
    return set;
  }

  /** A paid upgrade that did not happen is refunded. */
  async onFailed(_tx: Tx, row: InstanceRow, p: ChangeBandwidthParam, e: DriverEvent): Promise<TaskFailed> {
    if (!p.orderId) return {};
    return { refundOrder: p.orderId, notice: `您的实例「${row.name}」带宽升级失败（${e.error ?? '未知原因'}），升级订单款项已原路退回。` };
  }
}
