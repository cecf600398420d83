import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SOCKET_RESTART } from '@console/contract';
import { TerminalConnection, type TerminalState } from './terminal';

/** A WebSocket the test drives: what the client sent, and the server's side of the conversation. */
class FakeSocket {
  readyState = 0;
  binaryType = '';
  sent: unknown[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.drop();
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  text(m: object) {
    this.onmessage?.({ data: JSON.stringify(m) });
  }
  bytes(s: string) {
    this.onmessage?.({ data: new TextEncoder().encode(s).buffer });
  }
  /** The connection ends; 1006 (abnormal: no close frame) as a network drop gives it. */
  drop(code = 1006, reason = '') {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
}

const SHELL = '11111111-2222-4333-8444-555555555555';

function connection() {
  const sockets: FakeSocket[] = [];
  const states: TerminalState[] = [];
  const notices: string[] = [];
  let output = '';
  const c = new TerminalConnection(
    'inst-1',
    { cols: 80, rows: 24 },
    { output: (d) => (output += new TextDecoder().decode(d)), state: (s) => states.push(s), notice: (t) => notices.push(t) },
    (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s as unknown as WebSocket;
    },
  );
  return { c, sockets, states, notices, output: () => output };
}

describe('TerminalConnection', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends keystrokes and sizes, and resumes the same shell from what it received after a drop', async () => {
    const t = connection();
    t.c.connect();
    const first = t.sockets[0]!;
    expect(first.url).toMatch(/\/instances\/inst-1\/terminal\?cols=80&rows=24$/);
    first.open();
    first.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    first.bytes('root@box:~# ');
    t.c.input('ls\r');
    t.c.resize(100, 30);
    expect(first.sent).toEqual([
      { type: 'input', data: 'ls\r' },
      { type: 'resize', cols: 100, rows: 30 },
    ]);

    first.drop();
    expect(t.states.at(-1)).toMatchObject({ phase: 'reconnecting' });
    await vi.advanceTimersByTimeAsync(300);
    const second = t.sockets[1]!;
    expect(second.url).toContain(`resume=${SHELL}&since=12`);
    expect(second.url).toContain('cols=100&rows=30');
    second.open();
    second.bytes('a.txt\r\n');
    second.text({ type: 'ready', id: SHELL, offset: 19, resumed: true });
    expect(t.states.at(-1)).toEqual({ phase: 'open' });
    expect(t.output()).toBe('root@box:~# a.txt\r\n');
    expect(t.notices).toEqual([]);
  });

  it('says how much output was lost when the shell printed more than it keeps while the connection was away', async () => {
    const t = connection();
    t.c.connect();
    t.sockets[0]!.open();
    t.sockets[0]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    t.sockets[0]!.drop();
    await vi.advanceTimersByTimeAsync(300);
    t.sockets[1]!.open();
    t.sockets[1]!.text({ type: 'ready', id: SHELL, offset: 400_000, resumed: true, lost: 140_000 });
    expect(t.notices).toEqual(['断线期间的输出较多，有 137 KB 超出缓存未能补回']);
  });

  it('says so when the old shell was gone and a new one opened', async () => {
    const t = connection();
    t.c.connect();
    t.sockets[0]!.open();
    t.sockets[0]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    t.sockets[0]!.drop();
    await vi.advanceTimersByTimeAsync(300);
    t.sockets[1]!.open();
    t.sockets[1]!.text({ type: 'ready', id: '99999999-2222-4333-8444-555555555555', offset: 0, resumed: false });
    expect(t.notices).toEqual(['原终端已关闭，已打开新的终端']);
  });

  it('stops at the server closing the shell, and at a refused first connection, until reconnect', async () => {
    const t = connection();
    t.c.connect();
    t.sockets[0]!.open();
    t.sockets[0]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    t.sockets[0]!.text({ type: 'closed', message: '登录已失效，连接已关闭' });
    t.sockets[0]!.drop();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(t.sockets).toHaveLength(1);
    expect(t.states.at(-1)).toEqual({ phase: 'closed', message: '登录已失效，连接已关闭' });

    t.c.reconnect();
    expect(t.sockets[1]!.url).not.toContain('resume=');
    t.sockets[1]!.drop(); // refused before it opened
    expect(t.states.at(-1)).toMatchObject({ phase: 'closed', message: expect.stringContaining('无法连接终端') });
  });

  it('reconnects when the console restarts (1012), saying so, however many retries a flaky network used before', async () => {
    const t = connection();
    t.c.connect();
    t.sockets[0]!.open();
    t.sockets[0]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    t.sockets[0]!.drop();
    // Four drops in a row: one retry left.
    for (let i = 1; i <= 4; i++) {
      await vi.advanceTimersByTimeAsync(10_000);
      t.sockets[i]!.drop();
    }
    await vi.advanceTimersByTimeAsync(10_000);
    t.sockets[5]!.open();
    t.sockets[5]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: true });
    // This replica stops: the socket is closed with 1012, and the next two connections find it gone.
    t.sockets[5]!.drop(SOCKET_RESTART.code, SOCKET_RESTART.reason);
    expect(t.states.at(-1)).toEqual({ phase: 'reconnecting', message: '控制台服务正在重启，正在重新连接…' });
    for (let i = 6; i <= 7; i++) {
      await vi.advanceTimersByTimeAsync(10_000);
      t.sockets[i]!.drop();
      expect(t.states.at(-1)).toMatchObject({ phase: 'reconnecting' });
    }
    // Another replica answers: a new shell there, and the terminal is open again.
    await vi.advanceTimersByTimeAsync(10_000);
    const next = t.sockets[8]!;
    expect(next.url).toContain(`resume=${SHELL}`);
    next.open();
    next.text({ type: 'ready', id: '99999999-2222-4333-8444-555555555555', offset: 0, resumed: false });
    expect(t.states.at(-1)).toEqual({ phase: 'open' });
    expect(t.notices).toEqual(['原终端已关闭，已打开新的终端']);
  });

  it('gives up after its retries and asks the user to reconnect', async () => {
    const t = connection();
    t.c.connect();
    t.sockets[0]!.open();
    t.sockets[0]!.text({ type: 'ready', id: SHELL, offset: 0, resumed: false });
    t.sockets[0]!.drop();
    for (let i = 1; i <= 5; i++) {
      await vi.advanceTimersByTimeAsync(10_000);
      t.sockets[i]!.drop();
    }
    expect(t.sockets).toHaveLength(6);
    expect(t.states.at(-1)).toEqual({ phase: 'closed', message: '网络连接已断开，请检查网络后点击「重新连接」' });
  });
});
