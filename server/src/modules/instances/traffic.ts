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
 * - prepaid downgrade: applies at once and returns nothing (what was paid for the current period is
 *   kept, as for a data disk); renewals are cheaper from then on. The dialog says so before.
 * - post-paid (Usage/Hour): nothing up front. The hourly price becomes the size's price plus the
 *   extra Mbps; a running meter is settled at the old rate up to the moment the driver applied the
 *   change and goes on at the new one (InstanceService.applyBandwidth).
 */
import { bandwidthChoices, formatYuan, type BandwidthQuote, type ChangeBandwidthResponse, type Quote } from '@console/contract';
import type { Clock } from '../../clock.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueService } from '../catalogue/service.js';
import type { CatalogueStore } from '../catalogue/store.js';
import type { OrderService } from '../orders/service.js';
import type { UserRow } from '../sessions/service.js';
import { POSTPAID, type InstanceRow, type InstanceService } from './service.js';

const HOUR_MS = 3_600_000;

export const UPGRADE_PREPAID_RULE = '包周期实例升级带宽：按新增带宽 × 剩余整小时数（不足 1 小时按 1 小时）一次性支付，支付后立即生效；续费按新带宽计价。';
export const DOWNGRADE_PREPAID_RULE = '包周期实例降低带宽：立即生效，本周期已支付的带宽费用不退还；续费按新带宽计价。';
export const POSTPAID_RULE = '按量计费实例调整带宽：无需预付，生效后按新的每小时价格按秒计费，生效前按原带宽计费。';

export interface TrafficDeps {
  clock: Clock;
  catalogue: CatalogueStore;
  pricing: CatalogueService;
  orders: OrderService;
  instances: InstanceService;
}

export class TrafficService {
  constructor(private deps: TrafficDeps) {}

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
        request: { instanceId: row.id, bandwidthMbps: mbps, fromMbps: row.bandwidthMbps },
        quote: q.quote,
        description: `带宽升级 ${row.name}：${row.bandwidthMbps} Mbps → ${mbps} Mbps`,
      });
      return { order, instance: await this.deps.instances.get(user, id) };
    }
    const { settings } = await this.deps.catalogue.get();
    const hourly = q.prepaid ? 0n : BigInt(extraOf(row, mbps)) * settings.bandwidthPricePerMbpsHour;
    const detail = q.prepaid
      ? `${row.bandwidthMbps} Mbps → ${mbps} Mbps（本周期费用不退，续费按新带宽计价）`
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
}

/** Chargeable Mbps at `mbps`: what lies beyond the size's own bandwidth. */
function extraOf(row: InstanceRow, mbps: number): number {
  return Math.max(0, mbps - row.includedBandwidthMbps);
}

