/** The tables of the datasets module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** AI 绘图 datasets: the paying account's, each a set of images with captions (sd-scripts' layout). */
export const sdDatasets = pgTable(
  'sd_datasets',
  {
    id: uuid('id').primaryKey(),
    /** Whose dataset: the payer (the parent when a child account made it). */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['person', 'style', 'concept'] }).notNull(),
    description: text('description').notNull(),
    triggerWord: text('trigger_word').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('sd_datasets_user_idx').on(t.userId, t.createdAt)],
);

/** One image of a dataset: its bytes in the storage driver under `storageKey`, its caption here. */
export const sdDatasetImages = pgTable(
  'sd_dataset_images',
  {
    id: uuid('id').primaryKey(),
    datasetId: uuid('dataset_id')
      .notNull()
      .references(() => sdDatasets.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    format: text('format', { enum: ['png', 'jpeg', 'webp', 'bmp'] }).notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    caption: text('caption').notNull(),
    storageKey: text('storage_key').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    // sd-scripts pairs an image with the same-name .txt: names without their extension are unique in
    // a dataset, whatever the case (a.png and A.jpg would share a.txt on an export; 40950001).
    uniqueIndex('sd_dataset_images_stem_uq').on(t.datasetId, sql`lower(regexp_replace(${t.name}, '\\.[^.]*$', ''))`),
    index('sd_dataset_images_dataset_idx').on(t.datasetId, t.createdAt),
  ],
);
