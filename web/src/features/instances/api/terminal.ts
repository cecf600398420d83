import { API, SOCKET_RESTART, terminalServerMessageSchema, type TerminalClientMessage } from '@console/contract';
import { BASES } from '../../../api/bases';

/** Where the terminal is: the page shows a status line and a 重新连接 button from it. */
export type TerminalPhase = 'connecting' | 'open' | 'reconnecting' | 'closed';
export interface TerminalState {
  phase: TerminalPhase;
  /** Why it closed, or what happened (Chinese, says what to do next). */
  message?: string;
}

export interface TerminalEvents {
  output(data: Uint8Array): void;
  state(state: TerminalState): void;
  /** A line for the terminal itself (a new shell after a reconnect). */
  notice(text: string): void;
}

/** WebSocket.OPEN (the global is not there in every test environment). */
const SOCKET_OPEN = 1;
/** Waits before each automatic reconnect after a dropped connection; then the user decides. */
const RETRY_DELAYS_MS = [300, 1000, 2000, 4000, 8000];

/** A WebSocket address on the console's API (the session cookie goes with it). */
export function socketUrl(path: string, query: Record<string, string | number> = {}): string {
  const origin = BASES.main.url || window.location.origin;
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  return `${origin.replace(/^http/, 'ws')}${path}${qs.size ? `?${qs}` : ''}`;
}

export function terminalUrl(instanceId: string, query: Record<string, string | number>): string {
  return socketUrl(API.instanceTerminal.replace(':id', encodeURIComponent(instanceId)), query);
}

export function desktopUrl(instanceId: string): string {
  return socketUrl(API.instanceDesktop.replace(':id', encodeURIComponent(instanceId)));
}

/**
 * One web terminal's connection (API.instanceTerminal; the session cookie authenticates it). A
 * dropped connection is resumed automatically — the same shell, with what it printed meanwhile —
 * a few times; a shell that ended or a refusal is final until `reconnect`. A console that is
 * stopping (a new version, a replica going away) closes with 1012: that is never final, the retries
 * start over and say so, and the load balancer sends the next connection to a replica that stays.
 */
export class TerminalConnection {
  private socket: WebSocket | null = null;
  private shellId: string | null = null;
  /** Output offset of the shell received so far (what a resume asks to continue from). */
  private received = 0;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private disposed = false;

  constructor(
    private readonly instanceId: string,
    private size: { cols: number; rows: number },
    private readonly events: TerminalEvents,
    private readonly makeSocket: (url: string) => WebSocket = (url) => new WebSocket(url),
  ) {}

  connect(): void {
    this.events.state({ phase: this.shellId ? 'reconnecting' : 'connecting' });
    const query: Record<string, string | number> = { cols: this.size.cols, rows: this.size.rows };
    if (this.shellId) Object.assign(query, { resume: this.shellId, since: this.received });
    const socket = this.makeSocket(terminalUrl(this.instanceId, query));
    socket.binaryType = 'arraybuffer';
    this.socket = socket;
    let opened = false;
    let final: string | null = null;
    socket.onopen = () => (opened = true);
    socket.onmessage = (e: MessageEvent) => {
      if (typeof e.data !== 'string') {
        const bytes = new Uint8Array(e.data as ArrayBuffer);
        this.received += bytes.length;
        this.events.output(bytes);
        return;
      }
      const m = terminalServerMessageSchema.safeParse(safeJson(e.data));
      if (!m.success) return;
      if (m.data.type === 'ready') {
        if (this.shellId && !m.data.resumed) this.events.notice('原终端已关闭，已打开新的终端');
        if (m.data.lost > 0) this.events.notice(`断线期间的输出较多，有 ${Math.ceil(m.data.lost / 1024)} KB 超出缓存未能补回`);
        this.shellId = m.data.id;
        this.received = m.data.offset;
        this.attempt = 0;
        this.events.state({ phase: 'open' });
      } else if (m.data.type === 'closed') final = m.data.message;
    };
    socket.onclose = (e: CloseEvent) => {
      if (this.socket !== socket || this.disposed) return;
      this.socket = null;
      if (e?.code === SOCKET_RESTART.code) {
        this.attempt = 0;
        return this.retry('控制台服务正在重启，正在重新连接…');
      }
      if (final !== null) return this.finish(final);
      // A first connection refused is final (not running, not allowed); a resume that fails is retried like a drop.
      if (!opened && !this.shellId) return this.finish('无法连接终端：实例可能已关机，或登录已失效。请刷新页面确认实例状态后重试');
      this.retry();
    };
  }

  input(data: string): void {
    this.send({ type: 'input', data });
  }

  resize(cols: number, rows: number): void {
    this.size = { cols, rows };
    this.send({ type: 'resize', cols, rows });
  }

  /** A fresh start after a final close (the 重新连接 button): a new shell. */
  reconnect(): void {
    this.cancelRetry();
    this.socket?.close();
    this.socket = null;
    this.shellId = null;
    this.received = 0;
    this.attempt = 0;
    this.connect();
  }

  dispose(): void {
    this.disposed = true;
    this.cancelRetry();
    this.socket?.close();
    this.socket = null;
  }

  private send(m: TerminalClientMessage) {
    if (this.socket?.readyState === SOCKET_OPEN) this.socket.send(JSON.stringify(m));
  }

  private retry(why?: string) {
    const delay = RETRY_DELAYS_MS[this.attempt++];
    if (delay === undefined) return this.finish('网络连接已断开，请检查网络后点击「重新连接」');
    this.events.state({ phase: 'reconnecting', message: why ?? `连接已断开，正在重新连接（第 ${this.attempt} 次）…` });
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  private finish(message: string) {
    this.shellId = null;
    this.events.state({ phase: 'closed', message });
  }

  private cancelRetry() {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
