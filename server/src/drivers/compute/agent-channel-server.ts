/**
 * The agent's half of the channel into its machines (agent-channel.ts documents the protocol):
 * shells under a pty or on pipes, byte pipes to the machines' service sockets, and the small reads
 * the console's synchronous calls are answered from. Registered inside computeAgentServer, so its
 * signature check (401 before anything else, the same 5-minute window) covers these routes too; a
 * channel's signature is refused the second time it is presented.
 */
import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { spawn as spawnPty, type IPty } from 'node-pty';
import type WebSocket from 'ws';
import { z } from 'zod';
import { instanceIdSchema } from './agent.js';
import {
  CHANNEL_HIGH_WATER,
  CHANNEL_LOW_WATER,
  CHANNEL_STDERR,
  CHANNEL_STDOUT,
  channelSocketNames,
  relayToWebSocket,
  shellClientMessage,
  type ChannelMachines,
  type ChannelSocketName,
  type ShellClientMessage,
} from './agent-channel.js';
import type { ComputeDriver, MachineService, ShellCommand } from './types.js';

export interface AgentChannelOptions {
  driver: ComputeDriver;
  /** How long a signature stays refused after its use: the protocol's window. */
  maxSkewMs: number;
  /** How often the open channels of machines that stopped are closed (default 2 s). */
  sweepMs?: number;
}

const machineParams = z.object({ instanceId: instanceIdSchema });
const shellQuery = z.object({ arg: z.union([z.string(), z.array(z.string())]).optional() });
const socketQuery = z.object({ service: z.enum(channelSocketNames) });
const SERVICES_AND_SFTP = ['jupyter', 'service', 'desktop', 'sftp'] as const;

class ChannelRefusal extends Error {
  constructor(
    readonly status: 400 | 401 | 404,
    message: string,
  ) {
    super(message);
  }
}

const CODES = { 400: 'bad_request', 401: 'unauthorized', 404: 'not_found' } as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** The machine's socket, looked up before the upgrade so that a missing one is a 404. */
    channelSocket?: { path: string; close(): void };
  }
}

export const agentChannelServer: FastifyPluginAsync<AgentChannelOptions> = async (app: FastifyInstance, opts) => {
  const { driver } = opts;
  await app.register(websocket, { options: { maxPayload: 4 * 1024 * 1024, perMessageDeflate: false } });
  const open = new Set<{ instanceId: string; end(): void }>();
  const used = new Map<string, number>();

  // The channel's own refusals here; the protocol's (a bad signature) go on to computeAgentServer's handler.
  app.setErrorHandler((err, _req, reply) => {
    if (!(err instanceof ChannelRefusal)) throw err;
    return reply.status(err.status).send({ error: CODES[err.status], message: err.message });
  });

  // After the protocol's signature check: a channel's signature opens one channel, never a second.
  app.addHook('preHandler', async (req) => {
    if (!req.headers.upgrade) return;
    const sig = /sig=(\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (used.has(sig)) throw new ChannelRefusal(401, 'this channel signature was already used');
    used.set(sig, Date.now() + 2 * opts.maxSkewMs);
  });

  app.get('/v1/channel/machines', async () => channelMachines(driver));

  app.get('/v1/channel/apps/:instanceId', async (req) => {
    const { instanceId } = parse(machineParams, req.params);
    return { state: (await driver.app?.(instanceId)?.state()) ?? null };
  });

  app.route({
    method: 'GET',
    url: '/v1/channel/shell/:instanceId',
    preHandler: async (req) => {
      const { instanceId } = parse(machineParams, req.params);
      parse(shellQuery, req.query);
      if (!driver.shell || !running(driver, instanceId)) throw new ChannelRefusal(404, `machine ${instanceId} is not running here`);
    },
    handler: async () => {
      throw new ChannelRefusal(400, 'a WebSocket upgrade is expected');
    },
    wsHandler: (ws, req) => {
      const { instanceId } = parse(machineParams, req.params);
      const { arg } = parse(shellQuery, req.query);
      const command = arg === undefined ? undefined : Array.isArray(arg) ? arg : [arg];
      track(open, instanceId, ws, serveShell(ws, driver, instanceId, command));
    },
  });

  app.route({
    method: 'GET',
    url: '/v1/channel/socket/:instanceId',
    preHandler: async (req) => {
      const { instanceId } = parse(machineParams, req.params);
      const { service } = parse(socketQuery, req.query);
      const socket = socketOf(driver, instanceId, service);
      if (!socket) throw new ChannelRefusal(404, `${service} of machine ${instanceId} does not answer here`);
      req.channelSocket = socket;
    },
    handler: async (req) => {
      req.channelSocket?.close();
      throw new ChannelRefusal(400, 'a WebSocket upgrade is expected');
    },
    wsHandler: (ws, req: FastifyRequest) => {
      const { instanceId } = parse(machineParams, req.params);
      track(open, instanceId, ws, pipeSocket(ws, req.channelSocket!));
    },
  });

  // Everything of a machine that stopped is closed, whatever is still in flight.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [s, until] of used) if (until < now) used.delete(s);
    if (!driver.runningIds) return;
    const ids = new Set(driver.runningIds());
    for (const c of open) if (!ids.has(c.instanceId)) c.end();
  }, opts.sweepMs ?? 2000);
  sweep.unref();
  app.addHook('onClose', async () => {
    clearInterval(sweep);
    for (const c of open) c.end();
  });
};

