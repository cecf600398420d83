/** The tables of the verification module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

export const verificationCodes = pgTable(
  'verification_codes',
  {
    id: uuid('id').primaryKey(),
    target: text('target').notNull(),
    channel: text('channel', { enum: ['sms', 'email'] }).notNull(),
    scene: text('scene').notNull(),
    codeHash: text('code_hash').notNull(),
    attempts: integer('attempts').notNull().default(0),
    ip: text('ip').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    consumedAt: ts('consumed_at'),
  },
  (t) => [index('verification_codes_target_idx').on(t.target, t.createdAt), index('verification_codes_ip_idx').on(t.ip, t.createdAt)],
);
