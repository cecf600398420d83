/**
 * The production compute driver (DESIGN.md: "compute | simulated fleet | Kubernetes or host
 * agents"): it talks to a host-agent controller over HTTPS. The controller owns the hosts; this
 * driver only submits operations, reads machine status, disk usage and the running machines'
 * figures, and pages through the controller's event stream, exactly as the ComputeDriver interface
 * (types.ts) describes.
 * `agent-server.ts` serves the same protocol on top of any ComputeDriver (the simulated fleet), so
 * the protocol is proven end to end and staging can run a stand-alone controller
 * (`npm run compute-agent -w server`).
 *
 * ## Wire protocol, version 1
 *
 * JSON (UTF-8) over HTTPS to a base URL (`COMPUTE_AGENT_URL`, e.g. `https://agent.example.com` or
 * `https://ctl.example.com/gpu`; plain http only to a loopback address, since create carries the
 * machine's SSH password). Paths below are relative to the base URL. Dates are ISO 8601 strings.
 *
 *   POST /v1/operations        { opId, kind, instanceId, params }    (instanceId: the console's UUID;
 *                                                                    opId: 1–128 characters)
 *        kind / params:  create     MachineSpec (types.ts)
 *                        start      { gpu: boolean }
 *                        stop, restart, destroy   {}
 *                        resizeDisk { dataDiskGb: number }
 *                        migrate    { targetHostId: string }
 *                        saveImage  { imageRef: string }
 *                        changeBandwidth { bandwidthMbps: number }   (live: running or stopped)
 *                        exportMachine { migrationRef: string }   a move to another host's agent, first half
 *                                   (fleet-migrate.ts): the stopped machine's system layer and data disk
 *                                   pushed to the operator's registry as migrationRef, the machine untouched;
 *                                   its event carries migration { ref, digest, systemBytes, dataBytes }
 *                        importMachine { migrationRef, digest, hostId }   second half, on the target: that
 *                                   artifact (pinned by digest) laid out as the same instance on hostId,
 *                                   stopped; its event carries access
 *        → 202 { opId }            accepted; the outcome arrives later as events
 *        → 200 { opId }            the same opId with the same content again: nothing new happens
 *        → 409 { error: "conflict", message }   the opId was used for a different operation
 *                                  (content = kind + instanceId + params, compared key-order-blind)
 *   GET  /v1/operations/:opId   (what fleet-migrate.ts follows each step by)
 *        → 200 { opId, instanceId, kind, state: "pending" | "done" | "failed", error, migration?, access? }
 *        → 404 { error: "not_found", message }   never accepted here (or the agent keeps no operations)
 *   GET  /v1/machines/:instanceId
 *        → 200 { power, gpu, lost, hostId, pendingOpId }   (MachineStatus)
 *        → 404 { error: "not_found", message }   the controller never heard of the machine
 *        → 400 when instanceId is not a UUID
 *   POST /v1/disk-usage        { instanceIds: string[] }        (at most 500 ids)
 *        → 200 { usage: { [instanceId]: usedGb } }   unknown machines are left out
 *   POST /v1/samples           { instanceIds?: string[] }       (at most 500 ids; absent: every running machine)
 *        → 200 { samples: { [instanceId]: MachineSample } }   (types.ts: cpuPercent, memory, disks, network
 *          rates, gpus [{ utilisation, memoryUsedMb, memoryTotalMb }], gpuUnavailable, simulated; a figure
 *          the host does not know is null) running machines only; rates since the agent's previous sample
 *        → 404 the agent samples nothing (an older agent): the console draws no figures for its machines
 *   GET  /v1/events?after=<seq>&limit=<n>          (seq ≥ 0; 1 ≤ n ≤ 1000)
 *        → 200 { events: [{ seq, opId, instanceId, kind, ok, error, access?, power?,
 *                           imageSizeGb?, at }] }    seq strictly increasing, oldest first; an
 *          event with seq n is only served once every event before n is visible.
 *   GET  /v1/host                                   (the heartbeat; host-report.ts)
 *        → 200 { hostId, agentVersion, protocolVersion, capacity, health, running }
 *          hostId: the catalogue host the agent is (COMPUTE_AGENT_HOST_ID); capacity: the host's
 *          offer (cpus, memoryGb, diskGb, gpus [{ model, memoryMb, count }], images, hostOs, held)
 *          or null (a simulated controller); health: { sandboxes: { ok, why }, diskFreeGb,
 *          gpus: { ok, why } }; running: the ids of the machines running now
 *        → 404 the agent reports no host (an older agent)
 *
 * Errors are `{ error, message }` with error one of bad_request (400), unauthorized (401),
 * not_found (404), conflict (409), internal (5xx).
 *
 * Every request is signed with a shared secret:
 *
 *   Authorization: HMAC-SHA256 keyId=<id>, ts=<unix seconds>, sig=<base64>
 *   sig = base64(HMAC-SHA256(secret, METHOD "\n" PATH?QUERY "\n" ts "\n" hex(SHA-256(body))))
 *
 * METHOD is upper case; PATH?QUERY is the request target exactly as sent (including any path of
 * the base URL, `?query` only when there is one); body is the exact bytes sent (empty for GET).
 * The agent answers 401 to a missing or malformed header, an unknown keyId, a ts more than 5
 * minutes away from its clock (a replayed request) or a wrong signature, and does nothing else.
 * The ways into the machines (shells, their service sockets) are the channel of agent-channel.ts,
 * signed the same way.
 * Within the 5 minutes a replay is harmless: every request is a read or an idempotent operation.
 *
 * Client behaviour: each attempt times out after 10 s. Every request of the protocol is
 * idempotent (operations by opId), so a connection failure, 429, 502, 503 or 504 is retried twice
 * with a short backoff; a timeout is not retried (the reconciler resends an operation that never got
 * an outcome after COMPUTE_OP_RETRY_SECONDS, and reads happen again at the next tick). Any other
 * answer, or an answer that does not match the protocol, fails loudly with a ComputeAgentError.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ChannelSockets, ChannelState, appStateResponse, bridgeCommand, channelMachinesResponse, type ChannelMachines } from './agent-channel.js';
import { OperationCalls } from './operations.js';
import type { MigrationOp, OperationOutcome } from './types.js';
import type {
  ComputeDriver,
  DriverEvent,
  FileStoreMount,
  InstanceOp,
  MachineApp,
  MachineSample,
  MachineService,
  MachineStatus,
  ShellCommand,
} from './types.js';

export const AGENT_MAX_SKEW_MS = 5 * 60 * 1000;
export const AGENT_MAX_DISK_USAGE_IDS = 500;
export const AGENT_MAX_EVENTS = 1000;

// --- signatures (both sides) ------------------------------------------------------------------

export function sha256Hex(body: string | Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

export function agentSignature(secret: string, method: string, target: string, ts: number, body: string | Buffer): string {
  return createHmac('sha256', secret)
    .update(`${method.toUpperCase()}\n${target}\n${ts}\n${sha256Hex(body)}`)
    .digest('base64');
}

export function agentAuthorization(keyId: string, secret: string, method: string, target: string, ts: number, body: string | Buffer): string {
  return `HMAC-SHA256 keyId=${keyId}, ts=${ts}, sig=${agentSignature(secret, method, target, ts, body)}`;
}

const AUTH_RE = /^HMAC-SHA256 keyId=([A-Za-z0-9._-]{1,64}), ts=(\d{1,12}), sig=([A-Za-z0-9+/]+={0,2})$/;

/** Checks a request's Authorization header; returns why it is refused, or null when it is good. */
export function verifyAgentRequest(
  req: { method: string; target: string; authorization: string | undefined; body: string | Buffer },
  keys: Readonly<Record<string, string>>,
  now: Date,
  maxSkewMs = AGENT_MAX_SKEW_MS,
): string | null {
  const m = AUTH_RE.exec(req.authorization ?? '');
  if (!m) return 'missing or malformed Authorization header (HMAC-SHA256 keyId=…, ts=…, sig=…)';
  const [, keyId, tsText, sig] = m as unknown as [string, string, string, string];
  const secret = Object.hasOwn(keys, keyId) ? keys[keyId] : undefined;
  if (!secret) return `unknown keyId ${keyId}`;
  const ts = Number(tsText);
  if (Math.abs(now.getTime() - ts * 1000) > maxSkewMs) return 'request timestamp is more than 5 minutes away from the agent clock';
  const expected = Buffer.from(agentSignature(secret, req.method, req.target, ts, req.body), 'base64');
  const given = Buffer.from(sig, 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'signature does not match';
  return null;
}

// --- messages (both sides) --------------------------------------------------------------------

const id = z.string().min(1).max(128);
/** The console's instance ids are UUIDs. */
export const instanceIdSchema = z.guid({ error: 'instanceId must be a UUID' });
export const machineSpecSchema = z.object({
  hostId: z.string().max(128).nullable(),
  regionId: z.string().min(1).max(128),
  gpuCount: z.number().int().min(0).max(64),
  cpu: z.number().int().min(0).max(1024),
  memoryGb: z.number().int().min(0).max(65536),
  imageId: z.string().max(256).nullable(),
  userImageRef: z.string().max(256).nullable(),
  /** The OCI image the catalogue image names (types.ts): without it an agent would boot the host's own system. */
  imageRef: z.string().max(256).nullable().optional(),
  dataDiskGb: z.number().int().min(0).max(1_000_000),
  systemDiskGb: z.number().int().min(1).max(1_000_000).optional(),
  bandwidthMbps: z.number().int().min(0).max(100_000).default(0),
  sshUser: z.string().min(1).max(64),
  sshPassword: z.string().min(1).max(256),
  jupyterToken: z.string().max(256),
  appPort: z.number().int().min(1).max(65535).nullable(),
  desktop: z.boolean().default(false),
  fileStoreId: z.string().max(128).optional(),
});
const empty = z.object({}).strict();
/** An image name in the registry (a migration's artifact: `console-migrations/<instanceId>:<tag>`). */
const imageName = z
  .string()
  .regex(/^[a-z0-9]+(?:[._/-][a-z0-9]+)*:[\w][\w.-]{0,127}$/, { error: 'migrationRef must be repository:tag' })
  .max(255);
export const operationSchema = z.discriminatedUnion('kind', [
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('create'), params: machineSpecSchema }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('start'), params: z.object({ gpu: z.boolean() }) }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('stop'), params: empty }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('restart'), params: empty }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('destroy'), params: empty }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('resizeDisk'), params: z.object({ dataDiskGb: z.number().int().min(1).max(1_000_000) }) }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('migrate'), params: z.object({ targetHostId: id }) }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('saveImage'), params: z.object({ imageRef: id }) }),
  z.object({
    opId: id,
    instanceId: instanceIdSchema,
    kind: z.literal('changeBandwidth'),
    params: z.object({ bandwidthMbps: z.number().int().min(1).max(100_000) }),
  }),
  z.object({ opId: id, instanceId: instanceIdSchema, kind: z.literal('exportMachine'), params: z.object({ migrationRef: imageName }) }),
  z.object({
    opId: id,
    instanceId: instanceIdSchema,
    kind: z.literal('importMachine'),
    params: z.object({ migrationRef: imageName, digest: z.string().regex(/^sha256:[a-f0-9]{64}$/), hostId: id }),
  }),
]);
export type AgentOperation = z.infer<typeof operationSchema>;

