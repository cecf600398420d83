/**
 * What the driver is asked to create (issue 30 §1): the catalogue image's OCI reference goes with the
 * machine, so that a real host boots the image that was sold; a demonstration image without one asks
 * for none (the host's own system).
 */
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../../test/harness.js';
import { DELAYS, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';
import type { MachineSpec } from '../../drivers/compute/types.js';

describe('the machine spec of a new instance', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });
  const specOf = async (id: string) => {
    await k.settle(DELAYS.create);
    const machine = (await sim.overview()).machines.find((m) => m.instanceId === id);
    return machine!.spec as MachineSpec;
  };

  it('names the OCI image of the catalogue image it was sold with, and none for a demonstration image', async () => {
    const u = await k.fundedUser('50');
    const pytorch = await k.running(u.token, { extra: { imageId: 'pytorch-1.13-cpu' } });
    expect(await specOf(pytorch.id)).toMatchObject({ imageId: 'pytorch-1.13-cpu', imageRef: 'console/pytorch:1.13.1-cpu' });
    const demo = await k.running(u.token);
    expect(await specOf(demo.id)).toMatchObject({ imageId: 'pytorch-2.3-cu121', imageRef: null });
  });
});
