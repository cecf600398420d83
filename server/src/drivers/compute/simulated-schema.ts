/** The tables of drivers/compute/simulated (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigserial, boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

export const simMachines = pgTable('sim_machines', {
  instanceId: uuid('instance_id').primaryKey(),
  hostId: text('host_id'),
  power: text('power', { enum: ['creating', 'running', 'stopped', 'destroyed'] }).notNull(),
  gpu: boolean('gpu').notNull(),
  diskGb: integer('disk_gb').notNull(),
  bandwidthMbps: integer('bandwidth_mbps').notNull().default(0),
  sshPort: integer('ssh_port').notNull(),
  spec: jsonb('spec').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const simOperations = pgTable(
  'sim_operations',
  {
    opId: text('op_id').primaryKey(),
    instanceId: uuid('instance_id').notNull(),
    kind: text('kind').notNull(),
    params: jsonb('params').notNull(),
    dueAt: ts('due_at').notNull(),
    state: text('state', { enum: ['pending', 'done', 'failed'] }).notNull(),
    error: text('error'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('sim_operations_due_idx')
      .on(t.dueAt)
      .where(sql`${t.state} = 'pending'`),
  ],
);

export const simEvents = pgTable('sim_events', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  opId: text('op_id'),
  instanceId: uuid('instance_id').notNull(),
  kind: text('kind').notNull(),
  ok: boolean('ok').notNull(),
  error: text('error'),
  data: jsonb('data').notNull(),
  at: ts('at').notNull(),
});

/** Faults an operator or a test injects: the next `remaining` operations of a kind (on a host) fail. */
export const simFaults = pgTable('sim_faults', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  kind: text('kind').notNull(),
  hostId: text('host_id'),
  remaining: integer('remaining').notNull(),
  message: text('message').notNull(),
});

export const simLostHosts = pgTable('sim_lost_hosts', {
  hostId: text('host_id').primaryKey(),
  lostAt: ts('lost_at').notNull(),
});
