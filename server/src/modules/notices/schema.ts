/** The tables of the notices module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';
import { NOTICE_KINDS } from '@console/contract';

/** How a notice went by one channel: sent, not wanted, nowhere to send it, no provider template for the kind, or the provider failed. */
export const DELIVERY = ['sent', 'off', 'no-address', 'no-template', 'failed'] as const;
export type Delivery = (typeof DELIVERY)[number];

/**
 * 站内信: every notice a user was sent, whatever else carried it. `subject` and `period` name the
 * occasion (an instance and its release date and stage, say): one row per occasion, so a repeated
 * or concurrent tick sends nothing twice. Occasions without a period (NULL) never collide.
 */
export const noticeMessages = pgTable(
  'notice_messages',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: NOTICE_KINDS }).notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    link: text('link'),
    subject: text('subject'),
    period: text('period'),
    sms: text('sms', { enum: DELIVERY }),
    mail: text('mail', { enum: DELIVERY }),
    createdAt: ts('created_at').notNull(),
    readAt: ts('read_at'),
  },
  (t) => [
    index('notice_messages_user_idx').on(t.userId, t.createdAt),
    index('notice_messages_unread_idx')
      .on(t.userId)
      .where(sql`${t.readAt} is null`),
    uniqueIndex('notice_messages_occasion_uq').on(t.userId, t.kind, t.subject, t.period),
  ],
);

/** A user's choice of channels for one kind (no row: NOTICE_DEFAULTS). 站内信 is always on. */
export const noticePreferences = pgTable(
  'notice_preferences',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: NOTICE_KINDS }).notNull(),
    sms: boolean('sms').notNull(),
    mail: boolean('mail').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.kind] })],
);

/**
 * A condition a user has been told about and that has not cleared since (the balance is low): the
 * notice goes out when the row is inserted, and again only after the condition cleared (row deleted).
 */
export const noticeFlags = pgTable(
  'notice_flags',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: NOTICE_KINDS }).notNull(),
    raisedAt: ts('raised_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.kind] })],
);

/** "有卡时通知我": told once (notifiedAt) when a host of the type in the region has `gpuCount` cards free. */
export const gpuSubscriptions = pgTable(
  'gpu_subscriptions',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    gpuTypeId: text('gpu_type_id').notNull(),
    regionId: text('region_id').notNull(),
    gpuCount: integer('gpu_count').notNull().default(1),
    createdAt: ts('created_at').notNull(),
    notifiedAt: ts('notified_at'),
  },
  (t) => [
    // One waiting subscription per user, type, region and card count: subscribing again is the same subscription.
    uniqueIndex('gpu_subscriptions_waiting_uq')
      .on(t.userId, t.gpuTypeId, t.regionId, t.gpuCount)
      .where(sql`${t.notifiedAt} is null`),
    index('gpu_subscriptions_waiting_idx')
      .on(t.gpuTypeId, t.regionId)
      .where(sql`${t.notifiedAt} is null`),
    index('gpu_subscriptions_user_idx').on(t.userId, t.createdAt),
  ],
);
