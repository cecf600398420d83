/** The tables of the recharge module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigint, index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

export const recharges = pgTable(
  'recharges',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    bonus: bigint('bonus', { mode: 'bigint' }).notNull(),
    method: text('method', { enum: ['Alipay', 'Wechat'] }).notNull(),
    status: text('status', { enum: ['Unpaid', 'Paid', 'Expired', 'Cancelled'] })
      .notNull()
      .default('Unpaid'),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('recharges_user_idx').on(t.userId, t.createdAt)],
);
