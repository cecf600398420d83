import { describe, expect, it } from 'vitest';
import type { InventoryService } from '../catalogue/inventory.js';
import type { ImageService } from '../images/service.js';
import type { UsageCharges } from '../orders/usage.js';
import type { Meter } from './billing.js';
import { ResizeDiskTask } from './disks.js';
import { MigrateTask } from './migrate.js';
import { SaveImageTask } from './save-image.js';
import { pendingActionOf, pendingTaskOf, type TaskHandlers } from './tasks.js';
import type { DowngradeRefunds } from './traffic-refund.js';
import { ChangeBandwidthTask } from './traffic.js';

// Reading and writing a parameter touches none of the handlers' services.
const handlers: TaskHandlers = {
  saveImage: new SaveImageTask({ images: {} as ImageService }),
  resizeDisk: new ResizeDiskTask({ usage: {} as UsageCharges }),
  changeBandwidth: new ChangeBandwidthTask({ meter: {} as Meter, refunds: {} as DowngradeRefunds }),
  migrate: new MigrateTask({ inventory: {} as InventoryService }),
};
const read = (pendingAction: string) => pendingTaskOf({ pendingAction }, handlers);

describe('task parameters', () => {
  it('are written as JSON and read back with their types', () => {
    const action = pendingActionOf(handlers.changeBandwidth.param.start({ mbps: 20, orderId: null, hourly: 1500n }), 'Running');
    expect(action).toBe('changeBandwidth:Running:{"mbps":20,"orderId":null,"hourly":"1500"}');
    expect(read(action)).toMatchObject({ before: 'Running', param: { mbps: 20, orderId: null, hourly: 1500n } });
    const resize = pendingActionOf(handlers.resizeDisk.param.start({ newGb: 150, orderId: 'o-1' }), 'Stopped');
    expect(read(resize)?.param).toEqual({ newGb: 150, orderId: 'o-1' });
  });

  it('still reads what an instance stored before parameters were JSON', () => {
    expect(read('saveImage:Stopped:6f1c2a9e-0000-4000-8000-000000000001')?.param).toEqual({ imageId: '6f1c2a9e-0000-4000-8000-000000000001' });
    expect(read('resizeDisk:Shutdown:150')?.param).toEqual({ newGb: 150, orderId: null });
    expect(read('resizeDisk:Stopped:150:o-1')?.param).toEqual({ newGb: 150, orderId: 'o-1' });
    expect(read('changeBandwidth:Running:10::750')?.param).toEqual({ mbps: 10, orderId: null, hourly: 750n });
    expect(read('changeBandwidth:Stopped:10:o-2:0')?.param).toEqual({ mbps: 10, orderId: 'o-2', hourly: 0n });
    expect(read('migrate:Stopped:bj-b-h2')).toMatchObject({ before: 'Stopped', param: { hostId: 'bj-b-h2' } });
  });

  it('refuses a parameter its schema does not allow, and is no task for an action', () => {
    expect(() => read('resizeDisk:Stopped:{"newGb":"big","orderId":null}')).toThrow();
    expect(read('stop:Running')).toBeNull();
    expect(read('create:Pending')).toBeNull();
  });
});
