/** The tables of the resources module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, check, index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** 资源包: prepaid quantities (model tokens, GPU hours) consumed before money. */
export const resourcePackages = pgTable(
  'resource_packages',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    orderId: uuid('order_id').notNull(),
    productId: text('product_id').notNull(),
    name: text('name').notNull(),
    unit: text('unit').notNull(),
    total: bigint('total', { mode: 'bigint' }).notNull(),
    remain: bigint('remain', { mode: 'bigint' }).notNull(),
    /** GPU-hour packages: the card type whose post-paid runs they pay for (null: model tokens). */
    gpuTypeId: text('gpu_type_id'),
    /** Stored units per unit shown: 3,600,000 for card hours (kept in card-milliseconds), else 1. */
    unitScale: bigint('unit_scale', { mode: 'bigint' })
      .notNull()
      .default(sql`1`),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('resource_packages_order_uq').on(t.orderId),
    index('resource_packages_user_idx').on(t.userId),
    check('resource_packages_remain_range', sql`${t.remain} >= 0 and ${t.remain} <= ${t.total}`),
  ],
);

/** What a package paid for: one row per package and metered period, unique by its key. */
export const resourcePackageUsages = pgTable(
  'resource_package_usages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    packageId: uuid('package_id').notNull(),
    userId: uuid('user_id').notNull(),
    /** The post-paid instance run it covered: instance and the run's start (its meter segment). */
    instanceId: uuid('instance_id'),
    segment: ts('segment'),
    /** Or the model gateway call whose tokens it paid for (reserved at the hold, trimmed at settle). */
    modelCallId: uuid('model_call_id'),
    /** Or the job whose GPU time it pays for: `train:<job>` (LoRA training) or `gen:<task>` (image generation). */
    jobRef: text('job_ref'),
    amount: bigint('amount', { mode: 'bigint' }).notNull(),
    key: text('key').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('resource_package_usages_key_uq').on(t.key),
    index('resource_package_usages_run_idx').on(t.instanceId, t.segment),
    index('resource_package_usages_package_idx').on(t.packageId),
    index('resource_package_usages_job_idx')
      .on(t.jobRef)
      .where(sql`${t.jobRef} is not null`),
    index('resource_package_usages_call_idx')
      .on(t.modelCallId)
      .where(sql`${t.modelCallId} is not null`),
  ],
);
