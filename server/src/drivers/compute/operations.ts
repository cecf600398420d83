/**
 * The submitting half of a compute driver that keeps its own operation log: every operation is
 * `submit(opId, instanceId, kind, params)`, a no-op for an id already submitted; the outcome comes
 * later as an event.
 */
import type { MachineSpec, OperationKind } from './types.js';

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