const power = z.enum(['creating', 'running', 'stopped', 'destroyed']);
export const machineStatusSchema = z.object({ power, gpu: z.boolean(), lost: z.boolean(), hostId: z.string().nullable(), pendingOpId: z.string().nullable() });
export const diskUsageRequestSchema = z.object({ instanceIds: z.array(instanceIdSchema).max(AGENT_MAX_DISK_USAGE_IDS) });
const diskUsageResponseSchema = z.object({ usage: z.record(z.string(), z.number().min(0)) });
export const samplesRequestSchema = z.object({ instanceIds: z.array(instanceIdSchema).max(AGENT_MAX_DISK_USAGE_IDS).optional() });
const figure = z.number().min(0).nullable();
const machineSampleSchema = z.object({
  cpuPercent: figure,
  memoryUsedBytes: figure,
  memoryLimitBytes: figure,
  dataDiskUsedBytes: figure,
  dataDiskSizeBytes: figure,
  systemDiskUsedBytes: figure,
  systemDiskSizeBytes: figure,
  netRxBytesPerSec: figure,
  netTxBytesPerSec: figure,
  gpus: z.array(z.object({ utilisation: z.number().min(0).max(100), memoryUsedMb: z.number().min(0), memoryTotalMb: figure })),
  gpuUnavailable: z.string().nullable(),
  simulated: z.boolean(),
}) satisfies z.ZodType<MachineSample>;
const samplesResponseSchema = z.object({ samples: z.record(z.string(), machineSampleSchema) });
const eventKind = z.enum([
  'create',
  'start',
  'stop',
  'restart',
  'destroy',
  'resizeDisk',
  'migrate',
  'saveImage',
  'changeBandwidth',
  'exportMachine',
  'importMachine',
  'boot',
  'lost',
  'found',
]);
const accessSchema = z.object({ sshHost: z.string().min(1), sshPort: z.number().int().min(1).max(65535) });
const migrationSchema = z.object({ ref: z.string().min(1), digest: z.string().min(1), systemBytes: z.number().min(0), dataBytes: z.number().min(0) });
const eventSchema = z.object({
  seq: z.number().int().min(1),
  opId: z.string().nullable(),
  instanceId: z.string().min(1),
  kind: eventKind,
  ok: z.boolean(),
  error: z.string().nullable(),
  access: accessSchema.optional(),
  power: power.optional(),
  imageSizeGb: z.number().min(0).optional(),
  migration: migrationSchema.optional(),
  at: z.iso.datetime({ offset: true }),
});
/** GET /v1/operations/:opId (OperationOutcome). */
export const operationOutcomeSchema = z.object({
  opId: z.string().min(1),
  instanceId: z.string().min(1),
  kind: eventKind,
  state: z.enum(['pending', 'done', 'failed']),
  error: z.string().nullable(),
  migration: migrationSchema.optional(),
  access: accessSchema.optional(),
});
const eventsResponseSchema = z.object({ events: z.array(eventSchema) });
const errorBodySchema = z.object({ error: z.string(), message: z.string().optional() }).loose();

