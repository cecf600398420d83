/** The tables of drivers/compute/fleet.ts (only it and the operator's `host` commands use them; see DESIGN.md "Boundaries"). */
import { bigint, bigserial, boolean, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';

/**
 * The registered agents, one per catalogue host: where it answers, its key (the secret sealed under a
 * key derived from SESSION_SECRET: a dump of this table alone does not reveal it), and what its last
 * heartbeat said. `up`: answering (or not yet past the grace); `lost`: its machines were reported lost.
 */
export const fleetHosts = pgTable('fleet_hosts', {
  hostId: text('host_id').primaryKey(),
  baseUrl: text('base_url').notNull(),
  keyId: text('key_id').notNull(),
  secretSealed: text('secret_sealed').notNull(),
  status: text('status', { enum: ['up', 'lost'] })
    .notNull()
    .default('up'),
  registeredAt: ts('registered_at').notNull(),
  lastSeenAt: ts('last_seen_at'),
  lostAt: ts('lost_at'),
  /** The last GET /v1/host answer (host-report.ts HostReport). */
  report: jsonb('report'),
  healthy: boolean('healthy').notNull().default(false),
  lastError: text('last_error'),
  /** How far the console has read the agent's own event stream. */
  agentSeq: bigint('agent_seq', { mode: 'number' }).notNull().default(0),
});

/** Which host each machine lives on (set at create, moved by a migration). */
export const fleetMachines = pgTable('fleet_machines', {
  instanceId: uuid('instance_id').primaryKey(),
  hostId: text('host_id').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

/**
 * Every agent's events, and the fleet's own (lost, found, cross-host migrate), in one ordered stream
 * for the reconciler: `seq` is global; (host, agent seq) keeps an agent's event from being copied twice.
 */
export const fleetEvents = pgTable(
  'fleet_events',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    hostId: text('host_id').notNull(),
    hostSeq: bigint('host_seq', { mode: 'number' }),
    opId: text('op_id'),
    instanceId: text('instance_id').notNull(),
    kind: text('kind').notNull(),
    ok: boolean('ok').notNull(),
    error: text('error'),
    data: jsonb('data').notNull(),
    at: ts('at').notNull(),
  },
  (t) => [uniqueIndex('fleet_events_host_seq').on(t.hostId, t.hostSeq)],
);
