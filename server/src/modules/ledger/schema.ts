/** The tables of the ledger module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, check, index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

// Double-entry (DESIGN.md "Money"): every change of a balance is a transfer whose entries sum to
// zero. `balance` is a cache of the account's entries, updated in the same transaction.
export const ledgerAccounts = pgTable(
  'ledger_accounts',
  {
    id: uuid('id').primaryKey(),
    /** `user:<id>:cash`, `platform:revenue` … one row per owner and kind. */
    code: text('code').notNull(),
    userId: uuid('user_id').references(() => users.id, { onDelete: 'restrict' }),
    kind: text('kind', {
      enum: ['cash', 'gift', 'voucher', 'deposit', 'resource', 'revenue', 'clearing', 'promotion', 'compensation', 'refund', 'hold'],
    }).notNull(),
    balance: bigint('balance', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    /** Platform accounts are the other side of user money and go negative by design. */
    mayGoNegative: boolean('may_go_negative').notNull().default(false),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('ledger_accounts_code_uq').on(t.code),
    index('ledger_accounts_user_idx').on(t.userId),
    check('ledger_accounts_not_negative', sql`${t.mayGoNegative} or ${t.balance} >= 0`),
  ],
);

export const ledgerTransfers = pgTable(
  'ledger_transfers',
  {
    id: uuid('id').primaryKey(),
    /** One business event, one transfer: a replay finds this key and posts nothing. */
    idempotencyKey: text('idempotency_key').notNull(),
    kind: text('kind').notNull(),
    memo: text('memo').notNull().default(''),
    /** Who caused it: a user, an operator, or the system (null). */
    actorId: uuid('actor_id'),
    orderId: text('order_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [uniqueIndex('ledger_transfers_key_uq').on(t.idempotencyKey), index('ledger_transfers_order_idx').on(t.orderId)],
);

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    // No foreign keys: entries are written only by LedgerService, always with their transfer and
    // locked accounts in the same transaction, and their per-row checks cost a quarter of a billing
    // tick. `npm run ledger:check` reports any entry without its transfer or account instead.
    transferId: uuid('transfer_id').notNull(),
    accountId: uuid('account_id').notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    /** The account's balance right after this entry: a statement without summing history. */
    balanceAfter: bigint('balance_after', { mode: 'bigint' }).notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('ledger_entries_account_idx').on(t.accountId, t.id), index('ledger_entries_transfer_idx').on(t.transferId)],
);
