/**
 * The compute agent protocol's part in 迁移 between hosts (agent.ts, agent-server.ts), over real
 * HTTP with signatures, on a driver that records what it is asked: the two halves reach the driver's
 * submitMigration as sent, GET /v1/operations answers how one ended (an export's artifact included)
 * and null for one never sent, their events pass the client's checks, an agent whose driver cannot
 * move machines refuses them, and a create's image reference reaches the agent.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentComputeDriver, ComputeAgentError } from './agent.js';
import { computeAgentServer } from './agent-server.js';
import type { ComputeDriver, DriverEvent, InstanceOp, MachineSpec, MigrationOp, OperationOutcome } from './types.js';

const KEY_ID = 'console-1';
const SECRET = 'a-shared-secret-of-at-least-32-characters';
const ID = '0d6f2f4e-8a7b-4c1d-9e2f-3a4b5c6d7e8f';
const DIGEST = `sha256:${'b'.repeat(64)}`;
const REF = `console-migrations/${ID}:0123456789abcdef`;

/** A driver that keeps what it was sent and ends every migration step at once, an export with its artifact. */
class RecordingDriver implements ComputeDriver {
  readonly name = 'recording';
  readonly sent: { opId: string; op: InstanceOp | MigrationOp }[] = [];
  readonly log: DriverEvent[] = [];
  async submit(opId: string, _instanceId: string, op: InstanceOp) {
    this.sent.push({ opId, op });
  }
  async status() {
    return null;
  }
  async diskUsage() {
    return new Map<string, number>();
  }
  async events(afterSeq: number) {
    return this.log.filter((e) => e.seq > afterSeq);
  }
  async submitMigration(opId: string, instanceId: string, op: MigrationOp) {
    this.sent.push({ opId, op });
    const migration = op.kind === 'exportMachine' ? { ref: op.params.migrationRef, digest: DIGEST, systemBytes: 10, dataBytes: 20 } : undefined;
    this.log.push({ seq: this.log.length + 1, opId, instanceId, kind: op.kind, ok: true, error: null, at: new Date(), ...(migration ? { migration } : {}) });
  }
  async operation(opId: string): Promise<OperationOutcome | null> {
    const e = this.log.find((x) => x.opId === opId);
    if (!e) return null;
    return { opId, instanceId: e.instanceId, kind: e.kind, state: 'done', error: null, ...(e.migration ? { migration: e.migration } : {}) };
  }
}

async function serve(driver: ComputeDriver): Promise<{ app: FastifyInstance; client: AgentComputeDriver }> {
  const app = Fastify({ logger: false });
  await app.register(computeAgentServer, { driver, keys: { [KEY_ID]: SECRET } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { app, client: new AgentComputeDriver({ baseUrl: `http://127.0.0.1:${port}`, keyId: KEY_ID, secret: SECRET, retries: 0 }) };
}

describe('the agent protocol for 迁移 between hosts', () => {
  const driver = new RecordingDriver();
  let agent: { app: FastifyInstance; client: AgentComputeDriver };
  beforeAll(async () => {
    agent = await serve(driver);
  });
  afterAll(async () => {
    await agent?.client.shutdown();
    await agent?.app.close();
  });

  it('carries an export and an import to the driver, and answers how each ended', async () => {
    const { client } = agent;
    await client.submitMigration('m:1#export', ID, { kind: 'exportMachine', params: { migrationRef: REF } });
    await client.submitMigration('m:1#import', ID, { kind: 'importMachine', params: { migrationRef: REF, digest: DIGEST, hostId: 'bj-b-1-h01' } });
    expect(driver.sent.map((s) => s.op)).toEqual([
      { kind: 'exportMachine', params: { migrationRef: REF } },
      { kind: 'importMachine', params: { migrationRef: REF, digest: DIGEST, hostId: 'bj-b-1-h01' } },
    ]);
    expect(await client.operation('m:1#export')).toEqual({
      opId: 'm:1#export',
      instanceId: ID,
      kind: 'exportMachine',
      state: 'done',
      error: null,
      migration: { ref: REF, digest: DIGEST, systemBytes: 10, dataBytes: 20 },
    });
    expect(await client.operation('never-sent')).toBeNull();
    const events = await client.events(0, 10);
    expect(events.map((e) => [e.kind, e.migration?.digest ?? null])).toEqual([
      ['exportMachine', DIGEST],
      ['importMachine', null],
    ]);
  });

  it('refuses an import pinned to something that is not a digest, and a migration ref that is not repository:tag', async () => {
    const { client } = agent;
    await expect(
      client.submitMigration('m:2#import', ID, { kind: 'importMachine', params: { migrationRef: REF, digest: 'latest', hostId: 'h' } }),
    ).rejects.toMatchObject({ kind: 'Rejected', status: 400 });
    await expect(client.submitMigration('m:2#export', ID, { kind: 'exportMachine', params: { migrationRef: '../etc' } })).rejects.toBeInstanceOf(
      ComputeAgentError,
    );
  });

  it('keeps a create’s OCI image reference on the wire (the agent boots the machine on that image)', async () => {
    const spec: MachineSpec = {
      hostId: 'bj-b-1-h01',
      regionId: 'bj-b',
      gpuCount: 1,
      cpu: 8,
      memoryGb: 32,
      imageId: 'pytorch',
      userImageRef: null,
      imageRef: 'console/pytorch:2',
      dataDiskGb: 50,
      bandwidthMbps: 0,
      sshUser: 'root',
      sshPassword: 'pw',
      jupyterToken: 'tok',
      appPort: null,
    };
    await agent.client.create('c:1', ID, spec);
    expect(driver.sent.at(-1)!.op).toMatchObject({ kind: 'create', params: { imageRef: 'console/pytorch:2' } });
  });

  it('an agent whose driver cannot move machines refuses the halves of a migration', async () => {
    const plain: ComputeDriver = {
      name: 'plain',
      submit: async () => {},
      status: async () => null,
      diskUsage: async () => new Map(),
      events: async () => [],
    };
    const other = await serve(plain);
    try {
      await expect(other.client.submitMigration('m:3#export', ID, { kind: 'exportMachine', params: { migrationRef: REF } })).rejects.toMatchObject({
        kind: 'Rejected',
        status: 400,
        message: expect.stringContaining('cannot move machines between hosts') as string,
      });
      expect(await other.client.operation('m:3#export')).toBeNull();
    } finally {
      await other.client.shutdown();
      await other.app.close();
    }
  });
});
