/**
 * An instance's row and the small rules on it that every file of the module uses (its metering columns, its id,
 * how a hold reads). Its own file so that the state machine, the tasks and the views import it without a cycle.
 */
import { createHash } from 'node:crypto';
import { isPostpaid } from '@console/contract';
import { instances } from './schema.js';
import { runRate } from './run-rate.js';

export type InstanceRow = typeof instances.$inferSelect;

/** The metering columns of a post-paid run starting at `at` (billing.ts does the arithmetic); nothing for prepaid. */
export function meterStart(row: InstanceRow, at: Date): Partial<InstanceRow> {
  if (!isPostpaid(row.cycle)) return {};
  return { meterRate: runRate(row), meterSince: at, meterSegment: at, meterMs: 0n, meterCharged: 0n };
}

/** The metering columns of an instance that is not metered. */
export const METER_OFF = { meterRate: 0n, meterSince: null, meterSegment: null, meterMs: 0n, meterCharged: 0n } as const;

/** "2 小时", "90 分钟". */
export function holdText(minutes: number): string {
  return minutes % 60 === 0 ? `${minutes / 60} 小时` : `${minutes} 分钟`;
}

/** The same id for the same order and position, so a repeated fulfilment creates nothing new. */
export function instanceIdFor(orderId: string, index: number): string {
  const h = createHash('sha256').update(`${orderId}:${index}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
