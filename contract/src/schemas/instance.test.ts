import { describe, expect, it } from 'vitest';
import { InstanceStatus, type InstanceStatus as Status } from '../enums.js';
import {
  INSTANCE_ACTIONS,
  INSTANCE_TASKS,
  INSTANCE_TRANSITIONS,
  actionTarget,
  allowedActions,
  allowedTasks,
  canAct,
  canRunTask,
  migrateInstanceRequestSchema,
  outcomeTarget,
  taskStatus,
  type InstanceAction,
} from './instance.js';

/** The table a user would draw: which buttons work in which status. */
const EXPECTED: Record<InstanceAction, Status[]> = {
  start: ['Stopped', 'Shutdown'],
  startNoCard: ['Stopped', 'Shutdown'],
  stop: ['Running'],
  restart: ['Running'],
  release: ['Stopped', 'Shutdown', 'Failed'],
};

describe('instance state machine', () => {
  for (const action of INSTANCE_ACTIONS) {
    for (const status of InstanceStatus.values) {
      const legal = EXPECTED[action].includes(status);
      it(`${legal ? 'allows' : 'refuses'} ${action} when ${status}`, () => {
        expect(canAct(action, status)).toBe(legal);
        if (legal) expect(INSTANCE_TRANSITIONS[status]).toContain(actionTarget(action, false));
      });
    }
  }

  it('lets the system stop and release but not start or restart', () => {
    expect(canAct('stop', 'Running', 'system')).toBe(true);
    expect(canAct('release', 'Stopped', 'system')).toBe(true);
    expect(canAct('start', 'Stopped', 'system')).toBe(false);
    expect(canAct('restart', 'Running', 'system')).toBe(false);
  });

  it('stops a no-card instance through Shutdowning into Shutdown', () => {
    expect(actionTarget('stop', true)).toBe('Shutdowning');
    expect(actionTarget('stop', false)).toBe('Stopping');
    expect(outcomeTarget('stopped', 'Shutdowning')).toBe('Shutdown');
    expect(outcomeTarget('stopped', 'Stopping')).toBe('Stopped');
  });

  it('follows the creation path Pending → Starting → Running, or Failed', () => {
    expect(outcomeTarget('created', 'Pending')).toBe('Starting');
    expect(outcomeTarget('started', 'Starting')).toBe('Running');
    expect(outcomeTarget('createFailed', 'Pending')).toBe('Failed');
  });

  it('ignores a report that does not fit the status (a late or duplicated event)', () => {
    expect(outcomeTarget('started', 'Running')).toBeNull();
    expect(outcomeTarget('created', 'Stopped')).toBeNull();
    expect(outcomeTarget('stopped', 'Deleting')).toBeNull();
  });

  it('never leaves Deleting except by being destroyed, and Failed only by release', () => {
    expect(INSTANCE_TRANSITIONS.Deleting).toEqual([]);
    expect(INSTANCE_TRANSITIONS.Failed).toEqual(['Deleting']);
    expect(allowedActions('Deleting')).toEqual([]);
    expect(allowedActions('Pending')).toEqual([]);
  });

  it('moves a lost instance to Unknown and back to what the driver finds', () => {
    expect(INSTANCE_TRANSITIONS.Running).toContain('Unknown');
    expect(INSTANCE_TRANSITIONS.Unknown.sort()).toEqual(['Operating', 'Pending_Migrate', 'Running', 'Shutdown', 'Stopped']);
    expect(INSTANCE_TRANSITIONS.Pending).not.toContain('Unknown');
  });

  it('has no move into Pending or OperateFail (creation starts there; OperateFail is display-only)', () => {
    for (const s of InstanceStatus.values) {
      expect(INSTANCE_TRANSITIONS[s]).not.toContain('Pending');
      expect(INSTANCE_TRANSITIONS[s]).not.toContain('OperateFail');
    }
  });

  for (const task of INSTANCE_TASKS) {
    for (const status of InstanceStatus.values) {
      // Only a bandwidth change is applied to a running machine; every task may run on a stopped one.
      const legal = status === 'Stopped' || status === 'Shutdown' || (task === 'changeBandwidth' && status === 'Running');
      it(`${legal ? 'allows' : 'refuses'} the ${task} task when ${status}`, () => {
        expect(canRunTask(task, status)).toBe(legal);
        if (legal) expect(INSTANCE_TRANSITIONS[status]).toContain(taskStatus(task));
        // Nothing else starts a task (Unknown goes back to one that was under way; Running may go Operating for a bandwidth change).
        const sharedMove = status === 'Running' && taskStatus(task) === taskStatus('changeBandwidth');
        if (!legal && status !== 'Unknown' && !sharedMove) expect(INSTANCE_TRANSITIONS[status]).not.toContain(taskStatus(task));
      });
    }
  }

  it('brings a task back where it began: Operating → Running (a bandwidth change), Stopped or Shutdown, nowhere else', () => {
    expect(INSTANCE_TRANSITIONS.Operating.filter((s) => s !== 'Unknown').sort()).toEqual(['Running', 'Shutdown', 'Stopped']);
    expect(INSTANCE_TRANSITIONS.Running).toContain('Operating');
    expect(allowedTasks('Running')).toEqual(['changeBandwidth']);
    expect(allowedTasks('Operating')).toEqual([]);
    expect(allowedTasks('Shutdown')).toEqual(['saveImage', 'resizeDisk', 'migrate', 'changeBandwidth']);
  });

  it('migrates a stopped instance through Pending_Migrate: Stopped on the new host, or back where it was', () => {
    expect(taskStatus('migrate')).toBe('Pending_Migrate');
    expect(taskStatus('saveImage')).toBe('Operating');
    expect(INSTANCE_TRANSITIONS.Stopped).toContain('Pending_Migrate');
    expect(INSTANCE_TRANSITIONS.Shutdown).toContain('Pending_Migrate');
    expect(INSTANCE_TRANSITIONS.Pending_Migrate.sort()).toEqual(['Shutdown', 'Stopped', 'Unknown']);
    for (const s of ['Running', 'Starting', 'Stopping', 'Shutdowning', 'Restarting', 'Pending', 'Operating', 'Failed', 'Deleting', 'OperateFail'] as const) {
      expect(INSTANCE_TRANSITIONS[s]).not.toContain('Pending_Migrate');
      expect(canRunTask('migrate', s)).toBe(false);
    }
    // Nothing can be done to a machine while it moves, except what the driver reports.
    expect(allowedActions('Pending_Migrate')).toEqual([]);
    expect(allowedTasks('Pending_Migrate')).toEqual([]);
    expect(allowedTasks('Running')).not.toContain('migrate');
  });

  it('accepts a migration request with or without a host', () => {
    expect(migrateInstanceRequestSchema.parse(undefined)).toEqual({});
    expect(migrateInstanceRequestSchema.parse(null)).toEqual({});
    expect(migrateInstanceRequestSchema.parse({})).toEqual({});
    expect(migrateInstanceRequestSchema.parse({ hostId: ' h-1 ' })).toEqual({ hostId: 'h-1' });
    expect(migrateInstanceRequestSchema.safeParse({ hostId: '' }).success).toBe(false);
    expect(migrateInstanceRequestSchema.safeParse({ hostId: 5 }).success).toBe(false);
    expect(migrateInstanceRequestSchema.safeParse({ hostId: 'x'.repeat(65) }).success).toBe(false);
  });
});
