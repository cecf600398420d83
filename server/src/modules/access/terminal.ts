/**
 * The web terminal's shells: a login shell inside the instance (the compute driver's `shell`) under
 * a pty, attached to one WebSocket at a time. A dropped connection does not end the shell: for
 * `keepAliveMs` the same user may attach again and gets what the shell printed meanwhile (output is
 * numbered by byte offset; the last `scrollbackBytes` are kept), so a network blip loses nothing.
 */
import { randomUUID } from 'node:crypto';
import { spawn, type IPty } from 'node-pty';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import { LocalShellSlots, type ShellSlots } from './terminal-slots.js';

export interface TerminalSink {
  /** Output of the shell, in order. */
  output(data: Buffer): void;
  /** The shell ended (exit) or was ended (closed by the gate, the machine stopped). */
  ended(reason: string): void;
}

interface Shell {
  id: string;
  instanceId: string;
  userId: string;
  pty: IPty;
  /** Output kept for a reattach, and the offset of its first byte. */
  kept: Buffer[];
  keptFrom: number;
  /** Bytes of output so far. */
  offset: number;
  sink: TerminalSink | null;
  expiry: NodeJS.Timeout | null;
  /** Told when a detached shell stops waiting (resumed or ended). */
  leftWaiting: (() => void) | null;
}

export interface TerminalOptions {
  keepAliveMs?: number;
  scrollbackBytes?: number;
  /** Where each user's shells are counted against the limit: every replica's (SharedShellSlots), or this process's. */
  slots?: ShellSlots;
}

/** Shells one user may have open at once (attached or waiting for a reattach), on all replicas together: each is a process tree in a machine. */
export const MAX_SHELLS_PER_USER = 10;

export class Terminals {
  private readonly shells = new Map<string, Shell>();
  private readonly keepAliveMs: number;
  private readonly scrollbackBytes: number;
  private readonly slots: ShellSlots;
  /** Where trouble counting the shells is told (the app's logger, set by app.ts); silent until set. */
  log: (message: string) => void = () => {};

  constructor(
    private readonly driver: ComputeDriver,
    opts: TerminalOptions = {},
  ) {
    this.keepAliveMs = opts.keepAliveMs ?? 60_000;
    this.scrollbackBytes = opts.scrollbackBytes ?? 256 * 1024;
    this.slots = opts.slots ?? new LocalShellSlots();
  }

  /** Whether the driver offers shells at all (the detail page shows the terminal only then). */
  get offered(): boolean {
    return typeof this.driver.shell === 'function';
  }

  /**
   * Starts a login shell in the instance and attaches `sink`; the shell's id and output offset 0.
   * Refused when the user has MAX_SHELLS_PER_USER open on all replicas together.
   */
  async open(instanceId: string, userId: string, size: { cols: number; rows: number }, sink: TerminalSink): Promise<{ id: string; offset: number }> {
    if (!this.driver.shell) throw new AppError('TERMINAL_UNAVAILABLE');
    if (!this.driver.shell(instanceId)) throw new AppError('INSTANCE_NOT_RUNNING');
    const id = randomUUID();
    await this.takeSlot({ id, userId, instanceId });
    // Asked again after the count: the machine may have stopped meanwhile.
    const line = this.driver.shell(instanceId);
    let pty: IPty;
    try {
      if (!line) throw new AppError('INSTANCE_NOT_RUNNING');
      pty = spawn(line.file, line.args, { name: 'xterm-256color', cols: size.cols, rows: size.rows, env: line.env, encoding: null });
    } catch (e) {
      this.slots.give(id);
      throw e;
    }
    const shell: Shell = { id, instanceId, userId, pty, kept: [], keptFrom: 0, offset: 0, sink, expiry: null, leftWaiting: null };
    this.shells.set(shell.id, shell);
    pty.onData((chunk) => this.output(shell, Buffer.from(chunk as unknown as Uint8Array)));
    pty.onExit(({ exitCode }) => this.end(shell, this.exitReason(instanceId, exitCode), true));
    return { id: shell.id, offset: 0 };
  }

  /**
   * Attaches `sink` to a shell the same user left, replaying its output after `since`; null when
   * the shell is gone (ended, expired, another user's or another instance's).
   */
  resume(
    id: string,
    instanceId: string,
    userId: string,
    since: number,
    size: { cols: number; rows: number },
    sink: TerminalSink,
  ): { id: string; offset: number; lost: number } | null {
    const shell = this.shells.get(id);
    if (!shell || shell.instanceId !== instanceId || shell.userId !== userId) return null;
    this.resize(id, size.cols, size.rows); // the window may have changed while it was away
    if (shell.expiry) clearTimeout(shell.expiry);
    shell.expiry = null;
    this.stopWaiting(shell);
    shell.sink?.ended('终端已在其他窗口打开');
    shell.sink = sink;
    const from = Math.max(since, shell.keptFrom);
    const missed = Buffer.concat(shell.kept).subarray(from - shell.keptFrom);
    if (missed.length) sink.output(missed);
    return { id: shell.id, offset: shell.offset, lost: Math.max(0, Math.min(shell.keptFrom, shell.offset) - since) };
  }