/** JSON with object keys sorted: what "the same content" of an operation means. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

// --- the driver -------------------------------------------------------------------------------

export type ComputeAgentErrorKind =
  /** Network failure, timeout, 429 or 5xx: the operation may or may not have arrived; worth retrying later. */
  | 'Unavailable'
  /** 401: wrong key, wrong secret or clock skew; retrying will not help. */
  | 'Unauthorized'
  /** 409: the opId was already used for a different operation. */
  | 'Conflict'
  /** 400 or another 4xx: the agent refused the request. */
  | 'Rejected'
  /** The answer does not match the protocol. */
  | 'BadResponse';

export class ComputeAgentError extends Error {
  constructor(
    readonly kind: ComputeAgentErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ComputeAgentError';
  }
}

export interface AgentComputeOptions {
  /** The controller's base URL, e.g. https://agent.example.com (a path prefix is kept). */
  baseUrl: string;
  keyId: string;
  secret: string;
  fetch?: typeof fetch;
  /** Signing time (the agent compares it with its own clock). */
  now?: () => Date;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** Extra attempts after a connection failure, 429, 502, 503 or 504; default 2. */
  retries?: number;
  /** First backoff, doubled each retry; default 200 ms. */
  retryDelayMs?: number;
  /** How often the running machines and their sockets are read again for the synchronous calls (shell, socketOf…); default 1 s. */
  channelRefreshMs?: number;
  /**
   * The accounts' 文件存储 trees, on the file system path the console and the hosts share (the
   * operator mounts it at the same path on each); absent: no 文件存储.
   */
  fileStore?: FileStoreMount;
}

