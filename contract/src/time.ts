/** Times as people in China read them: Beijing time (UTC+8, no daylight saving), whatever zone the process runs in. */
const BEIJING_OFFSET_MS = 8 * 3_600_000;

/** "2026-11-25 16:05", or "2026-11-25 16:05:09" with seconds. */
export function formatBeijing(at: Date | string, unit: 'minute' | 'second' = 'minute'): string {
  const ms = typeof at === 'string' ? Date.parse(at) : at.getTime();
  return new Date(ms + BEIJING_OFFSET_MS)
    .toISOString()
    .slice(0, unit === 'minute' ? 16 : 19)
    .replace('T', ' ');
}

/** The first moment of the Beijing calendar month `at` falls in (a child's monthly spending limit starts again then). */
export function beijingMonthStart(at: Date): Date {
  const b = new Date(at.getTime() + BEIJING_OFFSET_MS);
  return new Date(Date.UTC(b.getUTCFullYear(), b.getUTCMonth(), 1) - BEIJING_OFFSET_MS);
}

/** The Beijing calendar day (YYYY-MM-DD) of an instant. */
export function beijingDay(at: Date | number): string {
  const ms = typeof at === 'number' ? at : at.getTime();
  return new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, 10);
}

/** The instant a Beijing calendar day (YYYY-MM-DD) begins. */
export function beijingDayStart(day: string): Date {
  return new Date(Date.parse(`${day}T00:00:00Z`) - BEIJING_OFFSET_MS);
}
