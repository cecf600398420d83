/**
 * What a raw `db.execute(sql…)` answered, the same on both drivers: node-postgres gives `rows` and
 * `rowCount`, PGlite `rows` and `affectedRows`.
 */

/** The rows a raw statement returned. */
export function rowsOf<T>(res: unknown): T[] {
  return (res as { rows: T[] }).rows;
}

/** How many rows a raw statement inserted, updated or deleted. */
export function rowCount(res: unknown): number {
  const r = res as { rowCount?: number | null; affectedRows?: number };
  return r.rowCount ?? r.affectedRows ?? 0;
}

/** PostgreSQL's unique_violation, through drizzle's wrapping (PGlite and node-postgres alike). */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur = e as { code?: string; cause?: unknown } | undefined; cur; cur = cur.cause as typeof cur) {
    if (cur.code === '23505') return true;
  }
  return false;
}
