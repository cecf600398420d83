/** The scheduler's table (only jobs/ reads and writes it). */
import { pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from '../db/columns.js';

/**
 * Which console process runs each periodic job (leases.ts): one row per job, held by `holder`
 * (hostname, pid and a random part) until `expires_at` on the database's clock. The holder renews
 * it at each run; another process takes it only once it has expired or was given back (a deleted row).
 */
export const jobLeases = pgTable('job_leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: ts('expires_at').notNull(),
  /** When this holder took it (a change of holder shows as a new time). */
  acquiredAt: ts('acquired_at').notNull(),
  renewedAt: ts('renewed_at').notNull(),
});