interface Answer {
  status: number;
  body: unknown;
}

export class AgentComputeDriver extends OperationCalls implements ComputeDriver {
  readonly name = 'agent';
  private readonly base: URL;
  private readonly channel: ChannelState;
  private readonly sockets: ChannelSockets;

  constructor(private opts: AgentComputeOptions) {
    super();
    const base = new URL(opts.baseUrl);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    base.hash = '';
    this.base = base;
    this.sockets = new ChannelSockets((relative) => this.signChannel(relative));
    this.channel = new ChannelState(() => this.channelMachines(), opts.channelRefreshMs ?? 1000);
    this.channel.onRefresh = (state) => this.sockets.keepOnly(new Set(Object.keys(state.machines)));
  }

  // --- ways into the machines (agent-channel.ts) -----------------------------------------------

  /** What the agent's machines offer; until the agent first answers, what an agent on the local driver does. */
  get services(): readonly MachineService[] {
    return this.reading().services.length ? this.channel.services : ['jupyter', 'service', 'desktop'];
  }

  get fileStore(): FileStoreMount | undefined {
    return this.opts.fileStore;
  }

  /** The running machines as the agent said at its last read (at most channelRefreshMs ago). */
  runningIds(): string[] {
    return this.reading().runningIds();
  }

  /** Reads the agent's running machines now instead of at the next refresh (tests, and after a start). */
  refreshChannel(): Promise<void> {
    return this.reading().refresh();
  }

