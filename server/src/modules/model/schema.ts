/** The tables of the model module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { ConversationMessage } from '@console/contract';
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
    /**
     * The online experience's key: one per account, made on first use, never listed, never shown and
     * never accepted as a bearer (its secret was thrown away); the playground's calls are billed and
     * logged through it like any other key's.
     */
    playground: boolean('playground').notNull().default(false),
  },
  (t) => [
    uniqueIndex('model_api_keys_secret_hash_uq').on(t.secretHash),
    uniqueIndex('model_api_keys_playground_uq')
      .on(t.ownerId)
      .where(sql`${t.playground}`),
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
    /** Tokens reserved from 大模型 Token 包 before the call (what was not used goes back at settle). */
    heldTokens: integer('held_tokens').notNull().default(0),
    /** Of the call's tokens, how many the packages paid for (prompt tokens first); the rest is `cost`. */
    packageTokens: integer('package_tokens').notNull().default(0),
    latencyMs: integer('latency_ms').notNull().default(0),
    /**
     * `open` from the hold until it is settled (a payer with token packages; a crash leaves it for the
     * sweeper: `expired`). A call held from a float is written once, when it ended (floats.ts).
     */
    status: text('status', { enum: ['open', 'ok', 'aborted', 'error', 'expired'] }).notNull(),
    error: text('error'),
    createdAt: ts('created_at').notNull(),
    /**
     * An open call's heartbeat: its process marks its open calls alive every HOLD_TOUCH_MS while it
     * runs (a long stream included); one untouched for STALE_HOLD_MS was held by a process that died
     * and the sweeper gives its hold back (gateway.ts). Set at the hold (migration 0046 set it for calls open before).
     */
    touchedAt: ts('touched_at'),
  },
  (t) => [
    index('model_calls_key_idx').on(t.keyId, t.createdAt),
    index('model_calls_payer_idx').on(t.payerId, t.createdAt),
    index('model_calls_user_idx').on(t.userId, t.createdAt),
    index('model_calls_open_idx')
      .on(t.touchedAt)
      .where(sql`${t.status} = 'open'`),
  ],
);

/**
 * Hourly sums of the calls (by the hour they began), kept after the calls themselves are deleted:
 * what the stats read for every hour the rollup job has closed (see usage.ts).
 */
export const modelUsageHourly = pgTable(
  'model_usage_hourly',
  {
    hour: ts('hour').notNull(),
    payerId: uuid('payer_id').notNull(),
    userId: uuid('user_id').notNull(),
    keyId: uuid('key_id').notNull(),
    model: text('model').notNull(),
    requests: integer('requests').notNull(),
    failed: integer('failed').notNull(),
    promptTokens: bigint('prompt_tokens', { mode: 'bigint' }).notNull(),
    completionTokens: bigint('completion_tokens', { mode: 'bigint' }).notNull(),
    packageTokens: bigint('package_tokens', { mode: 'bigint' }).notNull(),
    cost: bigint('cost', { mode: 'bigint' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.payerId, t.hour, t.keyId, t.model] }), index('model_usage_hourly_user_idx').on(t.userId, t.hour)],
);

/** How far the rollup job has summed: every hour before `rolled_until` is final in model_usage_hourly. */
export const modelRollupState = pgTable('model_rollup_state', {
  id: integer('id').primaryKey(),
  rolledUntil: ts('rolled_until').notNull(),
});

/** The online experience's conversations, one row each, kept per user. */
export const modelConversations = pgTable(
  'model_conversations',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    title: text('title').notNull(),
    model: text('model').notNull(),
    system: text('system').notNull(),
    temperature: doublePrecision('temperature').notNull(),
    maxTokens: integer('max_tokens').notNull(),
    messages: jsonb('messages').$type<ConversationMessage[]>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('model_conversations_user_idx').on(t.userId, t.updatedAt)],
);

/**
 * A process's pre-authorisation of one payer's cash for model calls (floats.ts): `funded` moved from
 * the cash to the platform's hold account, `charged` of it moved on to revenue by `flushes` batched
 * call logs. A float its process closes gives `funded - charged` back; one whose process died stops
 * being touched (`touched_at`) and the sweeper gives it back (`expired`).
 */
export const modelFloats = pgTable(
  'model_floats',
  {
    id: uuid('id').primaryKey(),
    payerId: uuid('payer_id').notNull(),
    funded: bigint('funded', { mode: 'bigint' }).notNull(),
    charged: bigint('charged', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    /** Batches of calls logged and charged so far (a replayed batch after a lost commit is recognised by it). */
    flushes: integer('flushes').notNull().default(0),
    status: text('status', { enum: ['open', 'closed', 'expired'] }).notNull(),
    createdAt: ts('created_at').notNull(),
    touchedAt: ts('touched_at').notNull(),
  },
  (t) => [
    index('model_floats_open_idx')
      .on(t.touchedAt)
      .where(sql`${t.status} = 'open'`),
  ],
);
