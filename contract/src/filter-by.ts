/** The filterBy parameter of list requests (spec §3). No zod here: the first page of the console imports it. */

/**
 * Filters travel as one comma-joined key,value string (spec §3): "status,Running,region,bj".
 * Returns the pairs; a dangling key is an error.
 */
export function parseFilterBy(raw: string | undefined): Record<string, string> {
  if (!raw) return {};
  const parts = raw.split(',');
  if (parts.length % 2 !== 0) throw new RangeError('filterBy 必须是成对的 key,value');
  const out: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 2) out[parts[i]!.trim()] = parts[i + 1]!.trim();
  return out;
}

/**
 * parseFilterBy where a key may repeat to mean "any of these": "type,NewBuy,type,Renew" is
 * { type: ['NewBuy', 'Renew'] }. Repeating the key keeps the spec's plain key,value pairs (no second
 * separator to escape). Duplicated values collapse; a dangling key is an error.
 */
export function parseFilterByMulti(raw: string | undefined): Record<string, string[]> {
  if (!raw) return {};
  const parts = raw.split(',');
  if (parts.length % 2 !== 0) throw new RangeError('filterBy 必须是成对的 key,value');
  const out: Record<string, string[]> = {};
  for (let i = 0; i < parts.length; i += 2) {
    const key = parts[i]!.trim();
    const value = parts[i + 1]!.trim();
    const values = (out[key] ??= []);
    if (!values.includes(value)) values.push(value);
  }
  return out;
}

/** The filterBy string of some filters; an array value repeats its key ("type,NewBuy,type,Renew"). */
export function formatFilterBy(filters: Record<string, string | number | readonly (string | number)[] | undefined | null>): string {
  return Object.entries(filters)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, x] as const))
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .flatMap(([k, v]) => [k, String(v)])
    .join(',');
}