  shell(instanceId: string, command?: string[]): ShellCommand | null {
    // The agent's last answer may predate the machine's start (up to channelRefreshMs; a console just started has none):
    // the console's gate has already found the instance Running, so the bridge is tried, and the agent, which checks the
    // machine itself, says 实例已不在运行中 through it when it does not run. Refusing here refused a terminal opened
    // right after a start (seen once in five deployed runs).
    const channel = this.reading();
    if (!channel.machine(instanceId)) void channel.refresh();
    return bridgeCommand((relative) => this.signChannel(relative), instanceId, command);
  }

  socketOf(instanceId: string, service: MachineService): { path: string; close(): void } | null {
    return this.channelSocket(instanceId, service);
  }

  serviceMissing(instanceId: string, service: MachineService | 'sftp'): string | null {
    return this.reading().machine(instanceId)?.missing[service] ?? null;
  }

  app(instanceId: string): MachineApp | null {
    if (!this.reading().machine(instanceId)?.app) return null;
    return {
      socket: () => this.channelSocket(instanceId, 'app'),
      state: async () => {
        const a = await this.call('GET', `v1/channel/apps/${encodeURIComponent(instanceId)}`);
        if (a.status === 404) return null;
        this.expect(a, [200], 'GET /v1/channel/apps');
        return this.parse(appStateResponse, a.body, 'GET /v1/channel/apps').state;
      },
    };
  }

  async shutdown(): Promise<void> {
    this.channel.stop();
    this.sockets.close();
  }

  /** A local path piped to the machine's socket, while the agent says it answers (null: not yet; the caller retries or says 启动中). */
  private channelSocket(instanceId: string, name: MachineService | 'app'): { path: string; close(): void } | null {
    if (!this.reading().machine(instanceId)?.sockets.includes(name)) {
      void this.channel.refresh(); // a socket coming up is seen at the next try, not the next period
      return null;
    }
    return { path: this.sockets.pathOf(instanceId, name), close: () => {} };
  }

  /** The channel's state, read every channelRefreshMs from the first call on (a driver only asked for operations reads nothing more). */
  private reading(): ChannelState {
    this.channel.start();
    return this.channel;
  }

  /** The agent's running machines; null from an agent without the channel (an older or a simulated one: no way in). */
  private async channelMachines(): Promise<ChannelMachines | null> {
    const a = await this.call('GET', 'v1/channel/machines');
    if (a.status === 404) return null;
    this.expect(a, [200], 'GET /v1/channel/machines');
    return this.parse(channelMachinesResponse, a.body, 'GET /v1/channel/machines');
  }

