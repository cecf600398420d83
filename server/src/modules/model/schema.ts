/** The tables of the model module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/**
 * API keys of the model gateway. The secret itself is never stored: `secret_hash` is its SHA-256
 * (hex), which is what a call's bearer is looked up by; `masked` is what the list shows. `owner_id`
 * made and manages the key; `payer_id` is whose balance its calls spend (a child's parent). A
 * deleted key keeps its row (call logs name it) with `deleted_at` set.
 */
export const modelApiKeys = pgTable(
  'model_api_keys',
  {
    id: uuid('id').primaryKey(),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id),
    payerId: uuid('payer_id')
      .notNull()
      .references(() => users.id),
    name: text('name').notNull(),
    secretHash: text('secret_hash').notNull(),
    masked: text('masked').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    expiresAt: ts('expires_at'),
    /** In 0.0001 yuan; null: no limit. */
    spendLimit: bigint('spend_limit', { mode: 'bigint' }),
    spent: bigint('spent', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    /** Empty: every model. */
    allowedModels: jsonb('allowed_models').$type<string[]>().notNull().default([]),
    /** Addresses and CIDR ranges as entered; empty: anywhere. */
    allowedIps: jsonb('allowed_ips').$type<string[]>().notNull().default([]),
    rpmLimit: integer('rpm_limit'),
    tpmLimit: integer('tpm_limit'),
    lastUsedAt: ts('last_used_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    uniqueIndex('model_api_keys_secret_hash_uq').on(t.secretHash),
    index('model_api_keys_owner_idx')
      .on(t.ownerId, t.createdAt)
      .where(sql`${t.deletedAt} is null`),
  ],
);

/**
 * One row per gateway call (/v1): which key and model, the channel that answered, the tokens and
 * what it cost (0.0001 yuan, what the settle transfer took), how long it took, and how it ended:
 * `ok`, `aborted` (the client left mid-stream; charged for what was produced) or `error`.
 */
export const modelCalls = pgTable(
  'model_calls',
  {
    id: uuid('id').primaryKey(),
    keyId: uuid('key_id').notNull(),
    userId: uuid('user_id').notNull(),
    payerId: uuid('payer_id').notNull(),
    model: text('model').notNull(),
    channel: text('channel'),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    cost: bigint('cost', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    /** What was held from the cash before the upstream call (released at settle). */
    held: bigint('held', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    latencyMs: integer('latency_ms').notNull().default(0),
    /** `open` from the hold until it is settled; a call left open by a crash is released by the sweeper (`expired`). */
    status: text('status', { enum: ['open', 'ok', 'aborted', 'error', 'expired'] }).notNull(),
    error: text('error'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('model_calls_key_idx').on(t.keyId, t.createdAt),
    index('model_calls_payer_idx').on(t.payerId, t.createdAt),
    index('model_calls_open_idx')
      .on(t.createdAt)
      .where(sql`${t.status} = 'open'`),
  ],
);
