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
      const sink: TerminalSink = {
        output: (data) => socket.readyState === socket.OPEN && socket.send(data, { binary: true }),
        ended: (message) => {
          send({ type: 'closed', message });
          socket.close(TERMINAL_CLOSE.ended, 'ended');
        },
      };
      const user = currentSession(req).user;
      const { id: instanceId } = req.params;
      const q = req.query;
      let shell: { id: string; offset: number } | null;
      let resumed = false;
      try {
        shell = q.resume ? terminals.resume(q.resume, instanceId, user.id, q.since, sink) : null;
        resumed = Boolean(shell);
        shell ??= terminals.open(instanceId, user.id, { cols: q.cols, rows: q.rows }, sink);
      } catch (e) {
        const refusal = e instanceof AppError ? e : new AppError('INSTANCE_NOT_RUNNING');
        send({ type: 'closed', message: refusal.message });
        socket.close(4000 + refusal.status, 'refused');
        return;
      }
      const id = shell.id;
      send({ type: 'ready', id, offset: shell.offset, resumed });
      const live = { token: findToken(req)!.token, instanceId, close: (reason: string) => terminals.close({ id }, reason) };
      accessGate.watch(live);
      socket.on('message', (raw, isBinary) => onMessage(raw, isBinary));
      socket.on('close', () => {
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
