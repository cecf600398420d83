/** The tables of the instances module (only it reads and writes them; see DESIGN.md "Boundaries"). */
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from '../../db/columns.js';
import type { InstanceAction, InstanceStatus, InstanceTask } from '@console/contract';
import { users } from '../users/schema.js';

/** What an instance waits for the compute driver to do: its creation, an action a person or the system asked for, or a task. */
export type PendingOpKind = 'create' | InstanceAction | InstanceTask;

export const instances = pgTable(
  'instances',
  {
    id: uuid('id').primaryKey(),
    /** Whose instance and whose money: the parent when a child account bought it. */
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    createdBy: uuid('created_by').notNull(),
    category: text('category', { enum: ['Gpu', 'Game', 'App', 'Generic', 'Desktop', 'Ebusiness'] }).notNull(),
    name: text('name').notNull(),
    status: text('status').$type<InstanceStatus>().notNull(),
    noCard: boolean('no_card').notNull().default(false),
    lastError: text('last_error'),
    regionId: text('region_id').notNull(),
    roomId: text('room_id'),
    hostId: text('host_id'),
    gpuTypeId: text('gpu_type_id'),
    gpuCount: integer('gpu_count').notNull().default(0),
    /** Cards taken from the host's inventory now (0 when stopped or in no-card mode; a migrated instance keeps its new host's until cardsHeldUntil). */
    gpuHeld: integer('gpu_held').notNull().default(0),
    /** After a migration: when the cards reserved on the new host go back if the instance has not started (settings.migrateHoldMinutes). */
    cardsHeldUntil: ts('cards_held_until'),
    sizeId: text('size_id'),
    cpu: integer('cpu').notNull(),
    memoryGb: integer('memory_gb').notNull(),
    imageId: text('image_id'),
    /** The image of my images (modules/images) it was created from, if any; imageId is then its base image. */
    userImageId: uuid('user_image_id'),
    applicationId: text('application_id'),
    dataDiskGb: integer('data_disk_gb').notNull(),
    freeDataDiskGb: integer('free_data_disk_gb').notNull(),
    /** Public bandwidth (size-based instances); what the size includes is not charged (modules/instances/traffic.ts). */
    bandwidthMbps: integer('bandwidth_mbps').notNull().default(0),
    includedBandwidthMbps: integer('included_bandwidth_mbps').notNull().default(0),
    cycle: text('cycle', { enum: ['Usage', 'Hour', 'Day', 'Week', 'Month'] }).notNull(),
    hourlyPrice: bigint('hourly_price', { mode: 'bigint' }).notNull(),
    noCardHourlyPrice: bigint('no_card_hourly_price', { mode: 'bigint' }).notNull(),
    /** Post-paid: what the bandwidth beyond the included costs per hour, metered with the run (added to hourlyPrice). */
    bandwidthHourlyPrice: bigint('bandwidth_hourly_price', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    diskDailyPrice: bigint('disk_daily_price', { mode: 'bigint' }).notNull(),
    expireAt: ts('expire_at'),
    /** Prepaid: renew one unit of the cycle from the balance before expiry (modules/instances/prepaid.ts). */
    autoRenew: boolean('auto_renew').notNull().default(false),
    /** The expiry an auto-renewal last failed for (no balance): its notice is sent once per expiry. */
    autoRenewFailedFor: ts('auto_renew_failed_for'),
    releaseAt: ts('release_at'),
    releaseNoticeAt: ts('release_notice_at'),
    /** 定时关机: when the system stops it (scheduled-stop.ts); cleared when it runs, is cancelled, or the instance is stopped or released. */
    scheduledStopAt: ts('scheduled_stop_at'),
    orderId: uuid('order_id'),
    /** The post-paid order (status Time) the ticks of this instance are charged to. */
    usageOrderId: uuid('usage_order_id'),
    /** Metering of the current run (see modules/instances/billing.ts): rate, segment start, last tick, milliseconds and amount so far. */
    meterRate: bigint('meter_rate', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    meterSince: ts('meter_since'),
    meterSegment: ts('meter_segment'),
    meterMs: bigint('meter_ms', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    meterCharged: bigint('meter_charged', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    diskBilledUntil: ts('disk_billed_until'),
    /** What a tick could not take from an empty balance; starting again collects it first. */
    arrears: bigint('arrears', { mode: 'bigint' })
      .notNull()
      .default(sql`0`),
    sshHost: text('ssh_host'),
    sshPort: integer('ssh_port'),
    sshUser: text('ssh_user').notNull().default('root'),
    /** AES-GCM under a server secret: the console shows it to its owner, so it cannot be a hash. */
    sshPasswordEnc: text('ssh_password_enc').notNull(),
    jupyterToken: text('jupyter_token').notNull(),
    /** The API token of the instance's ComfyUI (app-token.ts), AES-GCM like the password: shown to its owner; null when none. */
    appTokenEnc: text('app_token_enc'),
    /** The operation the driver is doing for it (tasks.ts pendingOpColumns); all null when none. */
    pendingOpId: text('pending_op_id'),
    pendingOpKind: text('pending_op_kind').$type<PendingOpKind>(),
    /** A task's parameter as its TaskParam writes it; null for creation and actions. */
    pendingOpParams: jsonb('pending_op_params'),
    /** The status the instance goes back to when the operation fails (or a task ends). */
    pendingOpFrom: text('pending_op_from').$type<InstanceStatus>(),
    /** A creation the driver has done and now boots (it reports the boot under bootOpId of pendingOpId): nothing to send again. */
    pendingOpBooting: boolean('pending_op_booting').notNull().default(false),
    opStartedAt: ts('op_started_at'),
    startedAt: ts('started_at'),
    stoppedAt: ts('stopped_at'),
    releasedAt: ts('released_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('instances_user_idx').on(t.userId, t.category, t.createdAt),
    index('instances_order_idx').on(t.orderId),
    // The meter tick's scan: metered runs by owner (a tick lane is a range of owners) then id. It holds
    // no column the tick writes, so the tick's updates stay HOT (see the fillfactor of migration 0014).
    index('instances_meter_run_idx')
      .on(t.userId, t.id)
      .where(sql`${t.meterSegment} is not null`),
    index('instances_busy_idx')
      .on(t.opStartedAt)
      .where(sql`${t.pendingOpId} is not null`),
    index('instances_release_idx')
      .on(t.releaseAt)
      .where(sql`${t.releaseAt} is not null and ${t.releasedAt} is null`),
    index('instances_expire_idx')
      .on(t.expireAt)
      .where(sql`${t.expireAt} is not null and ${t.releasedAt} is null`),
    index('instances_scheduled_stop_idx')
      .on(t.scheduledStopAt)
      .where(sql`${t.scheduledStopAt} is not null`),
  ],
);

/** Every transition of every instance: what /console/log shows. */
export const instanceOperations = pgTable(
  'instance_operations',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    instanceId: uuid('instance_id').notNull(),
    userId: uuid('user_id').notNull(),
    actorId: uuid('actor_id'),
    action: text('action').notNull(),
    fromStatus: text('from_status').$type<InstanceStatus>(),
    toStatus: text('to_status').$type<InstanceStatus>().notNull(),
    detail: text('detail').notNull().default(''),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('instance_operations_user_idx').on(t.userId, t.id), index('instance_operations_instance_idx').on(t.instanceId, t.id)],
);

/** How far each process-independent reader has read a driver's event stream. */
export const computeCursors = pgTable('compute_cursors', {
  driver: text('driver').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  updatedAt: ts('updated_at').notNull(),
});
