/** The tables of the comfyui module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { ComfyGraph } from '@console/contract';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** The account's ComfyUI workflows in the API format, each under a name of its own. */
export const comfyWorkflows = pgTable(
  'comfy_workflows',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    name: text('name').notNull(),
    graph: jsonb('graph').$type<ComfyGraph>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [uniqueIndex('comfy_workflows_name_uq').on(t.userId, t.name), index('comfy_workflows_user_idx').on(t.userId, t.updatedAt)],
);
