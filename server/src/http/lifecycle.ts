/**
 * A replica's way out (SIGTERM from the orchestrator, a rolling update, a scale-down): readiness
 * turns 503 at once while the process keeps serving for a drain delay, so the load balancer takes
 * it out of rotation; then no new connections, every WebSocket is told 1012 "Service Restart" (the
 * client connects again and lands on a replica that stays), live streams (SSE subscriptions) end
 * (the browser falls back or reconnects), requests in flight finish, and the app's onClose hooks
 * run (jobs give their leases back; the database closes last). What still holds the close when the
 * timeout runs out is cut.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SOCKET_RESTART } from '@console/contract';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A response that lasts as long as the client stays (a subscription), not a request that ends on
     * its own: ended when the process stops rather than waited for. A browser's EventSource (a GET
     * that accepts text/event-stream) is one without saying so; a streamed answer (the model
     * gateway's POST) is not, and is waited for.
     */
    liveStream?: boolean;
  }
}

export interface StopOptions {
  /** How long readiness says 503 while requests are still served (SHUTDOWN_DRAIN_MS). */
  drainMs: number;
  /** From the start of the stop, how long requests in flight may take before they are cut (SHUTDOWN_TIMEOUT_MS). */
  timeoutMs: number;
}

export class Lifecycle {
  private state: 'running' | 'stopping' = 'running';
  private readonly streams = new Set<ServerResponse>();
  /** The apps whose WebSockets were told to go (the console's, the machines' listener): what a cut ends. */
  private readonly closing = new Set<FastifyInstance>();
  private cutting = false;

  /** Whether the process is on its way out: readiness answers 503, responses close their connection. */
  get stopping(): boolean {
    return this.state === 'stopping';
  }

  /**
   * On the console's app (before its routes): live streams are tracked; once stopping, every
   * response says `Connection: close` so keep-alive clients reconnect through the load balancer;
   * when the app closes, the live streams end.
   */
  register(app: FastifyInstance): void {
    app.addHook('onRequest', async (req, reply) => {
      if (!req.routeOptions.config?.liveStream && !isEventSource(req)) return;
      const res = reply.raw;
      this.streams.add(res);
      res.once('close', () => this.streams.delete(res));
    });
    app.addHook('onSend', async (_req, reply) => {
      if (this.stopping) reply.header('connection', 'close');
    });
    app.addHook('preClose', async () => {
      this.state = 'stopping';
      this.endStreams();
    });
  }

  /**
   * @fastify/websocket's `preClose` for an app (the console's and the machines' listener): each open
   * WebSocket is closed with 1012 and SOCKET_RESTART's reason, and no new one is taken.
   */
  socketsPreClose(): (this: FastifyInstance, done: () => void) => void {
    const closing = (app: FastifyInstance) => this.closingApp(app);
    return function (this: FastifyInstance, done: () => void) {
      const wss = this.websocketServer;
      for (const client of wss.clients) client.close(SOCKET_RESTART.code, SOCKET_RESTART.reason);
      wss.close();
      closing(this);
      done();
    };
  }

  private closingApp(app: FastifyInstance): void {
    this.beginStopping();
    this.closing.add(app);
    // An app that closes after the timeout ran out (the machines' listener closes after the console's) is cut at once.
    if (this.cutting) cutApp(app);
  }

  /** Readiness answers 503 from now on, and responses close their connection; the app goes on serving. */
  beginStopping(): void {
    this.state = 'stopping';
  }

  /**
   * The stop: readiness 503 now, `drainMs` of serving on, then `app.close()` (see the file's
   * comment). True when everything ended by itself within `timeoutMs`; false when something had to
   * be cut.
   */
  async stop(app: FastifyInstance, opts: StopOptions): Promise<boolean> {
    this.beginStopping();
    let clean = true;
    const cut = setTimeout(() => {
      clean = false;
      this.cut(app);
    }, opts.timeoutMs);
    try {
      if (opts.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, opts.drainMs));
      await app.close();
    } finally {
      clearTimeout(cut);
    }
    return clean;
  }

  private endStreams(): void {
    for (const res of this.streams) {
      // The route's loop may write once more before it notices the end: that write is dropped, not thrown.
      res.on('error', () => {});
      res.end();
      // An SSE response said keep-alive: the connection ends with it, so the close is not held by an idle socket.
      res.socket?.end();
    }
  }

  /** What outlived the timeout: sockets that never answered the close, streams, requests still running. */
  private cut(app: FastifyInstance): void {
    this.cutting = true;
    for (const res of this.streams) res.destroy();
    for (const each of new Set([app, ...this.closing])) cutApp(each);
  }
}

function cutApp(app: FastifyInstance): void {
  for (const client of app.websocketServer?.clients ?? []) client.terminate();
  app.server.closeAllConnections();
}

/** An EventSource's request: a GET that accepts text/event-stream (the browser sends exactly that). */
function isEventSource(req: FastifyRequest): boolean {
  return req.method === 'GET' && (req.headers.accept ?? '').includes('text/event-stream');
}