  // The pty may have closed a moment before its exit is reported: a late keystroke or resize is dropped.
  input(id: string, data: string): void {
    try {
      this.shells.get(id)?.pty.write(data);
    } catch {
      /* ended */
    }
  }

  resize(id: string, cols: number, rows: number): void {
    try {
      this.shells.get(id)?.pty.resize(cols, rows);
    } catch {
      /* ended */
    }
  }

  /** The connection cannot take output as fast as the shell makes it: hold the shell until it can. */
  pause(id: string): void {
    this.shells.get(id)?.pty.pause();
  }

  unpause(id: string): void {
    this.shells.get(id)?.pty.resume();
  }

  /**
   * The connection dropped: the shell waits `keepAliveMs` for a reattach; `leftWaiting` is told when
   * it stops waiting (resumed or ended). False when the connection no longer held the shell.
   */
  detach(id: string, sink: TerminalSink, leftWaiting?: () => void): boolean {
    const shell = this.shells.get(id);
    if (!shell || shell.sink !== sink) return false;
    shell.sink = null;
    shell.leftWaiting = leftWaiting ?? null;
    shell.pty.resume(); // output goes to the kept scrollback meanwhile
    shell.expiry = setTimeout(() => this.end(shell, '终端长时间未连接，已关闭'), this.keepAliveMs);
    shell.expiry.unref();
    return true;
  }

  /**
   * Ends shells at once (the gate closed their connection, the server stops); with `sink`, only if
   * that connection still holds the shell (an old connection's lapse must not end a resumed shell);
   * with `detached`, only while no connection holds it.
   */
  close(filter: { id?: string; sink?: TerminalSink; detached?: boolean }, reason: string): void {
    for (const shell of [...this.shells.values()]) {
      if ((filter.id && shell.id !== filter.id) || (filter.sink && shell.sink !== filter.sink) || (filter.detached && shell.sink)) continue;
      this.end(shell, reason);
    }
  }

  /** How many shells are open (tests). */
  get size(): number {
    return this.shells.size;
  }

  /** Ends every shell; resolves once they no longer count against their users' limits. */
  async stop(): Promise<void> {
    this.close({}, '服务器正在停止');
    await this.slots.stop();
  }

  private async takeSlot(shell: { id: string; userId: string; instanceId: string }) {
    let taken: boolean;
    try {
      taken = await this.slots.take(shell, MAX_SHELLS_PER_USER);
    } catch (e) {
      this.log(`网页终端：无法读取账号已打开的终端数（${(e as Error).message}），已拒绝打开新终端`);
      throw new AppError('TERMINAL_BUSY');
    }
    if (!taken) throw new AppError('TERMINAL_LIMIT');
  }

  private exitReason(instanceId: string, exitCode: number): string {
    if (!this.driver.shell?.(instanceId)) return '实例已关机或正在重启，终端已关闭；开机后可重新打开';
    return exitCode === 0 ? '终端已退出，可点击「重新连接」打开新的终端' : `终端已退出（退出码 ${exitCode}），可点击「重新连接」打开新的终端`;
  }

  private stopWaiting(shell: Shell) {
    const told = shell.leftWaiting;
    shell.leftWaiting = null;
    told?.();
  }

  private output(shell: Shell, chunk: Buffer) {
    shell.offset += chunk.length;
    shell.kept.push(chunk);
    let keptBytes = shell.offset - shell.keptFrom;
    while (keptBytes - shell.kept[0]!.length >= this.scrollbackBytes) {
      const dropped = shell.kept.shift()!;
      shell.keptFrom += dropped.length;
      keptBytes -= dropped.length;
    }
    shell.sink?.output(chunk);
  }

  private end(shell: Shell, reason: string, exited = false) {
    if (!this.shells.delete(shell.id)) return;
    this.slots.give(shell.id);
    if (shell.expiry) clearTimeout(shell.expiry);
    this.stopWaiting(shell);
    // Closing the pty hangs up the shell inside the machine (nsenter's child, out of reach of a signal
    // to nsenter). An exited pty's pid may already belong to another process: never signal it then.
    if (!exited) hangUp(shell.pty);
    shell.sink?.ended(reason);
    shell.sink = null;
  }
}

/** Closes the pty's master side (node-pty's destroy, missing from its typings): the session inside gets SIGHUP. */
function hangUp(pty: IPty) {
  try {
    (pty as IPty & { destroy(): void }).destroy();
  } catch {
    /* already ended */
  }
}
