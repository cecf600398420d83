import { describe, expect, it } from 'vitest';
import { InstanceStatus, type InstanceStatus as Status } from '../enums.js';
import { INSTANCE_ACTIONS, INSTANCE_TRANSITIONS, actionTarget, allowedActions, canAct, outcomeTarget, type InstanceAction } from './instance.js';

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
    expect(INSTANCE_TRANSITIONS.Unknown.sort()).toEqual(['Running', 'Shutdown', 'Stopped']);
    expect(INSTANCE_TRANSITIONS.Pending).not.toContain('Unknown');
  });

  it('has no move into Pending or OperateFail (creation starts there; OperateFail is display-only)', () => {
    for (const s of InstanceStatus.values) {
      expect(INSTANCE_TRANSITIONS[s]).not.toContain('Pending');
      expect(INSTANCE_TRANSITIONS[s]).not.toContain('OperateFail');
    }
  });
});
