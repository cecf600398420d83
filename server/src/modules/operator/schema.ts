/** The operator module's tables (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
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
