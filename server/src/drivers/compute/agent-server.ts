/**
 * The agent side of the compute agent protocol (documented at the top of agent.ts), served on top
 * of any ComputeDriver — in practice the simulated fleet, which makes a stand-alone simulated
 * controller for staging (`npm run compute-agent -w server`, src/cli/compute-agent.ts) and lets the
 * tests prove AgentComputeDriver against a real HTTP server.
 *
 * Every request must carry a valid signature (401 otherwise, before anything else happens). The
 * plugin keeps the content of the operations it accepted in memory (the most recent 100,000) to
 * answer 409 when an opId comes back with different content; after a restart a resubmitted opId is
 * answered 202 again and the driver below dedupes it by opId, so nothing runs twice.
 *
 *   app.register(computeAgentServer, { driver, keys: { [keyId]: secret } })
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ComputeDriver, DriverEvent } from './types.js';
import { agentChannelServer } from './agent-channel-server.js';
import type { HostReport } from './host-report.js';
import {
  AGENT_MAX_EVENTS,
  AGENT_MAX_SKEW_MS,
  canonicalJson,
  diskUsageRequestSchema,
  instanceIdSchema,
  operationSchema,
  samplesRequestSchema,
  sha256Hex,
  verifyAgentRequest,
  type AgentOperation,
} from './agent.js';

export interface ComputeAgentServerOptions {
  driver: ComputeDriver;
  /** keyId → shared secret; several keys allow rotating one without downtime. */
  keys: Readonly<Record<string, string>>;
  /** The agent's clock for the 5-minute window (default: system time). */
  now?: () => Date;
  maxSkewMs?: number;
  /** How many accepted operations are remembered for the 409 check. */
  rememberOps?: number;
  /** The heartbeat `GET /v1/host` answers (host-report.ts buildHostReport); absent: 404. */
  hostReport?: () => Promise<HostReport>;
}

class AgentHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: 'bad_request' | 'unauthorized' | 'not_found' | 'conflict',
    message: string,
  ) {
    super(message);
  }
}

const eventsQuery = z.object({
  after: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(AGENT_MAX_EVENTS).default(100),
});
const machineParams = z.object({ instanceId: instanceIdSchema });
const operationParams = z.object({ opId: z.string().min(1).max(128) });

export const computeAgentServer: FastifyPluginAsync<ComputeAgentServerOptions> = async (app: FastifyInstance, opts) => {
  const { driver, keys } = opts;
  if (!Object.keys(keys).length || Object.values(keys).some((s) => !s))
    throw new Error('computeAgentServer: at least one key with a non-empty secret is required');
  const now = opts.now ?? (() => new Date());
  const remember = opts.rememberOps ?? 100_000;
  /** opId → fingerprint of what was accepted under it (insertion order = age). */
  const accepted = new Map<string, string>();

  // The signature covers the exact bytes sent: keep the raw body and parse JSON only once it is trusted.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    if (err instanceof AgentHttpError) return reply.status(err.status).send({ error: err.code, message: err.message });
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) reply.log.error({ err }, 'compute agent: request failed');
    return reply.status(status).send({ error: status === 500 ? 'internal' : 'bad_request', message: status === 500 ? 'internal error' : err.message });
  });

  app.addHook('preHandler', async (req: FastifyRequest) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const why = verifyAgentRequest(
      { method: req.method, target: req.url, authorization: req.headers.authorization, body: raw },
      keys,
      now(),
      opts.maxSkewMs ?? AGENT_MAX_SKEW_MS,
    );
    if (why) {
      req.log.warn({ url: req.url, why }, 'compute agent: request refused');
      throw new AgentHttpError(401, 'unauthorized', why);
    }
  });

  await app.register(agentChannelServer, { driver, maxSkewMs: opts.maxSkewMs ?? AGENT_MAX_SKEW_MS });

  app.post('/v1/operations', async (req, reply) => {
    const op = parse(operationSchema, json(req), 'operation');
    const fingerprint = sha256Hex(canonicalJson({ kind: op.kind, instanceId: op.instanceId, params: op.params }));
    const known = accepted.get(op.opId);
    if (known && known !== fingerprint) throw new AgentHttpError(409, 'conflict', `operation ${op.opId} was already submitted with different content`);
    await run(driver, op);
    if (!known) {
      accepted.set(op.opId, fingerprint);
      if (accepted.size > remember) accepted.delete(accepted.keys().next().value!);
    }
    return reply.status(known ? 200 : 202).send({ opId: op.opId });
  });

  app.get('/v1/operations/:opId', async (req) => {
    const { opId } = parse(operationParams, req.params, 'path');
    const outcome = await driver.operation?.(opId);
    if (!outcome) throw new AgentHttpError(404, 'not_found', `operation ${opId} is not known`);
    return outcome;
  });

  app.get('/v1/machines/:instanceId', async (req) => {
    const { instanceId } = parse(machineParams, req.params, 'path');
    const status = await driver.status(instanceId);
    if (!status) throw new AgentHttpError(404, 'not_found', `machine ${instanceId} is not known`);
    return status;
  });

  app.post('/v1/disk-usage', async (req) => {
    const { instanceIds } = parse(diskUsageRequestSchema, json(req), 'disk-usage request');
    return { usage: Object.fromEntries(await driver.diskUsage(instanceIds)) };
  });

  app.post('/v1/samples', async (req) => {
    const { instanceIds } = parse(samplesRequestSchema, json(req), 'samples request');
    if (!driver.sample) throw new AgentHttpError(404, 'not_found', 'this agent does not sample its machines');
    return { samples: Object.fromEntries(await driver.sample(instanceIds)) };
  });

  app.get('/v1/host', async () => {
    if (!opts.hostReport) throw new AgentHttpError(404, 'not_found', 'this agent reports no host');
    return opts.hostReport();
  });

  app.get('/v1/events', async (req) => {
    const q = parse(eventsQuery, req.query, 'query');
    const events = await driver.events(q.after, q.limit);
    return { events: events.map(wireEvent) };
  });
};

function json(req: FastifyRequest): unknown {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  try {
    return JSON.parse(raw);
  } catch {
    throw new AgentHttpError(400, 'bad_request', 'body is not JSON');
  }
}

function parse<T>(schema: z.ZodType<T>, v: unknown, what: string): T {
  const r = schema.safeParse(v);
  if (!r.success)
    throw new AgentHttpError(400, 'bad_request', `invalid ${what}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

/**
 * Hands an accepted operation to the driver: the protocol's `{ kind, params }` is the console's InstanceOp
 * (types.ts), or one half of a move between hosts (MigrationOp), which a driver that cannot move machines refuses.
 */
function run(d: ComputeDriver, { opId, instanceId, ...op }: AgentOperation): Promise<void> {
  if (op.kind === 'exportMachine' || op.kind === 'importMachine') {
    if (!d.submitMigration) throw new AgentHttpError(400, 'bad_request', 'this agent cannot move machines between hosts');
    return d.submitMigration(opId, instanceId, op);
  }
  return d.submit(opId, instanceId, op);
}

function wireEvent(e: DriverEvent) {
  return { ...e, at: e.at.toISOString() };
}
