/**
 * 迁移 between hosts of a fleet (issue 31 §2): the console's one `migrate` operation, when its target
 * host is another agent, is three operations on two agents —
 *
 *   1. `exportMachine` on the source (the machine stopped): its saved system layer, on its base image
 *      by digest, and its data disk as a second layer, pushed to the operator's registry under a
 *      migration ref; the machine is untouched;
 *   2. `importMachine` on the target: that artifact pulled (pinned by the digest the export reported),
 *      laid out as the same instance on the target host, its data disk an image of the size bought,
 *      the machine stopped;
 *   3. `destroy` on the source: its disks go.
 *
 * Then the migrate outcome is reported under the console's opId: ok — the machine lives on the target
 * host, stopped; failed — it is on the source host as it was (an import that fails removes what it
 * laid out; nothing was taken from the source before the import succeeded).
 *
 * No table of its own: every step has an opId derived from the console's (subOps), each agent
 * dedupes by opId and answers what became of it (ComputeDriver.operation), so running this again
 * with the same opId — the reconciler resending the migrate after a console restart, another
 * replica, a second submit — continues where the agents are, and never exports, imports or
 * destroys twice. Several runs at once for one opId are safe (each step is idempotent on the agents);
 * within one process they share one run.
 *
 * Why the registry and not object storage: the agents already hold REGISTRY_URL's login and skopeo
 * for saved images, and a machine's system is already an OCI layer on its base — blobs travel by
 * digest, so the base the target has (or the registry has) never moves again, and a push or pull cut
 * short resumes blob by blob. The object store (STORAGE_DRIVER) is the console's: the agents hold no
 * credentials for it, and on the default local store it is a folder of the console's host. The data
 * disk travels as a tar of its files (gzip): the ext4 image's empty blocks never move, and the target
 * makes a fresh image of the size bought and unpacks into it (local/migration.ts).
 */
import { createHash } from 'node:crypto';
import type { InstanceOp, MachineAccess, MigrationOp, OperationOutcome } from './types.js';

/** What the orchestration needs of one host's agent (AgentComputeDriver has it; so does the local driver, for tests). */
export interface MigrationAgent {
  submit(opId: string, instanceId: string, op: InstanceOp): Promise<void>;
  submitMigration(opId: string, instanceId: string, op: MigrationOp): Promise<void>;
  operation(opId: string): Promise<OperationOutcome | null>;
}

export interface MigrateAcrossHosts {
  /** The console's migrate opId (the outcome is reported under it). */
  opId: string;
  instanceId: string;
  /** The agent of the host the machine is on now. */
  source: MigrationAgent;
  /** The agent of the host it moves to, and that host's catalogue id (its folder there). */
  target: MigrationAgent;
  targetHostId: string;
}

/** The migrate operation's outcome, as the reconciler expects it of a `migrate` event (MigrateTask.onDone / onFailed). */
export interface MigrateOutcome {
  ok: boolean;
  error: string | null;
  /** Where the machine is reached on its new host (ok only). */
  access?: MachineAccess;
}

export interface MigrateDeps {
  /**
   * Records the outcome as the fleet's `migrate` event under the console's opId (ok: the instance's
   * host is now the target's). May be called again for the same opId by a later run (after a restart,
   * or by another replica): the same outcome, to be recorded once.
   */
  report(outcome: MigrateOutcome): Promise<void>;
  log?: (message: string) => void;
  /** Between two reads of a pending step (default 1 s). */
  pollMs?: number;
  /** How long an agent may stay unreachable before the step is given up (default 10 min; the source stays intact). */
  unreachableMs?: number;
}

/** The agents' opIds of one migration's steps (at most 128 characters on the wire: a long console opId is hashed). */
export function subOps(opId: string): { export: string; import: string; release: string; undo: string } {
  const base = opId.length <= 100 ? opId : `m-${createHash('sha256').update(opId).digest('hex').slice(0, 40)}`;
  return { export: `${base}#export`, import: `${base}#import`, release: `${base}#release`, undo: `${base}#undo` };
}

/** Whether an agent's opId is a step of a migration (its events are not the console's operations). */
export function isMigrationStep(opId: string | null): boolean {
  return !!opId && /#(export|import|release|undo)$/.test(opId);
}

/** Where a migration's artifact lives in the registry: one tag per migration of the instance. */
export function migrationRefOf(instanceId: string, opId: string): string {
  return `console-migrations/${instanceId}:${createHash('sha256').update(opId).digest('hex').slice(0, 32)}`;
}

/** The runs under way in this process, by opId. */
const running = new Map<string, Promise<MigrateOutcome>>();

/**
 * Moves the stopped machine of `m.instanceId` from `m.source` to `m.target` (see the file's comment)
 * and reports the outcome; resolves with it. Never rejects: whatever goes wrong is a failed migrate
 * (or, once the target has the machine, only logged: a source left to destroy does not undo it).
 */
