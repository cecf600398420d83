/**
 * The submitting half of a compute driver that keeps its own operation log: every operation is
 * `submit(opId, instanceId, kind, params)`, a no-op for an id already submitted; the outcome comes
 * later as an event.
 */
import type { DriverEvent, EventKind, MachinePower, MachineSpec, OperationKind } from './types.js';

export abstract class OperationLog {
  protected abstract submit(opId: string, instanceId: string, kind: OperationKind, params: object): Promise<void>;

  create(opId: string, instanceId: string, spec: MachineSpec) {
    return this.submit(opId, instanceId, 'create', spec);
  }
  start(opId: string, instanceId: string, opts: { gpu: boolean }) {
    return this.submit(opId, instanceId, 'start', opts);
  }
  stop(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, 'stop', {});
  }
  restart(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, 'restart', {});
  }
  destroy(opId: string, instanceId: string) {
    return this.submit(opId, instanceId, 'destroy', {});
  }
  resizeDisk(opId: string, instanceId: string, dataDiskGb: number) {
    return this.submit(opId, instanceId, 'resizeDisk', { dataDiskGb });
  }
  migrate(opId: string, instanceId: string, targetHostId: string) {
    return this.submit(opId, instanceId, 'migrate', { targetHostId });
  }
  changeBandwidth(opId: string, instanceId: string, bandwidthMbps: number) {
    return this.submit(opId, instanceId, 'changeBandwidth', { bandwidthMbps });
  }
  saveImage(opId: string, instanceId: string, imageRef: string) {
    return this.submit(opId, instanceId, 'saveImage', { imageRef });
  }
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
const POWER_NEEDED: Partial<Record<OperationKind | 'boot', MachinePower[]>> = {
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
export function stateRefusal(kind: OperationKind | 'boot', power: MachinePower): string | null {
  const allowed = POWER_NEEDED[kind];
  return allowed && !allowed.includes(power) ? `机器当前为 ${power}，不能执行 ${kind}` : null;
}
