/**
 * Public bandwidth of e-commerce machines (issue 6: TrafficUpgrade / TrafficDowngrade).
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
 *   order paid through the normal pay flow; paying fulfils it (InstanceService.applyBandwidthOrder),
 *   a failure refunds it. Renewals, day-to-month and 退订 price the bandwidth the machine has then.
 * - prepaid downgrade: applies at once; when the driver has applied it, the unused value of the
 *   removed Mbps comes back as one TrafficDowngrade order (status Refunded, one ledger transfer): the
 *   removed chargeable Mbps are taken from the instance's paid TrafficUpgrade orders newest first
 *   (each order's Mbps can come back once in all, however many downgrades), and each gives back its
 *   cash and gift parts × taken Mbps / its Mbps × the whole hours left of what it paid for (at most
 *   the hours left until expiry) / its hours, rounded down to 0.0001 yuan. Vouchers and gift credit
 *   whose grant has expired are not returned; bandwidth paid within a renewal is not returned (it
 *   priced the period, like the data disk). Renewals are cheaper from then on.
 * - post-paid (Usage/Hour): nothing up front. The hourly price becomes the size's price plus the
 *   extra Mbps; a running meter is settled at the old rate up to the moment the driver applied the
 *   change and goes on at the new one (InstanceService.applyBandwidth).
 */
import { bandwidthChoices, formatYuan, type BandwidthQuote, type ChangeBandwidthResponse, type Quote } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueService } from '../catalogue/service.js';
import type { CatalogueStore } from '../catalogue/store.js';
import type { GiftService } from '../gifts/service.js';
import type { OrderService } from '../orders/service.js';
import type { UserRow } from '../sessions/service.js';
import { instanceIdFor, POSTPAID, type InstanceRow, type InstanceService } from './service.js';

const HOUR_MS = 3_600_000;

export const UPGRADE_PREPAID_RULE = '包周期实例升级带宽：按新增带宽 × 剩余整小时数（不足 1 小时按 1 小时）一次性支付，支付后立即生效；续费按新带宽计价。';
export const DOWNGRADE_PREPAID_RULE =
  '包周期实例降低带宽：立即生效；按剩余整小时数退还升级带宽时实付的现金与赠送金（按比例，向下取整到 0.0001 元），代金券抵扣部分、已过期的赠送金和续费中包含的带宽费用不退；续费按新带宽计价。';
export const POSTPAID_RULE = '按量计费实例调整带宽：无需预付，生效后按新的每小时价格按秒计费，生效前按原带宽计费。';

export interface TrafficDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  pricing: CatalogueService;
  orders: OrderService;
  gifts: GiftService;
  instances: InstanceService;
}

/** What a prepaid downgrade gives back, and from which upgrade orders how many Mbps. */
export interface DowngradeRefund {
  refund: bigint;
  cash: bigint;
  gift: { grantId: string; amount: bigint }[];
  allocations: { orderId: string; mbps: number }[];
}

interface UpgradeRequest {
  instanceId: string;
  bandwidthMbps: number;
  fromMbps: number;
  /** The whole hours the upgrade paid for (the instance's remaining time then). */
  hours?: number;
}

export class TrafficService {
  constructor(private deps: TrafficDeps) {
    deps.instances.useBandwidthRefund((tx, row, mbps, opId) => this.refundDowngrade(tx, row, mbps, opId));
  }

