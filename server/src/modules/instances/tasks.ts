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
 * While a task runs, the instance's pendingAction is "task:statusBefore:param", param being the
 * task's parameter as JSON, checked against the task's zod schema when it is read back. Parameters
 * written before they were JSON (plain or ':'-joined text) are read by the task's legacy reader.
 */
import { z } from 'zod';
import { INSTANCE_TASKS, type InstanceStatus as Status, type InstanceTask } from '@console/contract';
import type { Tx } from '../../db/client.js';
import type { ComputeDriver, DriverEvent } from '../../drivers/compute/types.js';
import type { Snapshot } from '../catalogue/index.js';
import type { InstanceRow } from './service.js';

/** A task with its parameter, encoded: what beginTask writes into pendingAction. */
export interface TaskStart {
  task: InstanceTask;
  param: string;
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
    return { task: this.task, param: JSON.stringify(z.encode(this.schema, value)) };
  }

  read(text: string): P {
    return text.startsWith('{') ? z.decode(this.schema, JSON.parse(text)) : this.legacy(text);
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
  /** Sends the task to the driver under `opId` (the driver dedupes by it). */
  submit(driver: ComputeDriver, opId: string, row: InstanceRow, param: P): Promise<void>;
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

/** The task in a pendingAction "task:statusBefore:param", read by its handler; null for an action. */
export function pendingTaskOf(row: Pick<InstanceRow, 'pendingAction'>, handlers: TaskHandlers): PendingTask | null {
  const [name = '', before, ...rest] = row.pendingAction?.split(':') ?? [];
  if (!isTask(name)) return null;
  const handler = handlers[name];
  return { handler, before: (before as Status) ?? 'Stopped', param: handler.param.read(rest.join(':')) };
}

/** The pendingAction of a task begun from `before`. */
export function pendingActionOf(start: TaskStart, before: Status): string {
  return `${start.task}:${before}:${start.param}`;
}
