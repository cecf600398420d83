import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { describe, expect, it } from 'vitest';
import { migrationsFolder } from '../../db/client.js';
import type { InventoryService } from '../catalogue/inventory.js';
import type { ImageService } from '../images/service.js';
import type { UsageCharges } from '../orders/usage.js';
import type { Meter } from './meter.js';
import { ResizeDiskTask } from './disks.js';
import { MigrateTask } from './migrate.js';
import { SaveImageTask } from './save-image.js';
import type { InstanceStatus } from '@console/contract';
import { instances, type PendingOpKind } from './schema.js';
import { pendingOpColumns, pendingTaskOf, type TaskHandlers, type TaskStart } from './tasks.js';
import type { DowngradeRefunds } from './traffic-refund.js';
import { ChangeBandwidthTask } from './traffic.js';

// Reading and writing a parameter touches none of the handlers' services.
const handlers: TaskHandlers = {
  saveImage: new SaveImageTask({ images: {} as ImageService }),
  resizeDisk: new ResizeDiskTask({ usage: {} as UsageCharges }),
  changeBandwidth: new ChangeBandwidthTask({ meter: {} as Meter, refunds: {} as DowngradeRefunds }),
  migrate: new MigrateTask({ inventory: {} as InventoryService }),
};
const read = (kind: PendingOpKind, from: InstanceStatus, params: unknown = null) =>
  pendingTaskOf({ pendingOpKind: kind, pendingOpFrom: from, pendingOpParams: params }, handlers);
const columns = (start: TaskStart, from: InstanceStatus) => pendingOpColumns({ opId: 'op-1', kind: start.task, from, params: start.param, at: new Date(0) });

describe('task parameters', () => {
  it('are written as JSON and read back with their types', () => {
    const op = columns(handlers.changeBandwidth.param.start({ mbps: 20, orderId: null, hourly: 1500n }), 'Running');
    expect(op).toMatchObject({ pendingOpKind: 'changeBandwidth', pendingOpFrom: 'Running', pendingOpParams: { mbps: 20, orderId: null, hourly: '1500' } });
    expect(JSON.stringify(op.pendingOpParams)).toBe('{"mbps":20,"orderId":null,"hourly":"1500"}');
    expect(pendingTaskOf(op, handlers)).toMatchObject({ before: 'Running', param: { mbps: 20, orderId: null, hourly: 1500n } });
    const resize = columns(handlers.resizeDisk.param.start({ newGb: 150, orderId: 'o-1' }), 'Stopped');
    expect(pendingTaskOf(resize, handlers)?.param).toEqual({ newGb: 150, orderId: 'o-1' });
  });

  // Migration 0039 keeps such a parameter as a JSON string (pending-op-migration.test.ts).
  it('still reads what an instance stored before parameters were JSON', () => {
    expect(read('saveImage', 'Stopped', '6f1c2a9e-0000-4000-8000-000000000001')?.param).toEqual({ imageId: '6f1c2a9e-0000-4000-8000-000000000001' });
    expect(read('resizeDisk', 'Shutdown', '150')?.param).toEqual({ newGb: 150, orderId: null });
    expect(read('resizeDisk', 'Stopped', '150:o-1')?.param).toEqual({ newGb: 150, orderId: 'o-1' });
    expect(read('changeBandwidth', 'Running', '10::750')?.param).toEqual({ mbps: 10, orderId: null, hourly: 750n });
    expect(read('changeBandwidth', 'Stopped', '10:o-2:0')?.param).toEqual({ mbps: 10, orderId: 'o-2', hourly: 0n });
    expect(read('migrate', 'Stopped', 'bj-b-h2')).toMatchObject({ before: 'Stopped', param: { hostId: 'bj-b-h2' } });
  });

  it('refuses a parameter its schema does not allow, and is no task for an action', () => {
    expect(() => read('resizeDisk', 'Stopped', { newGb: 'big', orderId: null })).toThrow();
    expect(read('stop', 'Running')).toBeNull();
    expect(read('create', 'Pending')).toBeNull();
  });
});

