/** A local machine's spec for the driver's tests: a small CPU machine on host-a, with what each test changes. */
import type { MachineSpec } from '../src/drivers/compute/types.js';

export const machineSpec = (extra: Partial<MachineSpec> = {}): MachineSpec => ({
  hostId: 'host-a',
  regionId: 'local',
  gpuCount: 0,
  cpu: 2,
  memoryGb: 2,
  imageId: null,
  userImageRef: null,
  dataDiskGb: 1,
  bandwidthMbps: 0,
  sshUser: 'root',
  sshPassword: 'pw',
  jupyterToken: 'tok',
  appPort: null,
  ...extra,
});
