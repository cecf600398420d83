/** The tables of the invoices module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** 发票申请: an account holder asks for a VAT invoice; the operator issues or rejects it. */
export const invoices = pgTable(
  'invoices',
  {
    id: uuid('id').primaryKey(),
    /** Whose money was invoiced (the payer: a child's request is its parent's). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    requestedBy: uuid('requested_by').notNull(),
    kind: text('kind', { enum: ['normal', 'special'] }).notNull(),
    titleType: text('title_type', { enum: ['personal', 'enterprise'] }).notNull(),
    title: text('title').notNull(),
    taxNo: text('tax_no').notNull().default(''),
    email: text('email').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: ['Pending', 'Issued', 'Rejected', 'Cancelled'] })
      .notNull()
      .default('Pending'),
    invoiceNo: text('invoice_no'),
    rejectReason: text('reject_reason'),
    operatorId: uuid('operator_id'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    closedAt: ts('closed_at'),
  },
  (t) => [
    index('invoices_user_idx').on(t.userId, t.createdAt),
    index('invoices_status_idx').on(t.status, t.createdAt),
    check('invoices_amount_positive', sql`${t.amount} > 0`),
  ],
);
