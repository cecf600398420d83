/** The tables of the diffusion module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { ComfyGraph, ComfyRunState, DiffusionParams, DiffusionStatus, LoraRef } from '@console/contract';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** A LoRA as the task used it: its reference, the name it had and the colour its file carried. */
export interface UsedLora {
  ref: LoraRef;
  name: string;
  color: [number, number, number];
}

/** txt2img tasks: the paying account's, each with its parameters (the seed resolved) and its money. */
export const sdGenTasks = pgTable(
  'sd_gen_tasks',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    requestId: uuid('request_id').notNull(),
    params: jsonb('params').$type<Omit<DiffusionParams, 'loras'> & { seed: number }>().notNull(),
    loras: jsonb('loras').$type<UsedLora[]>().notNull(),
    /** A ComfyUI workflow run (/comfyui): the graph as it was run, the workflow it came from, and its nodes' state. */
    workflow: jsonb('workflow').$type<ComfyGraph>(),
    workflowId: uuid('workflow_id'),
    workflowName: text('workflow_name'),
    comfy: jsonb('comfy').$type<ComfyRunState>(),
    status: text('status').$type<DiffusionStatus>().notNull(),
    /** Images finished; the sampling step of the next one. */
    done: integer('done').notNull().default(0),
    step: integer('step').notNull().default(0),
    unitPrice: bigint('unit_price', { mode: 'bigint' }).notNull(),
    /** One image's card time (ms), and how many of the first images the payer's 时长包 pay for (reserved at submit). */
    imageMs: bigint('image_ms', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    packageImages: integer('package_images').notNull().default(0),
    held: bigint('held', { mode: 'bigint' }).notNull(),
    charged: bigint('charged', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    refunded: bigint('refunded', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    error: text('error'),
    runner: text('runner'),
    heartbeatAt: ts('heartbeat_at'),
    runs: integer('runs').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    finishedAt: ts('finished_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('sd_gen_tasks_request_uq').on(t.userId, t.requestId),
    index('sd_gen_tasks_user_idx').on(t.userId, t.createdAt),
    index('sd_gen_tasks_active_idx')
      .on(t.createdAt)
      .where(sql`${t.status} in ('queued', 'running')`),
  ],
);

/** The gallery: each image a task made, its file in the storage driver. */
export const sdGenImages = pgTable(
  'sd_gen_images',
  {
    id: uuid('id').primaryKey(),
    taskId: uuid('task_id')
      .notNull()
      .references(() => sdGenTasks.id, { onDelete: 'cascade' }),
    userId: uuid('user_id').notNull(),
    index: integer('index').notNull(),
    seed: bigint('seed', { mode: 'number' }).notNull(),
    storageKey: text('storage_key').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [uniqueIndex('sd_gen_images_task_uq').on(t.taskId, t.index), index('sd_gen_images_user_idx').on(t.userId, t.createdAt)],
);
