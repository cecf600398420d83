/**
 * The web terminal's and the desktop's WebSockets: admitted like any request (session, the instance
 * is the caller's and running), then watched by the gate for as long as they stay open. And the
 * user's SSH public keys, which the SSH gateway takes.
 */
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { WebSocket } from 'ws';
import {
  API,
  instanceIdParamsSchema,
  okSchema,
  sshKeyCreateSchema,
  sshKeyIdParamsSchema,
  sshKeyListSchema,
  sshKeySchema,
  TERMINAL_CLOSE,
  terminalClientMessageSchema,
  terminalQuerySchema,
  type TerminalServerMessage,
} from '@console/contract';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { currentSession, findToken, type AuthGuards } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import type { AccessGate } from './gate.js';
import type { SshKeyService } from './ssh-keys.js';
import type { Terminals, TerminalSink } from './terminal.js';

/** Output queued for a slow reader above which the shell is held, and below which it goes on. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 128 * 1024;
const PING_MS = 30_000;

export interface AccessRoutesDeps {
  auth: AuthGuards;
  accessGate: AccessGate;
  terminals: Terminals;
  sshKeys: SshKeyService;
  /** The machines' desktops (socketOf). */
  driver: ComputeDriver;
}

export async function accessRoutes(app: FastifyInstance, deps: AccessRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { terminals, accessGate } = deps;

  r.get(
    API.instanceTerminal,
    {
      websocket: true,
      schema: { tags: ['实例'], summary: '网页终端（WebSocket）', params: instanceIdParamsSchema, querystring: terminalQuerySchema },
      onRequest: deps.auth.requireAuth,
      preHandler: async (req) => {
        await accessGate.admit(req, req.params.id);
        if (!terminals.offered) throw new AppError('TERMINAL_UNAVAILABLE');
      },
    },
    (socket, req) => {
      const send = (m: TerminalServerMessage) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(m));
      let id = '';
      let paused = false;
      const sink: TerminalSink = {
        output: (data) => {
          if (socket.readyState !== socket.OPEN) return;
          // A reader slower than the shell (or gone quiet) holds the shell, not the server's memory.
          socket.send(data, { binary: true }, () => {
            if (paused && socket.bufferedAmount < LOW_WATER) {
              paused = false;
              terminals.unpause(id);
            }
          });
          if (!paused && socket.bufferedAmount > HIGH_WATER) {
            paused = true;
            terminals.pause(id);
          }
        },
        ended: (message) => {
          send({ type: 'closed', message });
          socket.close(TERMINAL_CLOSE.ended, 'ended');
        },
      };
      const user = currentSession(req).user;
      const { id: instanceId } = req.params;
      const q = req.query;
      const size = { cols: q.cols, rows: q.rows };
      // Opening a shell asks the database (the user's shells on every replica): what the client
      // types meanwhile waits here, and goes to the shell once it is there.
      const early: [WebSocket.RawData, boolean][] = [];
      socket.on('message', (raw, isBinary) => (id ? onMessage(raw, isBinary) : early.push([raw, isBinary])));
      void attach();

      async function attach() {
        let shell: { id: string; offset: number; lost?: number } | null;
        let resumed = false;
        try {
          shell = q.resume ? terminals.resume(q.resume, instanceId, user.id, q.since, size, sink) : null;
          resumed = Boolean(shell);
          shell ??= await terminals.open(instanceId, user.id, size, sink);
        } catch (e) {
          const refusal = e instanceof AppError ? e : new AppError('INSTANCE_NOT_RUNNING');
          send({ type: 'closed', message: refusal.message });
          socket.close(4000 + refusal.status, 'refused');
          return;
        }
        id = shell.id;
        // The page went away while the shell was being opened: nobody will attach to it.
        if (socket.readyState !== socket.OPEN) return terminals.close({ id, sink }, '终端页面已关闭');
        send({ type: 'ready', id, offset: shell.offset, resumed, lost: shell.lost ?? 0 });
        const live = { token: findToken(req)!.token, instanceId, close: (reason: string) => terminals.close({ id, sink }, reason) };
        accessGate.watch(live);
        // A peer that vanished without closing (a laptop asleep) is noticed and the shell detached.
        keepAlive(socket);
        for (const [raw, isBinary] of early.splice(0)) onMessage(raw, isBinary);
        socket.on('close', () => {
          accessGate.forget(live);
          // While it waits for a reattach the shell stays watched with the session that opened it:
          // logging out or losing the right ends it at once, not when the wait runs out.
          const waiting = { ...live, close: (reason: string) => terminals.close({ id, detached: true }, reason) };
          if (terminals.detach(id, sink, () => accessGate.forget(waiting))) accessGate.watch(waiting);
        });
      }

      function onMessage(raw: WebSocket.RawData, isBinary: boolean) {
        let parsed: unknown;
        try {
          parsed = isBinary ? null : JSON.parse(raw.toString());
        } catch {
          parsed = null;
        }
        const m = terminalClientMessageSchema.safeParse(parsed);
        if (!m.success) return send({ type: 'error', message: '无法识别的终端消息，已忽略' });
        if (m.data.type === 'input') terminals.input(id, m.data.data);
        else terminals.resize(id, m.data.cols, m.data.rows);
      }
    },
  );

  r.get(
    API.instanceDesktop,
    {
      websocket: true,
      schema: { tags: ['实例'], summary: '远程桌面（WebSocket，VNC/RFB，供 noVNC 使用）', params: instanceIdParamsSchema },
      onRequest: deps.auth.requireAuth,
      preHandler: async (req) => {
        const instance = await accessGate.admit(req, req.params.id);
        // A machine without a desktop is refused; one whose desktop is still starting is waited for by the relay.
        if (!instance.access?.desktop || !deps.driver.socketOf) throw new AppError('DESKTOP_UNAVAILABLE');
      },
    },
    (socket, req) => relayDesktop(socket, () => deps.driver.socketOf!(req.params.id, 'desktop'), req.params.id, findToken(req)!.token, accessGate),
  );

  // 账号中心's SSH public keys: each user's own (a child's keys open what the child may manage).
  const keys = { tags: ['账号'], onRequest: deps.auth.requireAuth };
  r.get(
    API.meSshKeys,
    { schema: { tags: keys.tags, summary: 'SSH 公钥列表', response: { 200: sshKeyListSchema } }, onRequest: keys.onRequest },
    async (req) => ({
      items: await deps.sshKeys.list(currentSession(req).user.id),
    }),
  );
  r.post(
    API.meSshKeys,
    { schema: { tags: keys.tags, summary: '添加 SSH 公钥', body: sshKeyCreateSchema, response: { 200: sshKeySchema } }, onRequest: keys.onRequest },
    async (req) => deps.sshKeys.add(currentSession(req).user.id, req.body),
  );
  r.delete(
    API.meSshKey,
    {
      schema: { tags: keys.tags, summary: '删除 SSH 公钥（用它登录的会话随即断开）', params: sshKeyIdParamsSchema, response: { 200: okSchema } },
      onRequest: keys.onRequest,
    },
    async (req) => {
      await deps.sshKeys.remove(currentSession(req).user.id, req.params.id);
      return { ok: true as const };
    },
  );
}

