/**
 * The orchestration of a move between two agents (fleet-migrate.ts) against agents that answer as
 * told: the steps go to the right host in order, the import is pinned to what the export reported,
 * a failure before the import succeeded leaves the source alone, a run after a restart continues
 * where the agents are, an agent out of reach for a moment is asked again. The real agents' halves
 * are local/migration.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { ComputeAgentError } from './agent.js';
import { migrateAcrossHosts, migrationRefOf, subOps, type MigrateOutcome, type MigrationAgent } from './fleet-migrate.js';
import type { InstanceOp, MigrationOp, OperationOutcome } from './types.js';

const ID = '7f1d7f8e-0d1a-4c55-9a7e-0c2f1b8a9d01';
const DIGEST = `sha256:${'a'.repeat(64)}`;

type Ending = Pick<OperationOutcome, 'state' | 'error' | 'migration' | 'access'>;

/** An agent whose operations end as `endings` says (by kind), after `polls` reads pending; what it was sent is kept. */
class Agent implements MigrationAgent {
  readonly sent: { opId: string; op: InstanceOp | MigrationOp }[] = [];
  private readonly ops = new Map<string, { kind: OperationOutcome['kind']; reads: number }>();
  /** Reads that fail as an agent out of reach does, before it answers again. */
  unreachableReads = 0;

  constructor(
    private readonly endings: Partial<Record<string, Ending>>,
    private readonly polls = 1,
  ) {}

  submit(opId: string, _instanceId: string, op: InstanceOp): Promise<void> {
    return this.accept(opId, op);
  }
  submitMigration(opId: string, _instanceId: string, op: MigrationOp): Promise<void> {
    return this.accept(opId, op);
  }
  async operation(opId: string): Promise<OperationOutcome | null> {
    if (this.unreachableReads > 0) {
      this.unreachableReads--;
      throw new ComputeAgentError('Unavailable', 'controller unreachable (ECONNREFUSED)');
    }
    const op = this.ops.get(opId);
    if (!op) return null;
    const base = { opId, instanceId: ID, kind: op.kind, error: null };
    if (op.reads++ < this.polls) return { ...base, state: 'pending' };
    return { ...base, state: 'done', ...this.endings[op.kind] };
  }
  private async accept(opId: string, op: InstanceOp | MigrationOp) {
    this.sent.push({ opId, op });
    if (!this.ops.has(opId)) this.ops.set(opId, { kind: op.kind, reads: 0 });
  }
  kinds(): string[] {
    return this.sent.map((s) => s.op.kind);
  }
}

const exported: Ending = { state: 'done', error: null, migration: { ref: 'r', digest: DIGEST, systemBytes: 1024, dataBytes: 2048 } };
const imported: Ending = { state: 'done', error: null, access: { sshHost: 'ssh.example.com', sshPort: 2222 } };

function migrate(source: Agent, target: Agent, opId = 'migrate:1') {
  const reports: MigrateOutcome[] = [];
  const logs: string[] = [];
  const run = migrateAcrossHosts(
    { opId, instanceId: ID, source, target, targetHostId: 'host-1' },
    { report: async (o) => void reports.push(o), log: (m) => logs.push(m), pollMs: 1, unreachableMs: 200 },
  );
  return { run, reports, logs };
}