  /** A channel's URL and Authorization (signed now: good for one channel within the protocol's window). */
  private signChannel(relative: string): { url: URL; authorization: string } {
    const url = new URL(relative, this.base);
    // Signatures are single-use on the channel: a nonce keeps two channels opened in the same second apart.
    url.searchParams.append('nonce', randomBytes(12).toString('base64url'));
    const ts = Math.floor((this.opts.now?.() ?? new Date()).getTime() / 1000);
    return { url, authorization: agentAuthorization(this.opts.keyId, this.opts.secret, 'GET', `${url.pathname}${url.search}`, ts, '') };
  }

  async status(instanceId: string): Promise<MachineStatus | null> {
    const a = await this.call('GET', `v1/machines/${encodeURIComponent(instanceId)}`);
    if (a.status === 404) return null;
    this.expect(a, [200], 'GET /v1/machines');
    return this.parse(machineStatusSchema, a.body, 'GET /v1/machines');
  }

  async diskUsage(instanceIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const unique = [...new Set(instanceIds)];
    for (let i = 0; i < unique.length; i += AGENT_MAX_DISK_USAGE_IDS) {
      const chunk = unique.slice(i, i + AGENT_MAX_DISK_USAGE_IDS);
      const a = await this.call('POST', 'v1/disk-usage', { instanceIds: chunk });
      this.expect(a, [200], 'POST /v1/disk-usage');
      const { usage } = this.parse(diskUsageResponseSchema, a.body, 'POST /v1/disk-usage');
      for (const id of chunk) if (Object.hasOwn(usage, id)) out.set(id, usage[id]!);
    }
    return out;
  }

  /** The running machines' figures (all of them, or those of `instanceIds`); none from an agent that does not sample. */
  async sample(instanceIds?: readonly string[]): Promise<Map<string, MachineSample>> {
    const out = new Map<string, MachineSample>();
    const chunks = instanceIds ? chunked([...new Set(instanceIds)], AGENT_MAX_DISK_USAGE_IDS) : [undefined];
    for (const chunk of chunks) {
      const a = await this.call('POST', 'v1/samples', chunk ? { instanceIds: chunk } : {});
      if (a.status === 404) return out;
      this.expect(a, [200], 'POST /v1/samples');
      const { samples } = this.parse(samplesResponseSchema, a.body, 'POST /v1/samples');
      for (const [id, sample] of Object.entries(samples)) if (!chunk || chunk.includes(id)) out.set(id, sample);
    }
    return out;
  }

  async events(afterSeq: number, limit: number): Promise<DriverEvent[]> {
    const n = Math.max(1, Math.min(AGENT_MAX_EVENTS, Math.floor(limit)));
    const a = await this.call('GET', `v1/events?after=${Math.max(0, Math.floor(afterSeq))}&limit=${n}`);
    this.expect(a, [200], 'GET /v1/events');
    const { events } = this.parse(eventsResponseSchema, a.body, 'GET /v1/events');
    let last = afterSeq;
    return events.map((e) => {
      // A cursor that went backwards or repeated would replay or skip events: refuse the page.
      if (e.seq <= last) throw new ComputeAgentError('BadResponse', `compute agent GET /v1/events: seq ${e.seq} after ${last} is not increasing`);
      last = e.seq;
      const { at, access, power: p, imageSizeGb, migration, ...rest } = e;
      return {
        ...rest,
        at: new Date(at),
        ...(access ? { access } : {}),
        ...(p ? { power: p } : {}),
        ...(imageSizeGb !== undefined ? { imageSizeGb } : {}),
        ...(migration ? { migration } : {}),
      };
    });
  }

  async submit(opId: string, instanceId: string, op: InstanceOp): Promise<void> {
    const a = await this.call('POST', 'v1/operations', { opId, instanceId, kind: op.kind, params: op.params });
    if (a.status === 409)
      throw new ComputeAgentError('Conflict', `compute agent: operation ${opId} was already submitted with different content (${errorText(a)})`, 409);
    this.expect(a, [200, 202], 'POST /v1/operations');
  }

