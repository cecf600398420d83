/**
 * Background database reads (a cache refreshed ahead, a catalogue snapshot served stale while it is
 * read again) start a moment after the request that found them due, not at once: on PGlite a query
 * runs on this thread, and one started during a request's own awaits holds that request up — a model
 * call's upstream request and first chunk waited 5–10 ms behind the refreshes its admission set off.
 */
export const BACKGROUND_READ_DELAY_MS = 10;

export function afterAMoment<T>(read: () => Promise<T>): Promise<T> {
  return new Promise<void>((resolve) => setTimeout(resolve, BACKGROUND_READ_DELAY_MS).unref()).then(read);
}
