/** The tables of the orders module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** An order (spec §3/§4): priced by the server, paid from the balance or a gateway, then fulfilled. */
export const orders = pgTable(
  'orders',
  {
    id: uuid('id').primaryKey(),
    orderUid: text('order_uid').notNull(),
    /** Whose money: the parent when a child account buys. */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    kind: text('kind', { enum: ['Personal', 'Ai', 'default'] }).notNull(),
    type: text('type', {
      enum: [
        'NewBuy',
        'Renew',
        'Usage',
        'Refund',
        'OrderRefund',
        'TrafficUpgrade',
        'TrafficDowngrade',
        'DayToMonth',
        'TransferToLong',
        'Time',
        'ChangeDataDisk',
      ],
    }).notNull(),
    category: text('category').notNull(),
    status: text('status', { enum: ['Unpaid', 'Paid', 'Success', 'Failed', 'Expired', 'Abated', 'Cancelled', 'Refunded', 'Time'] }).notNull(),
    /** What was asked for, as validated: the fulfiller builds from this. */
    request: jsonb('request').notNull(),
    /** The server's quote at creation (lines without a voucher). */
    quote: jsonb('quote').notNull(),
    description: text('description').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    voucherId: uuid('voucher_id'),
    voucherDeduction: bigint('voucher_deduction', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    payMethod: text('pay_method', { enum: ['Balance', 'Alipay', 'Wechat'] }),
    resourceId: text('resource_id'),
    failReason: text('fail_reason'),
    expiresAt: ts('expires_at').notNull(),
    paidAt: ts('paid_at'),
    fulfilledAt: ts('fulfilled_at'),
    refundedAt: ts('refunded_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('orders_uid_uq').on(t.orderUid),
    index('orders_user_idx').on(t.userId, t.createdAt),
    index('orders_status_idx').on(t.status, t.updatedAt),
    // A child account's orders (created by someone other than the payer): its spend and its own order list.
    index('orders_child_created_idx')
      .on(t.createdBy, t.createdAt)
      .where(sql`${t.createdBy} <> ${t.userId}`),
    // At most one unpaid order per account (40011007), enforced by the database as well.
    uniqueIndex('orders_one_unpaid_uq')
      .on(t.userId)
      .where(sql`${t.status} = 'Unpaid'`),
  ],
);

/** Where an order's money came from, part by part, so a refund puts each part back. */
export const orderPayments = pgTable(
  'order_payments',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    source: text('source', { enum: ['voucher', 'gift', 'cash'] }).notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    giftGrantId: uuid('gift_grant_id'),
    voucherId: uuid('voucher_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('order_payments_order_idx').on(t.orderId)],
);

/**
 * What a post-paid run segment was charged at, which its ledger charges (keys `usage:<resource>:<segment
 * start>:<ms>`, amounts) do not say: no-card mode or cards, the hourly rate and the bandwidth's share
 * of it. Written once, when the segment is first charged, so the bill can itemise each segment.
 */
export const usageRuns = pgTable(
  'usage_runs',
  {
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    /** The metered resource (an instance id). */
    resourceId: text('resource_id').notNull(),
    segmentStart: ts('segment_start').notNull(),
    noCard: boolean('no_card').notNull(),
    cards: integer('cards').notNull(),
    ratePerHour: bigint('rate_per_hour', { mode: 'bigint' }).notNull(),
    /** The part of ratePerHour that is public bandwidth beyond what the size includes. */
    bandwidthPerHour: bigint('bandwidth_per_hour', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orderId, t.resourceId, t.segmentStart] })],
);