function parse<T>(schema: z.ZodType<T>, v: unknown): T {
  const r = schema.safeParse(v);
  if (!r.success) throw new ChannelRefusal(400, r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  return r.data;
}

function running(driver: ComputeDriver, instanceId: string): boolean {
  return driver.runningIds ? driver.runningIds().includes(instanceId) : driver.shell?.(instanceId) != null;
}

function socketOf(driver: ComputeDriver, instanceId: string, name: ChannelSocketName): { path: string; close(): void } | null {
  if (name === 'app') return driver.app?.(instanceId)?.socket() ?? null;
  return driver.services?.includes(name) ? (driver.socketOf?.(instanceId, name) ?? null) : null;
}

/** The running machines and what answers in each now: what the console's synchronous calls are answered from. */
function channelMachines(driver: ComputeDriver): ChannelMachines {
  const services = [...(driver.services ?? [])];
  const machines: ChannelMachines['machines'] = {};
  for (const id of driver.runningIds?.() ?? []) {
    const app = driver.app?.(id) ?? null;
    const sockets = channelSocketNames.filter((name) => {
      const s = name === 'app' ? (app?.socket() ?? null) : services.includes(name) ? (driver.socketOf?.(id, name) ?? null) : null;
      s?.close();
      return s !== null;
    });
    const missing: Partial<Record<MachineService | 'sftp', string>> = {};
    for (const s of SERVICES_AND_SFTP) {
      const why = driver.serviceMissing?.(id, s);
      if (why) missing[s] = why;
    }
    machines[id] = { sockets, missing, app: app !== null };
  }
  return { services, machines };
}

/** Keeps a channel in `open` until its WebSocket closes, so that a stopped machine's can be ended. */
function track(open: Set<{ instanceId: string; end(): void }>, instanceId: string, ws: WebSocket, end: () => void) {
  const entry = { instanceId, end: () => (end(), ws.terminate()) };
  open.add(entry);
  ws.once('close', () => {
    open.delete(entry);
    end();
  });
}

/** A shell channel: waits for the client's `start`, then runs the command under a pty or on pipes. Returns how to end it. */
function serveShell(ws: WebSocket, driver: ComputeDriver, instanceId: string, command: string[] | undefined): () => void {
  let end = () => {};
  let started = false;
  ws.on('message', (raw, binary) => {
    if (!started) {
      const first = binary ? null : message(raw);
      if (first?.type !== 'start') return ws.close(4400, 'start expected');
      started = true;
      const line = driver.shell?.(instanceId, command) ?? null;
      if (!line) {
        ws.send(JSON.stringify({ type: 'exit', code: 1 }));
        return ws.close(1000, 'not running');
      }
      end = first.pty ? shellOnPty(ws, line, first.pty) : shellOnPipes(ws, line);
    }
  });
  return () => end();
}

function message(raw: WebSocket.RawData): ShellClientMessage | null {
  try {
    const r = shellClientMessage.safeParse(JSON.parse(raw.toString()));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

function exitAndClose(ws: WebSocket, code: number) {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(JSON.stringify({ type: 'exit', code }));
  ws.close(1000, 'exited');
}

function shellOnPty(ws: WebSocket, line: ShellCommand, size: { cols: number; rows: number }): () => void {
  const term: IPty = spawnPty(line.file, line.args, { name: 'xterm-256color', cols: size.cols, rows: size.rows, env: line.env, encoding: null });
  let exited = false;
  let paused = false;
  const head = Buffer.from([CHANNEL_STDOUT]);
  term.onData((chunk) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(Buffer.concat([head, chunk as unknown as Buffer]), { binary: true }, () => {
      if (paused && ws.bufferedAmount < CHANNEL_LOW_WATER) {
        paused = false;
        term.resume();
      }
    });
    if (!paused && ws.bufferedAmount > CHANNEL_HIGH_WATER) {
      paused = true;
      term.pause();
    }
  });
  term.onExit(({ exitCode }) => {
    exited = true;
    exitAndClose(ws, exitCode);
  });
  ws.on('message', (raw, binary) => {
    try {
      if (binary) return term.write(raw as unknown as string); // a Buffer is written as is: a character split between messages stays whole
      const m = message(raw);
      if (m?.type === 'resize') term.resize(m.cols, m.rows);
    } catch {
      /* ended */
    }
  });
  // Hanging up the pty ends the shell inside; an exited pty's pid is never signalled.
  return () => !exited && (term as IPty & { destroy(): void }).destroy();
}

function shellOnPipes(ws: WebSocket, line: ShellCommand): () => void {
  // Its own process group: the machine's join forks the command, and the whole group is ended with the channel.
  const child: ChildProcess = spawnProcess(line.file, line.args, { env: line.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  for (const s of [child.stdin, child.stdout, child.stderr]) s?.on('error', () => {});
  relayToWebSocket(child.stdout!, ws, CHANNEL_STDOUT);
  relayToWebSocket(child.stderr!, ws, CHANNEL_STDERR);
  ws.on('message', (raw, binary) => {
    if (binary) return void child.stdin!.write(raw as Buffer);
    if (message(raw)?.type === 'eof') child.stdin!.end();
  });
  child.once('close', (code) => exitAndClose(ws, code ?? 1));
  child.once('error', () => exitAndClose(ws, 127));
  return () => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  };
}

/** A byte pipe between the channel and the machine's socket; half-closes pass both ways. */
function pipeSocket(ws: WebSocket, handle: { path: string; close(): void }): () => void {
  const socket = net.createConnection({ path: handle.path, allowHalfOpen: true });
  const early: Buffer[] = [];
  let connected = false;
  socket.once('connect', () => {
    handle.close();
    connected = true;
    for (const b of early.splice(0)) socket.write(b);
    relayToWebSocket(socket, ws);
  });
  socket.once('error', () => {
    handle.close();
    ws.terminate();
  });
  socket.once('close', () => ws.close());
  ws.on('message', (raw, binary) => {
    if (!binary) return void socket.end();
    if (!connected) return void early.push(raw as Buffer);
    if (!socket.write(raw as Buffer)) {
      ws.pause();
      socket.once('drain', () => ws.resume());
    }
  });
  return () => socket.destroy();
}
