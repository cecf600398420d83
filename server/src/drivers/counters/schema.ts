/** The table of drivers/counters' postgres driver (only it reads and writes it; see DESIGN.md "Boundaries"). */
import { bigint, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/**
 * One row per counter and second: what was counted in that second. `expires` (the second it leaves
 * the window) lets idle counters be purged without knowing their window. Read and written by the
 * rate_take function (migration 0046) and PostgresCounters.
 */
export const rateCounts = pgTable(
  'rate_counts',
  {
    key: text('key').notNull(),
    second: bigint('second', { mode: 'number' }).notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    expires: bigint('expires', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.second] })],
);
