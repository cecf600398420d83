/** The tables of drivers/compute/local (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigserial, boolean, integer, jsonb, pgTable, serial, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../../db/columns.js';

/** Each instance's sandbox as this host knows it: where its disks are and whether it should run. */
export const localMachines = pgTable('local_machines', {
  instanceId: uuid('instance_id').primaryKey(),
  hostId: text('host_id').notNull(),
  power: text('power', { enum: ['creating', 'running', 'stopped', 'destroyed'] }).notNull(),
  gpu: boolean('gpu').notNull(),
  diskGb: integer('disk_gb').notNull(),
  bandwidthMbps: integer('bandwidth_mbps').notNull().default(0),
  sshPort: integer('ssh_port').notNull(),
  spec: jsonb('spec').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

/** Operations as submitted (an id submitted again is a no-op) and how they ended. */
export const localOperations = pgTable('local_operations', {
  opId: text('op_id').primaryKey(),
  instanceId: uuid('instance_id').notNull(),
  kind: text('kind').notNull(),
  params: jsonb('params').notNull(),
  state: text('state', { enum: ['pending', 'done', 'failed'] }).notNull(),
  error: text('error'),
  createdAt: ts('created_at').notNull(),
});

export const localEvents = pgTable('local_events', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  opId: text('op_id'),
  instanceId: uuid('instance_id').notNull(),
  kind: text('kind').notNull(),
  ok: boolean('ok').notNull(),
  error: text('error'),
  data: jsonb('data').notNull(),
  at: ts('at').notNull(),
});

/** The host uid each owner's machines run as (host-uids.ts): HOST_UID_BASE + seq, handed out once. */
export const localHostUids = pgTable('local_host_uids', {
  owner: text('owner').primaryKey(),
  seq: serial('seq').notNull().unique(),
});

/** The host's NVIDIA cards the machines hold while they run (gpus.ts): the card is the key, so one machine per card. */
export const localGpuClaims = pgTable('local_gpu_claims', {
  minor: integer('minor').primaryKey(),
  instanceId: uuid('instance_id').notNull(),
  claimedAt: ts('claimed_at').notNull(),
});
