/** The tables of the payments module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
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

/**
 * Money sent back through the gateway it came in by (退回原支付渠道), part or all of a payment.
 * At request the amount leaves the user's cash for the platform's refund account (in flight); the
 * gateway's success moves it on to payment clearing, its failure back to cash. `giftTakes` records
 * which gift grants gave back the recharge bonus's share, so a failure can return exactly those.
 */
export const refunds = pgTable(
  'refunds',
  {
    /** The caller's request id: a retried request finds this row and refunds nothing more. */
    id: uuid('id').primaryKey(),
    /** Sent to the gateway (out_request_no / out_refund_no); the gateway is idempotent by it. */
    refundNo: text('refund_no').notNull(),
    paymentId: uuid('payment_id')
      .notNull()
      .references(() => payments.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    method: text('method', { enum: ['Alipay', 'Wechat'] }).notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    /** The bonus's share taken back from gift credit, and what of it gift credit could not cover (taken from cash). */
    bonusFromGift: bigint('bonus_from_gift', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    bonusFromCash: bigint('bonus_from_cash', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    giftTakes: jsonb('gift_takes').$type<{ grantId: string; amount: string }[]>().notNull().default([]),
    reason: text('reason').notNull(),
    status: text('status', { enum: ['Processing', 'Succeeded', 'Failed'] })
      .notNull()
      .default('Processing'),
    gatewayRefundNo: text('gateway_refund_no'),
    failReason: text('fail_reason').notNull().default(''),
    /** Who asked: an operator's user id, null for the local operator command. */
    operatorId: uuid('operator_id'),
    lastQueriedAt: ts('last_queried_at'),
    settledAt: ts('settled_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('refunds_refund_no_uq').on(t.refundNo),
    index('refunds_payment_idx').on(t.paymentId),
    index('refunds_user_idx').on(t.userId, t.createdAt),
    index('refunds_processing_idx').on(t.status, t.lastQueriedAt),
    check('refunds_amount_positive', sql`${t.amount} > 0`),
  ],
);

/** What the embedded sandbox gateway knows about its trades (it plays the gateway's own database). */
export const sandboxTrades = pgTable('sandbox_trades', {
  outTradeNo: text('out_trade_no').primaryKey(),
  data: jsonb('data').notNull(),
  /** Compared on every write, so a pay and a close racing in two processes cannot both win. */
  version: integer('version').notNull().default(0),
  updatedAt: ts('updated_at').notNull(),
});