describe('migrateAcrossHosts', () => {
  it('exports on the source, imports what was exported on the target, then destroys the source, and reports success', async () => {
    const source = new Agent({ exportMachine: exported, destroy: { state: 'done', error: null } });
    const target = new Agent({ importMachine: imported });
    const { run, reports } = migrate(source, target);
    expect(await run).toEqual({ ok: true, error: null, access: { sshHost: 'ssh.example.com', sshPort: 2222 } });
    expect(reports).toEqual([await run]);
    expect(source.kinds()).toEqual(['exportMachine', 'destroy']);
    expect(target.sent).toEqual([
      {
        opId: subOps('migrate:1').import,
        op: { kind: 'importMachine', params: { migrationRef: migrationRefOf(ID, 'migrate:1'), digest: DIGEST, hostId: 'host-1' } },
      },
    ]);
  });

  it('a failed export or import leaves the source alone and reports why', async () => {
    const refused = new Agent({ exportMachine: { state: 'failed', error: '机器当前为 running，请先关机再迁移' } });
    const untouched = new Agent({});
    expect(await migrate(refused, untouched).run).toEqual({ ok: false, error: '源主机导出失败：机器当前为 running，请先关机再迁移' });
    expect(untouched.sent).toEqual([]);

    const source = new Agent({ exportMachine: exported });
    const target = new Agent({ importMachine: { state: 'failed', error: '磁盘空间不足' } });
    expect(await migrate(source, target).run).toEqual({ ok: false, error: '目标主机导入失败：磁盘空间不足' });
    expect(source.kinds()).toEqual(['exportMachine']);
  });

  it('once the target has the machine, a source that cannot destroy its copy does not undo the move (it is logged)', async () => {
    const source = new Agent({ exportMachine: exported, destroy: { state: 'failed', error: '删除磁盘失败' } });
    const { run, logs } = migrate(source, new Agent({ importMachine: imported }));
    expect(await run).toMatchObject({ ok: true });
    expect(logs.some((l) => l.includes('删除旧磁盘失败：删除磁盘失败'))).toBe(true);
  });

  it('run again with the same opId (a console restart) it continues where the agents are: nothing is exported or imported twice', async () => {
    const source = new Agent({ exportMachine: exported, destroy: { state: 'done', error: null } });
    const target = new Agent({ importMachine: imported }, 3);
    // The first console submitted the export, and the import, then went away.
    await source.submitMigration(subOps('m:2').export, ID, { kind: 'exportMachine', params: { migrationRef: migrationRefOf(ID, 'm:2') } });
    await target.submitMigration(subOps('m:2').import, ID, {
      kind: 'importMachine',
      params: { migrationRef: migrationRefOf(ID, 'm:2'), digest: DIGEST, hostId: 'host-1' },
    });
    const { run } = migrate(source, target, 'm:2');
    expect(await run).toMatchObject({ ok: true });
    expect(source.kinds()).toEqual(['exportMachine', 'destroy']);
    expect(target.kinds()).toEqual(['importMachine']);
  });

  it('two runs at once in one process share one; an agent out of reach for a moment is asked again, for too long the move fails', async () => {
    const source = new Agent({ exportMachine: exported, destroy: { state: 'done', error: null } });
    source.unreachableReads = 3;
    const target = new Agent({ importMachine: imported });
    const first = migrate(source, target, 'm:3');
    const second = migrate(source, target, 'm:3');
    expect(await second.run).toMatchObject({ ok: true });
    expect(first.reports).toHaveLength(1);
    expect(second.reports).toHaveLength(0);

    const gone = new Agent({});
    gone.unreachableReads = Number.MAX_SAFE_INTEGER;
    const outcome = await migrate(gone, new Agent({}), 'm:4').run;
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/^导出未完成：controller unreachable/);
  });

  it('an import given up while the target is out of reach is followed there by a destroy, so that a late import leaves nothing behind', async () => {
    const source = new Agent({ exportMachine: exported });
    const target = new Agent({ importMachine: imported });
    target.unreachableReads = Number.MAX_SAFE_INTEGER;
    const outcome = await migrate(source, target, 'm:5').run;
    expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/^导入未完成：/) as string });
    expect(target.sent).toEqual([{ opId: subOps('m:5').undo, op: { kind: 'destroy', params: {} } }]);
    expect(source.kinds()).toEqual(['exportMachine']);
  });

  it('keeps the agents’ opIds within the protocol’s 128 characters', () => {
    const long = subOps(`migrate:${'x'.repeat(200)}`);
    for (const opId of Object.values(long)) expect(opId.length).toBeLessThanOrEqual(128);
    expect(subOps('migrate:1')).toEqual({ export: 'migrate:1#export', import: 'migrate:1#import', release: 'migrate:1#release', undo: 'migrate:1#undo' });
  });
});
