/** The tables of the gifts module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/**
 * Gift credit (赠送金) arrives in grants with their own expiry; spending takes the earliest expiry
 * first, and what expires leaves the gift account through a ledger transfer. status 1 is active,
 * 0 is waiting for renewal (spec §3).
 */
export const giftGrants = pgTable(
  'gift_grants',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    source: text('source').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    remain: bigint('remain', { mode: 'bigint' }).notNull(),
    status: integer('status').notNull().default(1),
    expireAt: ts('expire_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('gift_grants_user_idx').on(t.userId, t.expireAt), check('gift_grants_remain_range', sql`${t.remain} >= 0 and ${t.remain} <= ${t.amount}`)],
);
