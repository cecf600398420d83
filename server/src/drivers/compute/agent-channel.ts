/**
 * The agent's channel into its machines (issue 31 §2: every way in works for an instance on any
 * host), the console's half; agent-channel-server.ts is the agent's. Over the same signed HTTP as
 * the rest of the protocol (agent.ts), under the base URL:
 *
 *   GET /v1/channel/machines           → { services, machines: { [instanceId]: { sockets, missing, app } } }
 *        the running machines (their ids are runningIds), which services' sockets answer now
 *        (`sockets`: jupyter, service, desktop, app), why a service is missing (serviceMissing,
 *        sftp included) and whether the machine serves an image application
 *   GET /v1/channel/apps/:instanceId   → { state: MachineAppState | null }
 *   GET /v1/channel/shell/:instanceId[?arg=…&arg=…]     WebSocket: a shell (no arg: a login shell)
 *        or the command of the args. The client's first message is text
 *        `{ type: "start", pty: { cols, rows } | null }` (null: plain pipes); then binary messages
 *        are its input, text `{ type: "resize", cols, rows }` and `{ type: "eof" }` (input ended).
 *        The agent sends binary messages whose first byte says the stream (1 stdout, 2 stderr), and
 *        text `{ type: "exit", code }` before it closes.
 *   GET /v1/channel/socket/:instanceId?service=jupyter|service|desktop|app   WebSocket: a byte pipe
 *        to that socket inside the machine; text `{ type: "eof" }` is a half-close either way.
 *
 * The upgrade carries the protocol's Authorization header (HMAC of GET, the target, ts); a channel's
 * signature opens one channel only (opening is not idempotent, unlike the protocol's requests), and
 * the signed target names the machine, so a signature for one machine opens nothing of another.
 * 404 before the upgrade: the machine does not run (or the socket does not answer).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { z } from 'zod';
import type { MachineAppState, MachineService, ShellCommand } from './types.js';

export const CHANNEL_STDOUT = 1;
export const CHANNEL_STDERR = 2;
/** Output queued on a WebSocket above which the side feeding it is paused, and below which it goes on. */
export const CHANNEL_HIGH_WATER = 256 * 1024;
export const CHANNEL_LOW_WATER = 64 * 1024;

export const channelSocketNames = ['jupyter', 'service', 'desktop', 'app'] as const;
export type ChannelSocketName = (typeof channelSocketNames)[number];

/** What a shell channel's client says first, and later. */
export const shellClientMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('start'),
    pty: z.object({ cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) }).nullable(),
  }),
  z.object({ type: z.literal('resize'), cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) }),
  z.object({ type: z.literal('eof') }),
]);
export type ShellClientMessage = z.infer<typeof shellClientMessage>;

const appStateSchema = z.object({
  port: z.number().int(),
  exits: z.number().int().min(0),
  running: z.boolean(),
  upSeconds: z.number().min(0),
  logTail: z.string(),
}) satisfies z.ZodType<MachineAppState>;
export const appStateResponse = z.object({ state: appStateSchema.nullable() });

const missingSchema = z.object({ jupyter: z.string(), service: z.string(), desktop: z.string(), sftp: z.string() }).partial();
export const channelMachinesResponse = z.object({
  services: z.array(z.enum(['jupyter', 'service', 'desktop'])),
  machines: z.record(z.string(), z.object({ sockets: z.array(z.enum(channelSocketNames)), missing: missingSchema, app: z.boolean() })),
});
export type ChannelMachines = z.infer<typeof channelMachinesResponse>;
export type ChannelMachine = ChannelMachines['machines'][string];

/** The bridge the console's pty runs for a shell on an agent's machine (plain JavaScript: started by node alone, without tsx). */
export const SHELL_BRIDGE = fileURLToPath(new URL('./agent-shell-bridge.mjs', import.meta.url));

/** Signs a channel request: the URL to open and its Authorization header. */
export type ChannelSigner = (relative: string) => { url: URL; authorization: string };

/** The relative target of a machine's shell channel. */
export function shellTarget(instanceId: string, command?: string[]): string {
  const query = command?.length ? `?${command.map((a) => `arg=${encodeURIComponent(a)}`).join('&')}` : '';
  return `v1/channel/shell/${encodeURIComponent(instanceId)}${query}`;
}

export function socketTarget(instanceId: string, name: ChannelSocketName): string {
  return `v1/channel/socket/${encodeURIComponent(instanceId)}?service=${name}`;
}

/**
 * The command line of a shell on an agent's machine, for the console's consumers as they are (the
 * web terminal and the SSH gateway spawn it under their pty, or with pipes for `ssh host cmd`, scp
 * and sftp): a small bridge that relays its own tty (raw) or pipes over one channel. Chosen over
 * changing the consumers to take streams: they stay one code path for every driver, and the pty
 * they already manage gives resizes (SIGWINCH) and exit statuses for free. The bridge gets a signed
 * URL good for one channel and 5 minutes, never the agent's secret.
 */