/** A migrations folder with the migrations up to `lastIdx` only: the console before an upgrade. */
function migrationsUpTo(lastIdx: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'migrations-'));
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: { idx: number; tag: string }[] };
  const entries = journal.entries.filter((e) => e.idx <= lastIdx);
  mkdirSync(path.join(dir, 'meta'));
  writeFileSync(path.join(dir, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  for (const e of entries) copyFileSync(path.join(migrationsFolder, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  return dir;
}

describe('operations in flight when the console is upgraded (migration 0039)', () => {
  it('are carried into the pending operation columns, and their tasks read as before', async () => {
    const before = migrationsUpTo(38);
    const client = new PGlite();
    try {
      const db = drizzle(client);
      await migrate(db, { migrationsFolder: before });
      // The rows stand alone: no owner in users.
      await client.exec(`set session_replication_role = replica`);
      const inFlight: [string, string | null, string | null][] = [
        ['00000000-0000-4000-8000-000000000001', 'create:a:boot', 'create:Pending'],
        ['00000000-0000-4000-8000-000000000002', 'stop:b:1', 'stop:Running'],
        ['00000000-0000-4000-8000-000000000003', 'changeBandwidth:c', 'changeBandwidth:Running:{"mbps":20,"orderId":null,"hourly":"1500"}'],
        ['00000000-0000-4000-8000-000000000004', 'resizeDisk:d', 'resizeDisk:Stopped:150:o-1'],
        ['00000000-0000-4000-8000-000000000005', 'migrate:e', 'migrate:Shutdown:bj-b-h2'],
        ['00000000-0000-4000-8000-000000000006', null, null],
      ];
      for (const [id, opId, action] of inFlight)
        await client.query(
          `insert into instances (id, user_id, created_by, category, name, status, region_id, cpu, memory_gb, data_disk_gb, free_data_disk_gb, cycle,
             hourly_price, no_card_hourly_price, disk_daily_price, ssh_password_enc, jupyter_token, created_at, updated_at, pending_op_id, pending_action)
           values ($1, $1, $1, 'Gpu', 'x', 'Operating', 'bj', 1, 1, 50, 50, 'Usage', 0, 0, 0, 'p', 't', now(), now(), $2, $3)`,
          [id, opId, action],
        );
      await migrate(db, { migrationsFolder });
      const rows = await db
        .select({
          pendingOpId: instances.pendingOpId,
          pendingOpKind: instances.pendingOpKind,
          pendingOpFrom: instances.pendingOpFrom,
          pendingOpParams: instances.pendingOpParams,
          pendingOpBooting: instances.pendingOpBooting,
        })
        .from(instances)
        .orderBy(instances.id);
      expect(rows).toEqual([
        { pendingOpId: 'create:a', pendingOpKind: 'create', pendingOpFrom: 'Pending', pendingOpParams: null, pendingOpBooting: true },
        { pendingOpId: 'stop:b:1', pendingOpKind: 'stop', pendingOpFrom: 'Running', pendingOpParams: null, pendingOpBooting: false },
        {
          pendingOpId: 'changeBandwidth:c',
          pendingOpKind: 'changeBandwidth',
          pendingOpFrom: 'Running',
          pendingOpParams: { mbps: 20, orderId: null, hourly: '1500' },
          pendingOpBooting: false,
        },
        { pendingOpId: 'resizeDisk:d', pendingOpKind: 'resizeDisk', pendingOpFrom: 'Stopped', pendingOpParams: '150:o-1', pendingOpBooting: false },
        { pendingOpId: 'migrate:e', pendingOpKind: 'migrate', pendingOpFrom: 'Shutdown', pendingOpParams: 'bj-b-h2', pendingOpBooting: false },
        { pendingOpId: null, pendingOpKind: null, pendingOpFrom: null, pendingOpParams: null, pendingOpBooting: false },
      ]);
      expect(pendingTaskOf(rows[2]!, handlers)).toMatchObject({ before: 'Running', param: { mbps: 20, orderId: null, hourly: 1500n } });
      expect(pendingTaskOf(rows[3]!, handlers)?.param).toEqual({ newGb: 150, orderId: 'o-1' });
      expect(pendingTaskOf(rows[4]!, handlers)).toMatchObject({ before: 'Shutdown', param: { hostId: 'bj-b-h2' } });
    } finally {
      await client.close();
      rmSync(before, { recursive: true, force: true });
    }
  }, 300_000);
});
