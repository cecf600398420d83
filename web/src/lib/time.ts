/**
 * Every time the console shows is Beijing time (UTC+8), whatever zone the browser runs in: the
 * server rolls bills, days and statements up by Beijing hours and days, so a page in the browser's
 * zone would disagree with its own labels. Format times here, never with dayjs(x).format or toLocale*.
 */
import dayjs, { type Dayjs } from 'dayjs';
import { formatBeijing } from '@console/contract';

/** "2026-11-25 16:05:09", or "--" for no time. */
export const formatTime = (iso: string | Date | null | undefined) => (iso ? formatBeijing(iso, 'second') : '--');

/** "2026-11-25 16:05", or "--" for no time. */
export const formatMinute = (iso: string | Date | null | undefined) => (iso ? formatBeijing(iso) : '--');

/** "2026-11-25": the Beijing calendar day. */
export const formatDay = (iso: string | Date) => formatBeijing(iso).slice(0, 10);

/** "16:05:09": the Beijing time of day. */
export const formatClock = (iso: string | Date) => formatBeijing(iso, 'second').slice(11);

/**
 * Date pickers work in Beijing wall-clock time too: a picker value is a dayjs whose fields (day, hour,
 * minute) are Beijing's, whatever zone the browser is in. `beijingWallClock` makes one of an instant
 * (now by default), `instantOfBeijingWallClock` reads the instant a picked value means.
 */
export const beijingWallClock = (at: string | Date = new Date()): Dayjs => dayjs(formatBeijing(at, 'second'));

export function instantOfBeijingWallClock(d: Dayjs): Date {
  return new Date(Date.UTC(d.year(), d.month(), d.date(), d.hour(), d.minute(), d.second(), d.millisecond()) - BEIJING_OFFSET_MS);
}

const BEIJING_OFFSET_MS = 8 * 3_600_000;
