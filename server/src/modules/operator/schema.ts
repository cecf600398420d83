/** The operator module's tables (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigint, bigserial, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

/**
 * 镜像登记: images the operator registered by reference (registered-images.ts). Each is merged into
 * the catalogue snapshot as a catalogue image (and an application's as a 镜像应用), under `id`.
 */
export const operatorImages = pgTable(
  'operator_images',
  {
    /** 'reg-<slug>': the catalogue image's id (and the application's). */
    id: text('id').primaryKey(),
    /** As the operator wrote it (trimmed). */
    reference: text('reference').notNull(),
    /** The name the host's layout and the registry know it by: relative to REGISTRY_URL, or the layout's ref. */
    localRef: text('local_ref').notNull(),
    /** The manifest digest seen at registration; '' where the registry check did not give it. */
    digest: text('digest').notNull(),
    /** Where it was checked: 'registry' (REGISTRY_URL) or 'layout' (the host's OCI layout). */
    source: text('source', { enum: ['registry', 'layout'] }).notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['system', 'application', 'desktop'] }).notNull(),
    description: text('description').notNull().default(''),
    categories: jsonb('categories').$type<string[]>().notNull(),
    port: integer('port'),
    /** An application's least GPU memory (GB); 0: it runs without a card too (sold on CPU sizes). */
    minGpuMemoryGb: integer('min_gpu_memory_gb').notNull().default(0),
    /** The application's start command as written ('' : the image's own Cmd). */
    command: text('command').notNull().default(''),
    createdBy: uuid('created_by'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [uniqueIndex('operator_images_local_ref_uq').on(t.localRef), uniqueIndex('operator_images_name_uq').on(t.name)],
);

/** Operator roles (管理员 admin, 财务 finance, 客服 support, 运维 ops): one row per role a user holds. */
export const operatorRoles = pgTable(
  'operator_roles',
  {
    userId: uuid('user_id').notNull(),
    role: text('role', { enum: ['admin', 'finance', 'support', 'ops'] }).notNull(),
    /** Who granted it; null for the local command (or the migration of the old isOperator flag). */
    grantedBy: uuid('granted_by'),
    grantedAt: ts('granted_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.role] })],
);

/**
 * Every operator action, append-only: a trigger (migration 0048) refuses UPDATE, DELETE and
 * TRUNCATE, so not even the console's own database user can edit the trail.
 */
export const operatorAudit = pgTable(
  'operator_audit',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    at: ts('at').notNull(),
    /** The operator's user id; null for the local command (`npm run operator`). */
    actorId: uuid('actor_id'),
    /** The operator's mobile as it was then ('' for the local command). */
    actorMobile: text('actor_mobile').notNull(),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    before: jsonb('before'),
    after: jsonb('after'),
    reason: text('reason').notNull().default(''),
    requestId: text('request_id').notNull().default(''),
    ip: text('ip').notNull().default(''),
  },
  (t) => [
    index('operator_audit_at_idx').on(t.at),
    index('operator_audit_actor_idx').on(t.actorId, t.at),
    index('operator_audit_action_idx').on(t.action, t.at),
    index('operator_audit_target_idx').on(t.targetId, t.at),
  ],
);

/** Credits and debits above the threshold by a non-管理员: they move money only once another operator approves. */
export const operatorMoneyRequests = pgTable(
  'operator_money_requests',
  {
    id: uuid('id').primaryKey(),
    direction: text('direction', { enum: ['credit', 'debit'] }).notNull(),
    userId: uuid('user_id').notNull(),
    account: text('account', { enum: ['cash', 'gift'] }).notNull(),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    giftValidDays: integer('gift_valid_days').notNull(),
    reason: text('reason').notNull(),
    /** The requester's requestId: a retried request creates one request, and approval posts under it. */
    requestKey: text('request_key').notNull(),
    status: text('status', { enum: ['pending', 'approved', 'rejected'] }).notNull(),
    requestedBy: uuid('requested_by').notNull(),
    decidedBy: uuid('decided_by'),
    decisionReason: text('decision_reason').notNull().default(''),
    createdAt: ts('created_at').notNull(),
    decidedAt: ts('decided_at'),
  },
  (t) => [uniqueIndex('operator_money_requests_key_uq').on(t.requestKey), index('operator_money_requests_status_idx').on(t.status, t.createdAt)],
);