/** Pings a browser's WebSocket; one that stops answering (a laptop asleep) is dropped, and what it held with it. */
export function keepAlive(socket: WebSocket): void {
  let alive = true;
  socket.on('pong', () => (alive = true));
  const timer = setInterval(() => {
    if (!alive) return socket.terminate();
    alive = false;
    socket.ping();
  }, PING_MS);
  timer.unref();
  socket.once('close', () => clearInterval(timer));
}

/** The desktop starts with the machine and takes a second or two: a connection that comes early waits for it this long. */
const DESKTOP_START_MS = 15_000;

/** The browser's noVNC WebSocket to the machine's VNC socket, bytes both ways; a slow browser holds the desktop's output. */
function relayDesktop(client: WebSocket, openSocket: () => { path: string; close(): void } | null, instanceId: string, token: string, accessGate: AccessGate) {
  keepAlive(client);
  const live = { token, instanceId, close: () => client.close(TERMINAL_CLOSE.forbidden, 'access ended') };
  accessGate.watch(live);
  let vnc: net.Socket | null = null;
  const waiting: Buffer[] = [];
  client.on('message', (data) => (vnc ? vnc.write(data as Buffer) : waiting.push(data as Buffer)));
  client.on('close', () => {
    accessGate.forget(live);
    vnc?.destroy();
  });
  const deadline = Date.now() + DESKTOP_START_MS;
  const attempt = () => {
    const handle = openSocket();
    if (!handle) {
      if (client.readyState !== client.OPEN) return;
      if (Date.now() < deadline) setTimeout(attempt, 200);
      else client.close(1011, 'desktop unavailable');
      return;
    }
    const socket = net.createConnection(handle.path);
    socket.once('close', () => handle.close());
    socket.once('error', () => {
      if (client.readyState !== client.OPEN) return;
      if (Date.now() < deadline) setTimeout(attempt, 200);
      else client.close(1011, 'desktop unavailable');
    });
    socket.once('connect', () => {
      handle.close();
      if (client.readyState !== client.OPEN) return socket.destroy();
      vnc = socket;
      for (const chunk of waiting.splice(0)) socket.write(chunk);
      socket.on('data', (data) => {
        if (client.readyState !== client.OPEN) return;
        client.send(data, { binary: true }, () => {
          if (socket.isPaused() && client.bufferedAmount < LOW_WATER) socket.resume();
        });
        if (client.bufferedAmount > HIGH_WATER) socket.pause();
      });
      socket.on('close', () => client.close());
    });
  };
  attempt();
}