  async quote(user: UserRow, id: string, mbps: number): Promise<BandwidthQuote> {
    const row = await this.deps.instances.mustFind(user, id);
    const { settings } = await this.deps.catalogue.get();
    this.deps.instances.checkBandwidth(row, mbps, settings);
    const prepaid = !POSTPAID.includes(row.cycle);
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
    const refund = prepaid && !upgrade ? (await this.deps.db.transaction((tx) => this.planDowngradeRefund(tx, row, mbps))).refund : 0n;
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
      return { order, instance: await this.deps.instances.get(user, id) };
    }
    const { settings } = await this.deps.catalogue.get();
    const hourly = q.prepaid ? 0n : BigInt(extraOf(row, mbps)) * settings.bandwidthPricePerMbpsHour;
    const detail = q.prepaid
      ? `${row.bandwidthMbps} Mbps → ${mbps} Mbps（预计退还 ¥${formatYuan(BigInt(q.refund))}，生效时结算；续费按新带宽计价）`
      : `按量计费：${row.bandwidthMbps} Mbps → ${mbps} Mbps，生效后 ¥${formatYuan(BigInt(q.hourlyPriceAfter))}/小时`;
    const instance = await this.deps.instances.beginBandwidthChange(
      user,
      id,
      { mbps, orderId: '', hourly },
      // Checked again under the row lock: another change may have started meanwhile.
      (cur) => this.deps.instances.checkBandwidth(cur, mbps, settings),
      detail,
    );
    return { order: null, instance };
  }

  /**
   * Posts a prepaid downgrade's refund once the driver has applied it (InstanceService.applyBandwidth
   * calls this under the instance's row lock): one TrafficDowngrade order per bandwidth task, its id
   * derived from the task. Answers what came back.
   */
  async refundDowngrade(tx: Tx, row: InstanceRow, mbps: number, opId: string): Promise<bigint> {
    if (POSTPAID.includes(row.cycle) || mbps >= row.bandwidthMbps) return 0n;
    const id = instanceIdFor(`traffic-down:${opId}`, 0);
    if (await this.deps.orders.byId(row.userId, id, tx)) return 0n;
    const plan = await this.planDowngradeRefund(tx, row, mbps);
    if (plan.refund <= 0n) return 0n;
    const name = `带宽降级 ${row.name}：${row.bandwidthMbps} Mbps → ${mbps} Mbps，退还未使用部分`;
    await this.deps.orders.postRefund(
      tx,
      {
        payerId: row.userId,
        createdBy: row.userId,
        kind: 'default',
        type: 'TrafficDowngrade',
        category: row.category,
        request: { instanceId: row.id, bandwidthMbps: mbps, fromMbps: row.bandwidthMbps, allocations: plan.allocations },
        quote: {
          lines: [{ kind: 'bandwidth', name, unitPrice: String(plan.refund), quantity: 1, amount: String(plan.refund) }],
          listTotal: String(plan.refund),
          discountTotal: '0',
          voucherDeduction: '0',
          total: String(plan.refund),
        },
        description: name,
      },
      id,
      { cash: plan.cash, gift: plan.gift },
    );
    return plan.refund;
  }

  /** The arithmetic of a prepaid downgrade's refund (see the top of this file). */
  async planDowngradeRefund(tx: Tx, row: InstanceRow, mbps: number): Promise<DowngradeRefund> {
    const none: DowngradeRefund = { refund: 0n, cash: 0n, gift: [], allocations: [] };
    const now = this.deps.clock.now().getTime();
    let left = extraOf(row, row.bandwidthMbps) - extraOf(row, mbps);
    if (left <= 0 || !row.expireAt || row.expireAt.getTime() <= now) return none;
    const hoursLeft = Math.floor((row.expireAt.getTime() - now) / HOUR_MS);
    const upgrades = await this.deps.orders.instanceOrdersOf(tx, row.id, 'TrafficUpgrade', 'Success');
    const downgrades = await this.deps.orders.instanceOrdersOf(tx, row.id, 'TrafficDowngrade', 'Refunded');
    const returned = new Map<string, number>();
    for (const d of downgrades) for (const a of (d.order.request as { allocations?: DowngradeRefund['allocations'] }).allocations ?? []) returned.set(a.orderId, (returned.get(a.orderId) ?? 0) + a.mbps);
    const grants = await this.deps.gifts.unexpired(tx, [...new Set(upgrades.flatMap((u) => u.parts.flatMap((p) => (p.giftGrantId ? [p.giftGrantId] : []))))]);
    const out: DowngradeRefund = { ...none, gift: [], allocations: [] };
    const gift = new Map<string, bigint>();
    for (const { order, parts } of [...upgrades].reverse()) {
      if (left <= 0) break;
      const req = order.request as UpgradeRequest;
      const added = extraOf(row, req.bandwidthMbps) - extraOf(row, req.fromMbps);
      const take = Math.min(added - (returned.get(order.id) ?? 0), left);
      if (take <= 0 || !req.hours) continue;
      left -= take;
      out.allocations.push({ orderId: order.id, mbps: take });
      const paidAt = (order.paidAt ?? order.createdAt).getTime();
      const unused = Math.min(hoursLeft, Math.floor((paidAt + req.hours * HOUR_MS - now) / HOUR_MS));
      if (unused <= 0) continue;
      const den = BigInt(added) * BigInt(req.hours);
      for (const p of parts) {
        if (p.source === 'voucher') continue;
        const back = (p.amount * BigInt(take) * BigInt(unused)) / den;
        if (p.source === 'cash') out.cash += back;
        else if (p.giftGrantId && grants.has(p.giftGrantId)) gift.set(p.giftGrantId, (gift.get(p.giftGrantId) ?? 0n) + back);
      }
    }
    out.gift = [...gift].filter(([, amount]) => amount > 0n).map(([grantId, amount]) => ({ grantId, amount }));
    out.refund = out.cash + out.gift.reduce((n, g) => n + g.amount, 0n);
    return out;
  }
}

/** Chargeable Mbps at `mbps`: what lies beyond the size's own bandwidth. */
function extraOf(row: InstanceRow, mbps: number): number {
  return Math.max(0, mbps - row.includedBandwidthMbps);
}

