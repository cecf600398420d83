/** The tables of the monitoring module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, smallint, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import { instances } from '../instances/schema.js';

/** A card at one point: [utilisation %, memory used MB, memory total MB or null]. */
export type GpuCell = [number, number, number | null];

/**
 * The figures of running instances: samples every 15 s (`step_seconds` 15) and their roll-ups to
 * minutes (60) and ten minutes (600), each kept as long as the range it draws (store.ts: RETENTION).
 * One row per instance, step and slot (`at`, the slot's start): a second process's sample of the
 * same slot is dropped, a roll-up written again replaces itself.
 */
export const instanceMetrics = pgTable(
  'instance_metrics',
  {
    instanceId: uuid('instance_id').notNull(),
    stepSeconds: smallint('step_seconds').notNull(),
    at: ts('at').notNull(),
    cpuPercent: doublePrecision('cpu_percent'),
    memoryUsedBytes: bigint('memory_used_bytes', { mode: 'number' }),
    memoryLimitBytes: bigint('memory_limit_bytes', { mode: 'number' }),
    dataDiskUsedBytes: bigint('data_disk_used_bytes', { mode: 'number' }),
    dataDiskSizeBytes: bigint('data_disk_size_bytes', { mode: 'number' }),
    systemDiskUsedBytes: bigint('system_disk_used_bytes', { mode: 'number' }),
    systemDiskSizeBytes: bigint('system_disk_size_bytes', { mode: 'number' }),
    netRxBytesPerSec: doublePrecision('net_rx_bytes_per_sec'),
    netTxBytesPerSec: doublePrecision('net_tx_bytes_per_sec'),
    gpus: jsonb('gpus').$type<GpuCell[]>().notNull(),
    /** The busiest card's utilisation, and in a roll-up the highest of its samples: idle means it stayed low. */
    gpuUtilMax: doublePrecision('gpu_util_max'),
    gpuUnavailable: text('gpu_unavailable'),
    simulated: boolean('simulated').notNull(),
  },
  (t) => [primaryKey({ columns: [t.instanceId, t.stepSeconds, t.at] }), index('instance_metrics_step_at_idx').on(t.stepSeconds, t.at)],
);

/**
 * GPU 空闲自动关机 per instance. The sampling job keeps `idleSince` (the start of the stretch in which
 * every sample saw the cards idle) and `seenAt` (its last sample of the machine); the idle job warns
 * once per stretch (`warnedFor` = that stretch's idleSince) and stops the instance when the stretch
 * is `hours` long. `payerId` and `category` are what the notices need (taken when it was switched on).
 */
export const instanceIdleStops = pgTable(
  'instance_idle_stops',
  {
    instanceId: uuid('instance_id')
      .primaryKey()
      .references(() => instances.id),
    payerId: uuid('payer_id').notNull(),
    category: text('category').notNull(),
    hours: integer('hours').notNull(),
    idleSince: ts('idle_since'),
    seenAt: ts('seen_at'),
    warnedFor: ts('warned_for'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('instance_idle_stops_idle_idx').on(t.idleSince)],
);