export function bridgeCommand(sign: ChannelSigner, instanceId: string, command?: string[]): ShellCommand {
  const { url, authorization } = sign(shellTarget(instanceId, command));
  return {
    file: process.execPath,
    args: [SHELL_BRIDGE],
    env: { AGENT_CHANNEL_URL: wsUrl(url).toString(), AGENT_CHANNEL_AUTHORIZATION: authorization, LANG: 'C.UTF-8' },
  };
}

export function wsUrl(url: URL): URL {
  const out = new URL(url);
  out.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return out;
}

/**
 * Unix sockets on the console whose connections are piped to a machine's socket on its agent (the
 * machine proxy, the desktop relay and image applications connect to a path): one listener per
 * machine and socket, in a private (0700) folder, kept while the machine runs.
 */
export class ChannelSockets {
  /** Made on first use: a driver that is never asked for a socket leaves nothing behind. */
  private dir: string | null = null;
  private readonly listeners = new Map<string, { server: net.Server; path: string; conns: Set<net.Socket> }>();

  constructor(private readonly sign: ChannelSigner) {}

  /** The path to connect to for `name` of the machine (made on first use). */
  pathOf(instanceId: string, name: ChannelSocketName): string {
    const key = `${instanceId}-${name}`;
    const known = this.listeners.get(key);
    if (known) return known.path;
    this.dir ??= mkdtempSync(path.join(tmpdir(), 'agent-ch-'));
    const file = path.join(this.dir, `${key}.sock`);
    const conns = new Set<net.Socket>();
    const server = net.createServer({ allowHalfOpen: true }, (conn) => {
      conns.add(conn);
      conn.once('close', () => conns.delete(conn));
      this.pipe(conn, instanceId, name);
    });
    server.listen(file);
    server.unref();
    this.listeners.set(key, { server, path: file, conns });
    return file;
  }

  /** Closes the listeners (and their connections) of machines that no longer run. */
  keepOnly(running: ReadonlySet<string>): void {
    for (const [key, l] of this.listeners) {
      if (running.has(key.slice(0, 36))) continue;
      this.listeners.delete(key);
      l.server.close();
      for (const c of l.conns) c.destroy();
    }
  }

  close(): void {
    this.keepOnly(new Set());
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
  }

  /** One connection: bytes both ways over a channel of its own; a refusal ends it at once (the caller retries, or says 启动中). */
  private pipe(conn: net.Socket, instanceId: string, name: ChannelSocketName) {
    conn.pause();
    const { url, authorization } = this.sign(socketTarget(instanceId, name));
    const ws = new WebSocket(wsUrl(url), { headers: { authorization }, perMessageDeflate: false });
    ws.on('error', () => conn.destroy());
    ws.on('unexpected-response', () => {
      ws.terminate();
      conn.destroy();
    });
    ws.on('open', () => {
      relayToWebSocket(conn, ws);
      conn.resume();
    });
    ws.on('message', (data, binary) => {
      if (!binary) return conn.end(); // the machine's side half-closed
      if (!conn.write(data as Buffer)) {
        ws.pause();
        conn.once('drain', () => ws.resume());
      }
    });
    ws.on('close', () => conn.destroy());
    conn.on('error', () => ws.terminate());
    conn.on('close', () => ws.close());
  }
}

/** A byte stream's data into a WebSocket as binary messages, held while the WebSocket's queue is long; its end as `eof`. */
export function relayToWebSocket(from: NodeJS.ReadableStream & { pause(): unknown; resume(): unknown }, ws: WebSocket, prefix?: number): void {
  const head = prefix === undefined ? null : Buffer.from([prefix]);
  from.on('data', (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(head ? Buffer.concat([head, chunk]) : chunk, { binary: true }, () => {
      if (ws.bufferedAmount < CHANNEL_LOW_WATER) from.resume();
    });
    if (ws.bufferedAmount > CHANNEL_HIGH_WATER) from.pause();
  });
  if (prefix === undefined) from.on('end', () => ws.readyState === ws.OPEN && ws.send(JSON.stringify({ type: 'eof' })));
}

/** The running machines as the agent last said, read again every `refreshMs` (the consumers' calls are synchronous). */
export class ChannelState {
  private current: ChannelMachines = { services: [], machines: {} };
  /** Whether the agent has answered once (before that, nothing is known either way). */
  loaded = false;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  /** Told after each successful read (the sockets of stopped machines are closed then). */
  onRefresh: ((state: ChannelMachines) => void) | null = null;

  constructor(
    private readonly read: () => Promise<ChannelMachines | null>,
    private readonly refreshMs: number,
  ) {}

  start(): void {
    if (this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  get services(): MachineService[] {
    return this.current.services;
  }

  machine(instanceId: string): ChannelMachine | null {
    return Object.hasOwn(this.current.machines, instanceId) ? this.current.machines[instanceId]! : null;
  }

  runningIds(): string[] {
    return Object.keys(this.current.machines);
  }

  /** Reads the agent's state now (one read at a time); an agent that cannot be reached keeps the last state. */
  refresh(): Promise<void> {
    this.inFlight ??= this.read()
      .then((state) => {
        if (!state) return;
        this.current = state;
        this.loaded = true;
        this.onRefresh?.(state);
      })
      .catch(() => {})
      .finally(() => (this.inFlight = null));
    return this.inFlight;
  }
}