export function migrateAcrossHosts(m: MigrateAcrossHosts, deps: MigrateDeps): Promise<MigrateOutcome> {
  let run = running.get(m.opId);
  if (!run) {
    run = (async () => {
      const outcome = await move(m, deps);
      await deps.report(outcome);
      return outcome;
    })().finally(() => running.delete(m.opId));
    running.set(m.opId, run);
  }
  return run;
}

async function move(m: MigrateAcrossHosts, deps: MigrateDeps): Promise<MigrateOutcome> {
  const ops = subOps(m.opId);
  const migrationRef = migrationRefOf(m.instanceId, m.opId);
  let stage = '导出';
  try {
    const exported = await step(m.source, ops.export, m.instanceId, { kind: 'exportMachine', params: { migrationRef } }, deps);
    if (exported.state === 'failed') return failed(`源主机导出失败：${exported.error ?? '未知原因'}`);
    if (!exported.migration) return failed('源主机未报告导出的数据');
    stage = '导入';
    const imported = await step(
      m.target,
      ops.import,
      m.instanceId,
      { kind: 'importMachine', params: { migrationRef, digest: exported.migration.digest, hostId: m.targetHostId } },
      deps,
    );
    if (imported.state === 'failed') return failed(`目标主机导入失败：${imported.error ?? '未知原因'}`);
    deps.log?.(
      `fleet: 实例 ${m.instanceId} 已导入目标主机 ${m.targetHostId}（系统层 ${mib(exported.migration.systemBytes)}，数据盘 ${mib(exported.migration.dataBytes)}）`,
    );
    stage = '清理源主机';
    await release(m, ops.release, deps);
    return { ok: true, error: null, ...(imported.access ? { access: imported.access } : {}) };
  } catch (e) {
    // Unreachable too long or refused: nothing was taken from the source before the import succeeded.
    if (stage === '清理源主机') return { ok: true, error: null };
    if (stage === '导入') await undoImport(m, ops.undo, deps);
    return failed(`${stage}未完成：${(e as Error).message}`);
  }
}

/**
 * An import given up while the target could not be reached may still run there later: a destroy sent
 * after it (the agent runs one machine's operations in order) removes what it lays out. Best effort:
 * a target still out of reach keeps that copy, which the log names.
 */
async function undoImport(m: MigrateAcrossHosts, opId: string, deps: MigrateDeps): Promise<void> {
  try {
    await m.target.submit(opId, m.instanceId, { kind: 'destroy', params: {} });
  } catch (e) {
    deps.log?.(`fleet: 实例 ${m.instanceId} 迁移未完成，目标主机 ${m.targetHostId} 上可能留有未完成的副本（${(e as Error).message}）`);
  }
}

/** The source's copy destroyed; a failure is logged only (the machine already lives on the target). */
async function release(m: MigrateAcrossHosts, opId: string, deps: MigrateDeps): Promise<void> {
  try {
    const done = await step(m.source, opId, m.instanceId, { kind: 'destroy', params: {} }, deps);
    if (done.state === 'failed') deps.log?.(`fleet: 实例 ${m.instanceId} 已迁出，但源主机删除旧磁盘失败：${done.error ?? '未知原因'}`);
  } catch (e) {
    deps.log?.(`fleet: 实例 ${m.instanceId} 已迁出，但源主机删除旧磁盘未完成：${(e as Error).message}`);
  }
}

/**
 * Submits the step (a no-op where the agent has it) and waits until it ended. An agent that cannot
 * be reached is asked again until `unreachableMs` has passed since it last answered; an agent that
 * forgot the step (null) is given it again.
 */
async function step(agent: MigrationAgent, opId: string, instanceId: string, op: InstanceOp | MigrationOp, deps: MigrateDeps): Promise<OperationOutcome> {
  const pollMs = deps.pollMs ?? 1000;
  const limit = deps.unreachableMs ?? 10 * 60_000;
  let answered = Date.now();
  let submitted = false;
  for (;;) {
    try {
      let known = await agent.operation(opId);
      if (!known && !submitted) {
        await (op.kind === 'exportMachine' || op.kind === 'importMachine' ? agent.submitMigration(opId, instanceId, op) : agent.submit(opId, instanceId, op));
        submitted = true;
        known = await agent.operation(opId);
      }
      answered = Date.now();
      if (known && known.state !== 'pending') return known;
      if (!known) submitted = false;
    } catch (e) {
      if (!transient(e) || Date.now() - answered > limit) throw e;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** A connection failure, timeout, 429 or 5xx of the agent (ComputeAgentError 'Unavailable'): worth asking again. */
function transient(e: unknown): boolean {
  return (e as { kind?: string }).kind === 'Unavailable';
}

function failed(error: string): MigrateOutcome {
  return { ok: false, error };
}

function mib(bytes: number): string {
  return `${Math.max(1, Math.round(bytes / 1024 ** 2))} MiB`;
}
