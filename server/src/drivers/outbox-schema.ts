/** The tables of drivers/outbox (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigserial, index, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from '../db/columns.js';

/** What the embedded SMS and mail drivers "sent": read by /dev/outbox. */
export const outbox = pgTable(
  'outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    to: text('to').notNull(),
    channel: text('channel', { enum: ['sms', 'email'] }).notNull(),
    text: text('text').notNull(),
    code: text('code').notNull().default(''),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('outbox_to_idx').on(t.to, t.id)],
);
