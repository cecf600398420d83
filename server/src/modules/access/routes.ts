/**
 * The web terminal's WebSocket: admitted like any request (session, the instance is the caller's
 * and running), then watched by the gate for as long as it stays open.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { WebSocket } from 'ws';
import { API, instanceIdParamsSchema, TERMINAL_CLOSE, terminalClientMessageSchema, terminalQuerySchema, type TerminalServerMessage } from '@console/contract';
import type { AppContext } from '../../context.js';
import { currentSession, findToken } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import type { TerminalSink } from './terminal.js';

/** Output queued for a slow reader above which the shell is held, and below which it goes on. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 128 * 1024;
const PING_MS = 30_000;

export async function accessRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { terminals, accessGate } = ctx;

  r.get(
    API.instanceTerminal,
    {
      websocket: true,
      schema: { tags: ['实例'], summary: '网页终端（WebSocket）', params: instanceIdParamsSchema, querystring: terminalQuerySchema },
      onRequest: ctx.auth.requireAuth,
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
      let shell: { id: string; offset: number } | null;
      let resumed = false;
      try {
        shell = q.resume ? terminals.resume(q.resume, instanceId, user.id, q.since, size, sink) : null;
        resumed = Boolean(shell);
        shell ??= terminals.open(instanceId, user.id, size, sink);
      } catch (e) {
        const refusal = e instanceof AppError ? e : new AppError('INSTANCE_NOT_RUNNING');
        send({ type: 'closed', message: refusal.message });
        socket.close(4000 + refusal.status, 'refused');
        return;
      }
      id = shell.id;
      send({ type: 'ready', id, offset: shell.offset, resumed });
      const live = { token: findToken(req)!.token, instanceId, close: (reason: string) => terminals.close({ id, sink }, reason) };
      accessGate.watch(live);
      // A peer that vanished without closing (a laptop asleep) is noticed and the shell detached.
      let alive = true;
      socket.on('pong', () => (alive = true));
      const heartbeat = setInterval(() => {
        if (!alive) return socket.terminate();
        alive = false;
        socket.ping();
      }, PING_MS);
      heartbeat.unref();
      socket.on('message', (raw, isBinary) => onMessage(raw, isBinary));
      socket.on('close', () => {
        clearInterval(heartbeat);
        accessGate.forget(live);
        terminals.detach(id, sink);
      });

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
}
