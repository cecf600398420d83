/** The tables of the training module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { LoraJobStatus, LoraParams, SdBaseModelId, DatasetKind } from '@console/contract';
import { ts } from '../../db/columns.js';
import { users } from '../users/schema.js';

/** LoRA training jobs: the paying account's, each with what it was quoted, held and charged. */
export const sdTrainJobs = pgTable(
  'sd_train_jobs',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    /** The client's id for the start: the same request twice starts one job. */
    requestId: uuid('request_id').notNull(),
    /** The dataset as it was at the start (it may be changed or deleted later). */
    datasetId: uuid('dataset_id'),
    datasetName: text('dataset_name').notNull(),
    kind: text('kind').$type<DatasetKind>().notNull(),
    triggerWord: text('trigger_word').notNull(),
    imageIds: jsonb('image_ids').$type<string[]>().notNull(),
    name: text('name').notNull(),
    baseModel: text('base_model').$type<SdBaseModelId>().notNull(),
    params: jsonb('params').$type<LoraParams>().notNull(),
    status: text('status').$type<LoraJobStatus>().notNull(),
    stepsPerEpoch: integer('steps_per_epoch').notNull(),
    stepsTotal: integer('steps_total').notNull(),
    step: integer('step').notNull().default(0),
    /** Epochs finished: saved and charged. */
    epoch: integer('epoch').notNull().default(0),
    estimateSeconds: integer('estimate_seconds').notNull(),
    ratePerHour: bigint('rate_per_hour', { mode: 'bigint' }).notNull(),
    /** Card time (ms) reserved from the payer's 时长包 at the start, and what the finished epochs used of it. */
    packageMs: bigint('package_ms', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    packageUsedMs: bigint('package_used_ms', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    held: bigint('held', { mode: 'bigint' }).notNull(),
    charged: bigint('charged', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    refunded: bigint('refunded', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    loss: jsonb('loss').$type<[number, number][]>().notNull().default([]),
    log: jsonb('log').$type<string[]>().notNull().default([]),
    error: text('error'),
    /** The process running the job on the backend, and when it last reported: a silent runner's jobs are taken over. */
    runner: text('runner'),
    heartbeatAt: ts('heartbeat_at'),
    /** How many times the job was started on the backend (a restart starts it again). */
    runs: integer('runs').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('sd_train_jobs_request_uq').on(t.userId, t.requestId),
    index('sd_train_jobs_user_idx').on(t.userId, t.createdAt),
    index('sd_train_jobs_active_idx')
      .on(t.createdAt)
      .where(sql`${t.status} in ('queued', 'preparing', 'training', 'saving')`),
  ],
);

/** What each finished epoch left: its LoRA file and sample images in the storage driver. */
export const sdTrainEpochs = pgTable(
  'sd_train_epochs',
  {
    jobId: uuid('job_id')
      .notNull()
      .references(() => sdTrainJobs.id, { onDelete: 'cascade' }),
    epoch: integer('epoch').notNull(),
    loraKey: text('lora_key').notNull(),
    loraBytes: bigint('lora_bytes', { mode: 'number' }).notNull(),
    sampleKeys: jsonb('sample_keys').$type<string[]>().notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.epoch] })],
);
