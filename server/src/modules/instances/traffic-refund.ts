/**
 * The money back of a prepaid bandwidth downgrade (traffic.ts): when the driver has applied it, the
 * unused value of the removed Mbps comes back as one TrafficDowngrade order (status Refunded, one
 * ledger transfer). The removed chargeable Mbps are taken from the instance's paid TrafficUpgrade
 * orders newest first (each order's Mbps can come back once in all, however many downgrades), and
 * each gives back its cash and gift parts × taken Mbps / its Mbps × the whole hours left of what it
 * paid for (at most the hours left until expiry) / its hours, rounded down to 0.0001 yuan. Vouchers
 * and gift credit whose grant has expired are not returned; bandwidth paid within a renewal is not
 * returned (it priced the period, like the data disk).
 */
import { isPostpaid } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Tx } from '../../db/client.js';
import type { GiftService } from '../gifts/index.js';
import type { Checkout } from '../orders/index.js';
import type { OrderService } from '../orders/index.js';
import { instanceIdFor, type InstanceRow } from './rows.js';

const HOUR_MS = 3_600_000;

/** What a prepaid downgrade gives back, and from which upgrade orders how many Mbps. */
export interface DowngradeRefund {
  refund: bigint;
  cash: bigint;
  gift: { grantId: string; amount: bigint }[];
  allocations: { orderId: string; mbps: number }[];
}

/** What a TrafficUpgrade order's request holds (traffic.ts writes it). */
export interface UpgradeRequest {
  instanceId: string;
  bandwidthMbps: number;
  fromMbps: number;
  /** The whole hours the upgrade paid for (the instance's remaining time then). */
  hours?: number;
}

export class DowngradeRefunds {
  constructor(private deps: { clock: Clock; orders: OrderService; checkout: Checkout; gifts: GiftService }) {}

  /**
   * Posts a prepaid downgrade's refund once the driver has applied it (ChangeBandwidthTask calls
   * this under the instance's row lock): one TrafficDowngrade order per bandwidth task, its id
   * derived from the task. Answers what came back.
   */
  async refundDowngrade(tx: Tx, row: InstanceRow, mbps: number, opId: string): Promise<bigint> {
    if (isPostpaid(row.cycle) || mbps >= row.bandwidthMbps) return 0n;
    const id = instanceIdFor(`traffic-down:${opId}`, 0);
    if (await this.deps.orders.byId(row.userId, id, tx)) return 0n;
    const plan = await this.planDowngradeRefund(tx, row, mbps);
    if (plan.refund <= 0n) return 0n;
    const name = `带宽降级 ${row.name}：${row.bandwidthMbps} Mbps → ${mbps} Mbps，退还未使用部分`;
    await this.deps.checkout.postRefund(
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
    for (const d of downgrades)
      for (const a of (d.order.request as { allocations?: DowngradeRefund['allocations'] }).allocations ?? [])
        returned.set(a.orderId, (returned.get(a.orderId) ?? 0) + a.mbps);
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
export function extraOf(row: Pick<InstanceRow, 'includedBandwidthMbps'>, mbps: number): number {
  return Math.max(0, mbps - row.includedBandwidthMbps);
}
