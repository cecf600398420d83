/**
 * Bulk statements send whole columns as PostgreSQL array literals and read them back with unnest:
 * one short statement and a handful of parameters however many rows, on PGlite and PostgreSQL.
 */

/** A PostgreSQL array literal of simple values ("{a,b}", nulls as NULL), sent as one text parameter. */
export function pgArray(values: (string | bigint | number | boolean | null)[]): string {
  return `{${values.map(element).join(',')}}`;
}

const SPECIAL = /["\\]/;
const SPECIALS = /["\\]/g;

function element(v: string | bigint | number | boolean | null): string {
  if (v === null) return 'NULL';
  if (typeof v !== 'string') return String(v);
  return `"${SPECIAL.test(v) ? v.replace(SPECIALS, '\\$&') : v}"`;
}
