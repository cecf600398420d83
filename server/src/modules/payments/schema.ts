/** The tables of the payments module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigint, bigserial, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** One attempt to collect money through a gateway (Alipay/WeChat QR), for a recharge or an order. */
export const payments = pgTable(
  'payments',
  {
    id: uuid('id').primaryKey(),
    outTradeNo: text('out_trade_no').notNull(),
    method: text('method', { enum: ['Alipay', 'Wechat'] }).notNull(),
    purpose: text('purpose', { enum: ['recharge', 'order'] }).notNull(),
    subjectId: uuid('subject_id').notNull(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: ['Pending', 'Succeeded', 'Closed'] })
      .notNull()
      .default('Pending'),
    gatewayTradeNo: text('gateway_trade_no'),
    qrContent: text('qr_content').notNull(),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    lastQueriedAt: ts('last_queried_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('payments_out_trade_no_uq').on(t.outTradeNo),
    index('payments_subject_idx').on(t.subjectId),
    index('payments_pending_idx').on(t.status, t.expiresAt),
  ],
);

/** Every notification a gateway sent us, applied or not, and why: the audit trail of money in. */
export const paymentNotifications = pgTable(
  'payment_notifications',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    method: text('method').notNull(),
    outTradeNo: text('out_trade_no').notNull().default(''),
    outcome: text('outcome', { enum: ['applied', 'replayed', 'refused'] }).notNull(),
    reason: text('reason').notNull().default(''),
    body: text('body').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('payment_notifications_trade_idx').on(t.outTradeNo)],
);

/** What the embedded sandbox gateway knows about its trades (it plays the gateway's own database). */
export const sandboxTrades = pgTable('sandbox_trades', {
  outTradeNo: text('out_trade_no').primaryKey(),
  data: jsonb('data').notNull(),
  /** Compared on every write, so a pay and a close racing in two processes cannot both win. */
  version: integer('version').notNull().default(0),
  updatedAt: ts('updated_at').notNull(),
});
