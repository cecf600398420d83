/**
 * The web terminal's limit per user (MAX_SHELLS_PER_USER) counted across the console's replicas
 * (issue 31 "Limits are shared"): each open shell is a row of `terminal_shells`, whichever replica
 * runs it. A user's opens take turns (an advisory lock per user), so opens at once on several
 * replicas cannot together pass the limit.
 *
 * A replica that dies leaves its rows behind. As the model gateway's holds (model/gateway.ts:
 * HOLD_TOUCH_MS, STALE_HOLD_MS), a live replica touches its shells' rows every SHELL_TOUCH_MS, and
 * a row untouched for STALE_SHELL_MS no longer counts: a dead replica's shells are free within half
 * a minute. Stale rows are deleted at the user's next open (under the lock) and, once a minute, by
 * any replica's purge — no job of the scheduler is needed.
 */
import { hostname } from 'node:os';
import { and, count, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { terminalShells } from './schema.js';

/** How often a live replica marks its shells alive. */
export const SHELL_TOUCH_MS = 5_000;
/** A shell untouched this long was a dead replica's (five missed touches). */
export const STALE_SHELL_MS = 25_000;
const PURGE_EVERY_MS = 60_000;

export interface ShellToCount {
  id: string;
  userId: string;
  instanceId: string;
}

/** Where the shells of each user are counted against the limit. */
export interface ShellSlots {
  /** Counts `shell` when its user has fewer than `max`; whether it was counted. */
  take(shell: ShellToCount, max: number): Promise<boolean>;
  /** The shell ended: it no longer counts. */
  give(id: string): void;
  /** Stops counting; resolves once the shells given back so far are no longer counted. */
  stop(): Promise<void>;
}

/** This process's shells only: right for a console of one process, and for the shells' own tests. */
export class LocalShellSlots implements ShellSlots {
  private readonly users = new Map<string, string>();

  async take(shell: ShellToCount, max: number): Promise<boolean> {
    let n = 0;
    for (const user of this.users.values()) if (user === shell.userId) n++;
    if (n >= max) return false;
    this.users.set(shell.id, shell.userId);
    return true;
  }

  give(id: string): void {
    this.users.delete(id);
  }

  async stop(): Promise<void> {}
}

/** Every replica's shells, in the database. */
export class SharedShellSlots implements ShellSlots {
  /** This process's shells, touched while they last. */
  private readonly mine = new Set<string>();
  private readonly replica = `${hostname()}:${process.pid}`;
  private readonly toucher: NodeJS.Timeout;
  private purgedAt = 0;
  private readonly giving = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      /** A touch or a delete that failed (the row goes stale and stops counting by itself). */
      onError: (e: unknown) => void;
    },
  ) {
    this.toucher = setInterval(() => void this.heartbeat().catch(deps.onError), SHELL_TOUCH_MS);
    this.toucher.unref();
  }

  async take(shell: ShellToCount, max: number): Promise<boolean> {
    const now = this.deps.clock.now();
    const taken = await this.deps.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`terminal-shells:${shell.userId}`}, 0))`);
      await tx.delete(terminalShells).where(and(eq(terminalShells.userId, shell.userId), lt(terminalShells.touchedAt, staleBefore(now))));
      const [open] = await tx.select({ n: count() }).from(terminalShells).where(eq(terminalShells.userId, shell.userId));
      if (Number(open?.n ?? 0) >= max) return false;
      await tx.insert(terminalShells).values({ ...shell, replica: this.replica, openedAt: now, touchedAt: now });
      return true;
    });
    if (taken) this.mine.add(shell.id);
    return taken;
  }

  give(id: string): void {
    this.mine.delete(id);
    const given: Promise<void> = this.deps.db
      .delete(terminalShells)
      .where(eq(terminalShells.id, id))
      .then(() => {}, this.deps.onError)
      .finally(() => this.giving.delete(given));
    this.giving.add(given);
  }

  /** Marks this replica's shells alive now (the timer does so every SHELL_TOUCH_MS); purges stale rows once a minute. */
  async heartbeat(): Promise<void> {
    const now = this.deps.clock.now();
    if (this.mine.size)
      await this.deps.db
        .update(terminalShells)
        .set({ touchedAt: now })
        .where(inArray(terminalShells.id, [...this.mine]));
    if (now.getTime() - this.purgedAt < PURGE_EVERY_MS) return;
    this.purgedAt = now.getTime();
    await this.deps.db.delete(terminalShells).where(lt(terminalShells.touchedAt, staleBefore(now)));
  }

  /** Stops touching; the shells ended before (Terminals.stop) are given back by then. */
  async stop(): Promise<void> {
    clearInterval(this.toucher);
    await Promise.all([...this.giving]);
  }
}

function staleBefore(now: Date): Date {
  return new Date(now.getTime() - STALE_SHELL_MS);
}
