/** The tables of the images module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/**
 * 我的镜像: an image saved from a stopped instance (spec §3 image statuses: Build → Active or
 * BuildFail). Deleted images keep their row (deletedAt) for the instances created from them.
 */
export const userImages = pgTable(
  'user_images',
  {
    id: uuid('id').primaryKey(),
    /** Whose image: the payer (the parent when a child account saved it). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    name: text('name').notNull(),
    status: text('status', { enum: ['Active_NotAllowedMigrate', 'Active', 'BuildFail', 'Build', 'Migrate'] }).notNull(),
    failReason: text('fail_reason'),
    /** The category of the source instance: the kind of instance it can create. */
    category: text('category', { enum: ['Gpu', 'Game', 'App', 'Generic', 'Desktop', 'Ebusiness'] }).notNull(),
    sourceInstanceId: uuid('source_instance_id').notNull(),
    sourceInstanceName: text('source_instance_name').notNull(),
    baseImageId: text('base_image_id'),
    gpuTypeId: text('gpu_type_id'),
    sizeGb: integer('size_gb'),
    shared: boolean('shared').notNull().default(false),
    /** The compute driver's operation that builds it. */
    opId: text('op_id').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    index('user_images_user_idx').on(t.userId, t.createdAt),
    // A name is unique among the images an account keeps (40921001).
    uniqueIndex('user_images_name_uq')
      .on(t.userId, t.name)
      .where(sql`${t.deletedAt} is null`),
    uniqueIndex('user_images_op_uq').on(t.opId),
  ],
);

/**
 * 共享码 of an image (共享镜像): one live code per image at a time; revoking keeps the row
 * (revokedAt), so an old code answers "revoked" rather than ever naming another image.
 */
export const userImageShareCodes = pgTable(
  'user_image_share_codes',
  {
    code: text('code').primaryKey(),
    imageId: uuid('image_id')
      .notNull()
      .references(() => userImages.id),
    createdAt: ts('created_at').notNull(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [
    uniqueIndex('user_image_share_codes_live_uq')
      .on(t.imageId)
      .where(sql`${t.revokedAt} is null`),
  ],
);

/**
 * An account that entered a code: the image is in its list (shared with me) while that code is live
 * and the image not deleted. One row per account and image, whichever code it came by last.
 */
export const userImageGrants = pgTable(
  'user_image_grants',
  {
    imageId: uuid('image_id')
      .notNull()
      .references(() => userImages.id),
    /** The payer who may use it (the parent when a child account entered the code). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    code: text('code')
      .notNull()
      .references(() => userImageShareCodes.code),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.imageId, t.userId] }), index('user_image_grants_user_idx').on(t.userId, t.createdAt)],
);
