/**
 * Public bandwidth of e-commerce machines (TrafficUpgrade / TrafficDowngrade). The size of
 * the machine includes some bandwidth; more is bought in the operator's steps (catalogue settings
 * bandwidthStepsMbps) at bandwidthPricePerMbpsHour for each Mbps beyond what the size includes.
 */
import { z } from 'zod';
import { quoteSchema } from './catalogue.js';
import { moneySchema, numeric } from './common.js';
import { instanceSchema } from './instance.js';
import { orderSchema } from './order.js';

/** The largest bandwidth anyone can ask for; the operator's steps are the real limit. */
export const MAX_BANDWIDTH_MBPS = 10_000;

export const changeBandwidthRequestSchema = z.object({
  bandwidthMbps: numeric(
    z
      .number({ error: '带宽必须是数字' })
      .int({ error: '带宽必须是整数（Mbps）' })
      .min(1, { error: '带宽至少 1 Mbps' })
      .max(MAX_BANDWIDTH_MBPS, { error: `带宽最大 ${MAX_BANDWIDTH_MBPS} Mbps` }),
  ),
});
export type ChangeBandwidthRequest = z.infer<typeof changeBandwidthRequestSchema>;

export const bandwidthQuoteSchema = z.object({
  instanceId: z.string(),
  /** TrafficUpgrade when the new bandwidth is larger, TrafficDowngrade when smaller. */
  type: z.enum(['TrafficUpgrade', 'TrafficDowngrade']),
  currentMbps: z.number().int(),
  newMbps: z.number().int(),
  /** What the size includes (not charged). */
  includedMbps: z.number().int(),
  /** The bandwidths this instance may choose: what the size includes and the operator's larger steps. */
  choices: z.array(z.number().int()),
  pricePerMbpsHour: moneySchema,
  prepaid: z.boolean(),
  /** Prepaid: whole hours left until expireAt, what an upgrade is prorated over; 0 for post-paid. */
  remainingHours: z.number().int(),
  /** Post-paid: the hourly price with the new bandwidth (metered from the moment it applies); prepaid: 0. */
  hourlyPriceAfter: moneySchema,
  /** Prepaid upgrade: the pro-rata charge, paid as a TrafficUpgrade order; otherwise total 0. */
  quote: quoteSchema,
  /** Prepaid downgrade: what comes back (as a TrafficDowngrade order) for the removed Mbps' unused hours; otherwise 0. */
  refund: moneySchema,
  /** What happens to the money, in the words the dialog shows. */
  rule: z.string(),
});
export type BandwidthQuote = z.infer<typeof bandwidthQuoteSchema>;

/**
 * A prepaid upgrade: an Unpaid TrafficUpgrade order to pay (the bandwidth changes once it is paid).
 * Otherwise no order yet: the instance is already Operating with the change under way (a prepaid
 * downgrade's TrafficDowngrade refund is posted when the driver has applied it).
 */
export const changeBandwidthResponseSchema = z.object({ order: orderSchema.nullable(), instance: instanceSchema });
export type ChangeBandwidthResponse = z.infer<typeof changeBandwidthResponseSchema>;

/** The bandwidths an e-commerce machine may have: what its size includes, then the operator's steps above it. */
export function bandwidthChoices(includedMbps: number, stepsMbps: readonly number[]): number[] {
  return [includedMbps, ...[...new Set(stepsMbps)].filter((s) => s > includedMbps).sort((a, b) => a - b)];
}