  /** One half of a move between hosts (fleet-migrate.ts); the same opId again is a no-op. */
  async submitMigration(opId: string, instanceId: string, op: MigrationOp): Promise<void> {
    const a = await this.call('POST', 'v1/operations', { opId, instanceId, kind: op.kind, params: op.params });
    if (a.status === 409)
      throw new ComputeAgentError('Conflict', `compute agent: operation ${opId} was already submitted with different content (${errorText(a)})`, 409);
    this.expect(a, [200, 202], 'POST /v1/operations');
  }

  /** The operation submitted under `opId` as the agent has it now; null where it never accepted it. */
  async operation(opId: string): Promise<OperationOutcome | null> {
    const a = await this.call('GET', `v1/operations/${encodeURIComponent(opId)}`);
    if (a.status === 404) return null;
    this.expect(a, [200], 'GET /v1/operations');
    return this.parse(operationOutcomeSchema, a.body, 'GET /v1/operations');
  }

  private expect(a: Answer, ok: number[], what: string) {
    if (ok.includes(a.status)) return;
    const text = `compute agent ${what}: HTTP ${a.status} ${errorText(a)}`.trim();
    if (a.status === 401 || a.status === 403)
      throw new ComputeAgentError('Unauthorized', `${text} (check COMPUTE_AGENT_KEY_ID, COMPUTE_AGENT_SECRET and the clocks)`, a.status);
    if (a.status === 429 || a.status >= 500) throw new ComputeAgentError('Unavailable', text, a.status);
    throw new ComputeAgentError('Rejected', text, a.status);
  }

  private parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
    const r = schema.safeParse(body);
    if (!r.success)
      throw new ComputeAgentError(
        'BadResponse',
        `compute agent ${what}: unexpected answer (${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`,
      );
    return r.data;
  }

  /** One signed request, retried on transient failures (every request of the protocol is idempotent). */
  private async call(method: 'GET' | 'POST', relative: string, payload?: unknown): Promise<Answer> {
    const url = new URL(relative, this.base);
    const target = `${url.pathname}${url.search}`;
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const retries = this.opts.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        const ts = Math.floor((this.opts.now?.() ?? new Date()).getTime() / 1000);
        const headers: Record<string, string> = {
          authorization: agentAuthorization(this.opts.keyId, this.opts.secret, method, target, ts, body),
          accept: 'application/json',
        };
        if (payload !== undefined) headers['content-type'] = 'application/json';
        res = await (this.opts.fetch ?? fetch)(url, {
          method,
          headers,
          body: payload === undefined ? undefined : body,
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
        });
      } catch (e) {
        const err = e as Error & { cause?: { code?: string; message?: string } };
        const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
        const why = timedOut
          ? `no answer within ${this.opts.timeoutMs ?? 10_000} ms`
          : `controller unreachable (${err.cause?.code ?? err.cause?.message ?? err.message})`;
        if (!timedOut && attempt < retries) {
          await this.backoff(attempt);
          continue;
        }
        throw new ComputeAgentError('Unavailable', `compute agent ${method} ${url.origin}${target}: ${why}`);
      }
      const text = await res.text().catch(() => '');
      if ([429, 502, 503, 504].includes(res.status) && attempt < retries) {
        await this.backoff(attempt);
        continue;
      }
      let parsed: unknown = undefined;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          if (res.ok) throw new ComputeAgentError('BadResponse', `compute agent ${method} ${target}: answer is not JSON: ${text.slice(0, 100)}`, res.status);
          parsed = { error: 'http', message: text.slice(0, 200) };
        }
      }
      return { status: res.status, body: parsed };
    }
  }

  private backoff(attempt: number) {
    return new Promise((r) => setTimeout(r, (this.opts.retryDelayMs ?? 200) * 2 ** attempt));
  }
}

function errorText(a: Answer): string {
  const e = errorBodySchema.safeParse(a.body);
  return e.success ? `${e.data.error}${e.data.message ? `: ${e.data.message}` : ''}` : '';
}

function chunked<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
