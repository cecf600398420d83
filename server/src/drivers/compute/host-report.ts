/**
 * `GET /v1/host` of the compute agent protocol (agent.ts): the agent's heartbeat — which catalogue
 * host it is, its versions, what the host has (the local driver's offer: the market sells no more)
 * and whether it can run machines now. Both sides are here: the agent builds the report
 * (agent-server.ts serves it), the console's fleet driver reads it (fleet.ts).
 */
import { statfs } from 'node:fs/promises';
import { z } from 'zod';
import { agentAuthorization } from './agent.js';
import type { ComputeDriver, HostOffer } from './types.js';

/** The protocol version these messages belong to (agent.ts: "Wire protocol, version 1"). */
export const AGENT_PROTOCOL_VERSION = 1;
/** The agent's own version, reported so that an operator sees which hosts run an older one. */
export const AGENT_VERSION = '0.1.0';

const check = z.object({ ok: z.boolean(), why: z.string() });
const offerSchema = z.object({
  cpus: z.number().int().min(0),
  memoryGb: z.number().min(0),
  diskGb: z.number().min(0),
  gpus: z.array(z.object({ model: z.string(), memoryMb: z.number().min(0), count: z.number().int().min(0) })),
  images: z.array(z.string()).nullable(),
  hostOs: z.object({ name: z.string(), id: z.string(), versionId: z.string() }),
  held: z.object({ cpu: z.number().min(0), memoryGb: z.number().min(0), gpus: z.number().min(0) }),
}) satisfies z.ZodType<HostOffer>;

export const hostReportSchema = z.object({
  hostId: z.string().min(1).max(128),
  agentVersion: z.string().max(64),
  protocolVersion: z.number().int().min(1),
  /** The host's offer (ComputeDriver.offer); null: the driver describes no host of its own (the simulated fleet). */
  capacity: offerSchema.nullable(),
  health: z.object({
    /** Whether bubblewrap runs sandboxes here (the simulated driver: always, it runs none). */
    sandboxes: check,
    /** Free disk where the machines' disks live, in GB. */
    diskFreeGb: z.number().min(0).nullable(),
    /** Whether the host's NVIDIA cards can be read (no cards at all is fine). */
    gpus: check,
  }),
  /** The machines whose sandboxes run now (the console's SSH gateway and runningIds read this). */
  running: z.array(z.string()).max(100_000),
  /** How many of capacity's cards are simulated (模拟: no device behind them); absent from an older agent. */
  simulatedGpus: z.number().int().min(0).default(0),
});
export type HostReport = z.infer<typeof hostReportSchema>;
/** A report's capacity as the market reads it. */
export type ReportedOffer = HostOffer;

/** Whether a host of this report can take machines now. */
export function reportIsHealthy(r: HostReport): boolean {
  return r.health.sandboxes.ok && r.health.gpus.ok && (r.health.diskFreeGb === null || r.health.diskFreeGb >= 1);
}

export interface HostReportSources {
  hostId: string;
  driver: ComputeDriver;
  /** Where the machines' disks live (statfs of it). */
  dir: string | null;
  sandboxes: () => { ok: boolean; why: string };
  gpus: () => { ok: boolean; why: string };
  /**
   * Cards the host does not have, reported as if it had them (COMPUTE_AGENT_SIMULATED_GPUS: staging and the tests'
   * hosts without GPUs, so that the market sells GPU machines on them); machines get no device for them.
   */
  simulatedGpus?: readonly HostOffer['gpus'][number][];
}

/** The agent's side: the report of now. */
export async function buildHostReport(s: HostReportSources): Promise<HostReport> {
  const offer = s.driver.offer ? await s.driver.offer() : null;
  const simulated = s.simulatedGpus ?? [];
  const capacity = offer && { ...offer, images: offer.images && [...offer.images], gpus: [...offer.gpus, ...simulated] };
  return {
    hostId: s.hostId,
    agentVersion: AGENT_VERSION,
    protocolVersion: AGENT_PROTOCOL_VERSION,
    capacity,
    health: { sandboxes: s.sandboxes(), diskFreeGb: s.dir ? await freeGb(s.dir) : null, gpus: s.gpus() },
    running: s.driver.runningIds?.() ?? [],
    simulatedGpus: simulated.reduce((n, g) => n + g.count, 0),
  };
}

async function freeGb(dir: string): Promise<number | null> {
  try {
    const st = await statfs(dir);
    return Math.floor((st.bavail * st.bsize) / 1024 ** 3);
  } catch {
    return null;
  }
}

/** The console's side: one signed `GET /v1/host` (no retries: a heartbeat that fails is the news). */
export async function readHostReport(
  opts: { baseUrl: string; keyId: string; secret: string; timeoutMs?: number; fetch?: typeof fetch },
  now: Date = new Date(),
): Promise<HostReport> {
  const base = new URL(opts.baseUrl);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  const url = new URL('v1/host', base);
  const ts = Math.floor(now.getTime() / 1000);
  const res = await (opts.fetch ?? fetch)(url, {
    headers: { authorization: agentAuthorization(opts.keyId, opts.secret, 'GET', url.pathname, ts, ''), accept: 'application/json' },
    signal: AbortSignal.timeout(opts.timeoutMs ?? 5_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`compute agent GET /v1/host: HTTP ${res.status} ${text.slice(0, 200)}`);
  const parsed = hostReportSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`compute agent GET /v1/host: unexpected answer (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
  return parsed.data;
}
