/**
 * Every time the console shows is Beijing time (UTC+8), whatever zone the browser runs in: the
 * server rolls bills, days and statements up by Beijing hours and days, so a page in the browser's
 * zone would disagree with its own labels. Format times here, never with dayjs(x).format or toLocale*.
 */
import { formatBeijing } from '@console/contract';

/** "2026-11-25 16:05:09", or "--" for no time. */
export const formatTime = (iso: string | Date | null | undefined) => (iso ? formatBeijing(iso, 'second') : '--');

/** "2026-11-25 16:05", or "--" for no time. */
export const formatMinute = (iso: string | Date | null | undefined) => (iso ? formatBeijing(iso) : '--');

/** "2026-11-25": the Beijing calendar day. */
export const formatDay = (iso: string | Date) => formatBeijing(iso).slice(0, 10);

/** "16:05:09": the Beijing time of day. */
export const formatClock = (iso: string | Date) => formatBeijing(iso, 'second').slice(11);
