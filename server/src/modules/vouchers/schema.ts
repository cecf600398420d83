/** The tables of the vouchers module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

// 代金券. Quotes read them; the money issue grants, locks and redeems them through the ledger.
export const vouchers = pgTable(
  'vouchers',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    minSpend: bigint('min_spend', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    /** Instance categories it may pay for; empty means all. */
    categories: jsonb('categories').$type<string[]>().notNull(),
    status: text('status', { enum: ['Unused', 'Used', 'Expired', 'Revoked'] })
      .notNull()
      .default('Unused'),
    validFrom: ts('valid_from').notNull(),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('vouchers_user_idx').on(t.userId, t.status)],
);
