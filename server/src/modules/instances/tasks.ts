/**
 * What a task plugs into the instance core. A task (contract INSTANCE_TASKS) is work the driver does
 * on a machine while the instance waits: save it as an image, grow its data disk, change its
 * bandwidth, move it to another host. The core (service.ts) starts it under the row lock
 * (beginTask), sends it to the driver and hands the driver's report to the task's handler; what the
 * task needs and what its outcome changes are the handler's alone.
 *
 * One file per task holds the requests that start it, its parameter and its handler:
 * save-image.ts (saveImage), disks.ts (resizeDisk), traffic.ts (changeBandwidth), migrate.ts
 * (migrate). A new task is its name in the contract, a file like those and one line in the handler
 * map of context.ts; a task without a handler there does not compile.
 *
 * While an operation runs, the instance's pending_op_* columns hold it (pendingOpColumns): its id,
 * its kind (creation, action or task), the status it came from and, for a task, the task's
 * parameter as JSON, checked against the task's zod schema when it is read back. Parameters written
 * before they were JSON (plain or ':'-joined text, kept by migration 0039 as a JSON string) are read
 * by the task's legacy reader.
 */
import { z } from 'zod';
import { INSTANCE_TASKS, type InstanceStatus as Status, type InstanceTask } from '@console/contract';
import type { Tx } from '../../db/client.js';
import type { DriverEvent, InstanceOp } from '../../drivers/compute/types.js';
import type { Snapshot } from '../catalogue/index.js';
import type { PendingOpKind } from './schema.js';
import type { InstanceRow } from './rows.js';

/** A task with its parameter, encoded: what beginTask writes into the pending operation. */
export interface TaskStart {
  task: InstanceTask;
  param: unknown;
}

/** A task's parameter: the one place it is written (as JSON) and read back (checked by its schema). */
export class TaskParam<T extends InstanceTask, P> {
  constructor(
    readonly task: T,
    private schema: z.ZodType<P>,
    /** Reads what was stored before parameters were JSON. */
    private legacy: (text: string) => P,
  ) {}

  start(value: P): TaskStart {
    return { task: this.task, param: z.encode(this.schema, value) };
  }

  /** What start wrote; a string is the text stored before parameters were JSON. */
  read(stored: unknown): P {
    return typeof stored === 'string' ? this.legacy(stored) : z.decode(this.schema, stored);
  }
}

/** A bigint in a task parameter: a string in JSON. */
export const bigintParam = z.codec(z.string().regex(/^-?\d+$/), z.bigint(), { decode: (s) => BigInt(s), encode: (n) => String(n) });

/** What the driver's success changes on the instance; it goes back to the status it had unless `to` says otherwise. */
export interface TaskDone {
  set: Partial<InstanceRow>;
  detail: string;
  to?: Status;
}

/** What a failure adds to going back: a notice for the owner, a paid order to refund. */
export interface TaskFailed {
  notice?: string;
  refundOrder?: string;
}

export interface TaskHandler<T extends InstanceTask, P> {
  readonly param: TaskParam<T, P>;
  /** What the driver is asked to do. */
  op(row: InstanceRow, param: P): InstanceOp;
  /** The driver did it (inside the instance's row lock). */
  onDone(tx: Tx, row: InstanceRow, param: P, e: DriverEvent, snap: Snapshot): Promise<TaskDone>;
  /** The driver could not: undo what the task holds. */
  onFailed(tx: Tx, row: InstanceRow, param: P, e: DriverEvent): Promise<TaskFailed>;
  /** The host came back with the machine running, so the task will not go on: undo what it holds (nothing when absent). */
  onAbandoned?(tx: Tx, row: InstanceRow, param: P): Promise<void>;
}

/** Every task's handler, by task. */
export type TaskHandlers = { readonly [T in InstanceTask]: TaskHandler<T, any> };

/** The task an instance is Operating for: its handler, the status it came from and its parameter. */
export interface PendingTask {
  handler: TaskHandler<InstanceTask, any>;
  before: Status;
  param: unknown;
}

export function isTask(name: string): name is InstanceTask {
  return (INSTANCE_TASKS as readonly string[]).includes(name);
}

type PendingColumns = Pick<InstanceRow, 'pendingOpId' | 'pendingOpKind' | 'pendingOpParams' | 'pendingOpFrom' | 'pendingOpBooting' | 'opStartedAt'>;

/** The pending operation `opId` of `kind`, begun from status `from` at `at` (`params`: a task's, as TaskParam.start encodes it). */
export function pendingOpColumns(op: { opId: string; kind: PendingOpKind; from: Status; at: Date; params?: unknown }): PendingColumns {
  return {
    pendingOpId: op.opId,
    pendingOpKind: op.kind,
    pendingOpParams: op.params ?? null,
    pendingOpFrom: op.from,
    pendingOpBooting: false,
    opStartedAt: op.at,
  };
}

/** The columns of an instance the driver is doing nothing for. */
export const NO_PENDING_OP = {
  pendingOpId: null,
  pendingOpKind: null,
  pendingOpParams: null,
  pendingOpFrom: null,
  pendingOpBooting: false,
  opStartedAt: null,
} as const satisfies PendingColumns;

/** The status an instance goes back to when its pending operation fails. */
export function statusBefore(row: Pick<InstanceRow, 'pendingOpFrom'>): Status {
  return row.pendingOpFrom ?? 'Stopped';
}

/** The task of the pending operation, its parameter read by its handler; null for a creation or an action. */
export function pendingTaskOf(row: Pick<InstanceRow, 'pendingOpKind' | 'pendingOpFrom' | 'pendingOpParams'>, handlers: TaskHandlers): PendingTask | null {
  const kind = row.pendingOpKind;
  if (!kind || !isTask(kind)) return null;
  const handler = handlers[kind];
  return { handler, before: statusBefore(row), param: handler.param.read(row.pendingOpParams) };
}
