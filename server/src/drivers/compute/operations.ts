/**
 * The operations of a compute driver as calls, each one `submit(opId, instanceId, op)`: what tests
 * and tools write; the console itself submits the InstanceOp it decided (service.ts).
 */
import type { DriverEvent, DriverOp, EventKind, InstanceOp, MachinePower, MachineSpec } from './types.js';

export abstract class OperationCalls {
  abstract submit(opId: string, instanceId: string, op: InstanceOp): Promise<void>;

  create(opId: string, instanceId: string, spec: MachineSpec) {
    return this.submit(opId, instanceId, { kind: 'create', params: spec });
  }
  start(opId: string, instanceId: string, opts: { gpu: boolean }) {
    return this.submit(opId, instanceId, { kind: 'start', params: { gpu: opts.gpu } });
  }
  stop(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, { kind: 'stop', params: {} });
  }
  restart(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, { kind: 'restart', params: {} });
  }
  destroy(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, { kind: 'destroy', params: {} });
  }
  resizeDisk(opId: string, instanceId: string, dataDiskGb: number) {
    return this.submit(opId, instanceId, { kind: 'resizeDisk', params: { dataDiskGb } });
  }
  migrate(opId: string, instanceId: string, targetHostId: string) {
    return this.submit(opId, instanceId, { kind: 'migrate', params: { targetHostId } });
  }
  changeBandwidth(opId: string, instanceId: string, bandwidthMbps: number) {
    return this.submit(opId, instanceId, { kind: 'changeBandwidth', params: { bandwidthMbps } });
  }
  saveImage(opId: string, instanceId: string, imageRef: string) {
    return this.submit(opId, instanceId, { kind: 'saveImage', params: { imageRef } });
  }
}

/** Every kind a driver runs (a record, so that a new kind does not compile until it is listed). */
const DRIVER_OP_KINDS: Record<DriverOp['kind'], true> = {
  create: true,
  start: true,
  stop: true,
  restart: true,
  destroy: true,
  resizeDisk: true,
  migrate: true,
  saveImage: true,
  changeBandwidth: true,
  boot: true,
};

/** An operation as a driver's operations table keeps it (`kind`, and `params` as the op had them). */
export function opOfRow(r: { kind: string; params: unknown }): DriverOp {
  if (!Object.hasOwn(DRIVER_OP_KINDS, r.kind)) throw new Error(`未知的操作类型 ${r.kind}`);
  // The row was written from a typed operation of this kind (the driver's submit): its params are that kind's.
  return { kind: r.kind, params: r.params } as DriverOp;
}

/** An event as a driver's events table keeps it (the kind's own fields in `data`). */
export function eventOfRow(r: {
  seq: number;
  opId: string | null;
  instanceId: string;
  kind: string;
  ok: boolean;
  error: string | null;
  at: Date;
  data: unknown;
}): DriverEvent {
  return {
    seq: r.seq,
    opId: r.opId,
    instanceId: r.instanceId,
    kind: r.kind as EventKind,
    ok: r.ok,
    error: r.error,
    at: r.at,
    ...(r.data as Pick<DriverEvent, 'access' | 'power' | 'imageSizeGb'>),
  };
}

/** What each operation needs the machine to be (create needs no machine, destroy any). */
const POWER_NEEDED: Partial<Record<DriverOp['kind'], MachinePower[]>> = {
  boot: ['creating'],
  start: ['stopped'],
  stop: ['running'],
  restart: ['running'],
  resizeDisk: ['stopped'],
  migrate: ['stopped'],
  saveImage: ['stopped'],
  changeBandwidth: ['running', 'stopped'],
};

/** Why a backend refuses an operation the machine's state does not allow; null when it may run. */
export function stateRefusal(kind: DriverOp['kind'], power: MachinePower): string | null {
  const allowed = POWER_NEEDED[kind];
  return allowed && !allowed.includes(power) ? `机器当前为 ${power}，不能执行 ${kind}` : null;
}
