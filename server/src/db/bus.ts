/**
 * Events every replica hears: a session revoked, a child's rights changed, a training job moved. On
 * PostgreSQL each process keeps one connection of its own that LISTENs on one channel, and a publish
 * is a `pg_notify` on it, so a browser connected to any replica is told; on PGlite (one process) the
 * events stay in the process. Payloads are small (ids): a receiver reads the database again.
 *
 * A publisher's own subscribers are told at once, in the process; the notification coming back to
 * its own LISTEN is dropped (it carries the process's id), so nothing is delivered twice. An event
 * published while another replica's listener is reconnecting is lost to that replica: subscribers
 * keep a slower look of their own (the access gate's recheck, the progress stream's read).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** The one PostgreSQL channel the bus's events travel on (their own channel is inside the payload). */
export const BUS_CHANNEL = 'console_bus';
/** pg_notify refuses a payload of 8000 bytes or more; room is kept for the envelope. */
const MAX_PAYLOAD_BYTES = 7000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 10_000;

export type BusHandler = (payload: string) => void;

export interface Bus {
  /** Tells every subscriber of `channel`, in this process and (on PostgreSQL) in every other. Never throws. */
  publish(channel: string, payload?: string): void;
  /** Calls `handler` with each event's payload; returns the unsubscribe. */
  subscribe(channel: string, handler: BusHandler): () => void;
  /** Where problems of the listener connection are told (the app's logger); silent until set. */
  log: (level: 'info' | 'warn', message: string) => void;
  close(): Promise<void>;
}

/** The subscribers of a process, by channel. */
class Subscribers {
  private readonly byChannel = new Map<string, Set<BusHandler>>();
  constructor(private readonly onError: (e: unknown) => void) {}

  add(channel: string, handler: BusHandler): () => void {
    let set = this.byChannel.get(channel);
    if (!set) this.byChannel.set(channel, (set = new Set()));
    // Each subscription is its own entry: the same function subscribed twice is told twice, until each unsubscribes.
    const entry: BusHandler = (p) => handler(p);
    set.add(entry);
    return () => {
      set.delete(entry);
      if (!set.size && this.byChannel.get(channel) === set) this.byChannel.delete(channel);
    };
  }

  /** Delivers after the publisher's own statement (a handler never runs inside `publish`). */
  deliver(channel: string, payload: string): void {
    const set = this.byChannel.get(channel);
    if (!set?.size) return;
    queueMicrotask(() => {
      for (const handler of [...set]) {
        try {
          handler(payload);
        } catch (e) {
          this.onError(e);
        }
      }
    });
  }
}

/** The bus of an embedded database: one process, events in memory. */
export function localBus(): Bus {
  const bus: Bus = {
    log: () => {},
    publish: (channel, payload = '') => subs.deliver(channel, payload),
    subscribe: (channel, handler) => subs.add(channel, handler),
    close: async () => {},
  };
  const subs = new Subscribers((e) => bus.log('warn', `事件处理出错：${(e as Error).message}`));
  return bus;
}

interface Envelope {
  /** The publishing process. */
  o: string;
  c: string;
  p: string;
}

/**
 * The bus of a PostgreSQL database: `pool` publishes, a connection of its own (to `url`) listens.
 * Resolves once the listener listens, or after its first failed attempt (it keeps trying, with backoff).
 */
export async function postgresBus(url: string, pool: pg.Pool): Promise<Bus> {
  const origin = randomUUID();
  let closed = false;
  let client: pg.Client | null = null;
  let retryMs = RETRY_MIN_MS;
  let retryTimer: NodeJS.Timeout | null = null;
  let connectedBefore = false;

  const bus: Bus = {
    log: () => {},
    publish(channel, payload = '') {
      subs.deliver(channel, payload);
      const message = JSON.stringify({ o: origin, c: channel, p: payload } satisfies Envelope);
      if (Buffer.byteLength(message) > MAX_PAYLOAD_BYTES) {
        bus.log('warn', `事件 ${channel} 过大（${Buffer.byteLength(message)} 字节），只在本进程送达`);
        return;
      }
      pool.query('select pg_notify($1, $2)', [BUS_CHANNEL, message]).catch((e: Error) => {
        bus.log('warn', `事件 ${channel} 未能通知其他副本（${e.message}）：它们稍后自行读取`);
      });
    },
    subscribe: (channel, handler) => subs.add(channel, handler),
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
  const subs = new Subscribers((e) => bus.log('warn', `事件处理出错：${(e as Error).message}`));

  const onNotification = (n: pg.Notification) => {
    if (n.channel !== BUS_CHANNEL || !n.payload) return;
    let e: Envelope;
    try {
      e = JSON.parse(n.payload) as Envelope;
    } catch {
      return;
    }
    if (e.o === origin || typeof e.c !== 'string') return; // our own: delivered when published
    subs.deliver(e.c, typeof e.p === 'string' ? e.p : '');
  };

  const lost = (c: pg.Client, why: string) => {
    if (client !== c) return; // already handled ('error' and 'end' both come)
    client = null;
    c.end().catch(() => {});
    if (closed) return;
    bus.log('warn', `跨副本事件的监听连接断开（${why}），${retryMs} ms 后重连`);
    schedule();
  };

  const schedule = () => {
    if (closed || retryTimer) return;
    const wait = retryMs;
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, wait);
    retryTimer.unref();
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    const c = new pg.Client({ connectionString: url, application_name: `console-bus-${origin.slice(0, 8)}` });
    c.on('error', (e) => lost(c, e.message));
    c.on('end', () => lost(c, '连接已结束'));
    c.on('notification', onNotification);
    try {
      await c.connect();
      await c.query(`listen ${BUS_CHANNEL}`);
    } catch (e) {
      c.removeAllListeners('end');
      c.end().catch(() => {});
      if (closed) return;
      bus.log('warn', `跨副本事件的监听连接未能建立（${(e as Error).message}），${retryMs} ms 后重试`);
      connectedBefore = true; // tell when it comes
      schedule();
      return;
    }
    if (closed) {
      await c.end().catch(() => {});
      return;
    }
    client = c;
    retryMs = RETRY_MIN_MS;
    if (connectedBefore) bus.log('info', '跨副本事件的监听连接已恢复');
    connectedBefore = true;
  };

  await connect();
  return bus;
}
