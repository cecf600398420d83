/**
 * Pre-authorisation of a payer's cash for model calls, per process: the gateway's hot path without
 * a database round trip.
 *
 * - A float moves a slice of the payer's cash to the platform's hold account in one ledger
 *   transfer (`model:float:<id>:fund:<n>`): FLOAT_CALLS times the estimate of the call that needed
 *   it, or only what that call needs when the cash cannot give more. ledger_post refuses to take the
 *   cash below zero, so floats never overdraw it; a refusal is the caller's 402.
 * - Each call reserves its estimate from its payer's float in memory and, when it ends, is charged
 *   its exact cost (at most its estimate plus what the float has left); the rest goes back to the
 *   float. The calls that ended are logged (`model_calls`) and their sum moved from the hold to
 *   revenue in one transaction per batch (`…:flush:<n>`), FLOAT_FLUSH_MS after the first of them.
 * - A float with no call for FLOAT_IDLE_MS is flushed and closed: what was not charged goes back to
 *   the cash (`…:close`). `drain` closes every float (tests, shutdown).
 * - A process that dies leaves its floats open and untouched; after STALE_FLOAT_MS the sweeper gives
 *   back `funded - charged` (`…:sweep`). The calls that process had answered but not yet logged are
 *   not charged — the payer keeps that money, at most FLOAT_FLUSH_MS of calls. A live process touches
 *   its floats every FLOAT_TOUCH_MS so a long call never looks dead.
 * - Every batch carries its number (`flushes`): a batch whose commit was lost and is tried again is
 *   recognised and not counted twice; a batch for a float the sweeper already gave back is logged at
 *   no cost.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { LedgerService } from '../ledger/index.js';
import { modelCalls, modelFloats } from './schema.js';

/** A float is funded for this many estimates of the call that opened or topped it up. */
export const FLOAT_CALLS = 16;
/** Calls that ended are logged and charged at most this long afterwards. */
export const FLOAT_FLUSH_MS = 200;
/** A batch is written at once when this many calls wait. */
export const FLOAT_FLUSH_ROWS = 200;
/** A float with no call for this long gives the rest back. */
export const FLOAT_IDLE_MS = 1_000;
/** A batch whose transaction fails is tried this many times, FLOAT_IDLE_MS apart. */
export const FLOAT_WRITE_TRIES = 30;
/** How often a live process marks its open floats as alive (as gateway.ts's HOLD_TOUCH_MS its open calls). */
export const FLOAT_TOUCH_MS = 5_000;
/**
 * An open float untouched this long belongs to a process that died (five missed touches, as
 * gateway.ts's STALE_HOLD_MS): a dead replica's floats go back to the cash within a minute (issue 31).
 */
export const STALE_FLOAT_MS = 25_000;

export type CallRow = typeof modelCalls.$inferInsert;

/** The payer's cash could not fund the call's estimate. */
export class FloatRefused extends Error {
  constructor(readonly detail: string | undefined) {
    super('insufficient cash for the float');
  }
}

class Float {
  readonly id = randomUUID();
  funded = 0n;
  /** Estimates of the calls under way. */
  reserved = 0n;
  /** Charged to the calls that ended, logged or not. */
  charged = 0n;
  fundings = 0;
  /** Batches queued so far: each batch's number, written with it. */
  batches = 0;
  inFlight = 0;
  pending: CallRow[] = [];
  /** Closed, or given back by the sweeper: takes no new calls. */
  done = false;
  /** A batch could not be written: nothing more is, the sweeper gives the float back. */
  abandoned = false;
  funding: Promise<void> | null = null;
  writing: Promise<void> = Promise.resolve();
  flushTimer: NodeJS.Timeout | null = null;
  idleTimer: NodeJS.Timeout | null = null;
  lastUse = 0;

  constructor(readonly payerId: string) {}

  get available(): bigint {
    return this.funded - this.reserved - this.charged;
  }
}

export interface FloatReservation {
  float: Float;
  held: bigint;
}

export class FloatPool {
  /** Each payer's float taking new calls. */
  private readonly floats = new Map<string, Float>();
  /** Every float with calls under way or writes to come, current or not. */
  private readonly live = new Set<Float>();
  private readonly toucher: NodeJS.Timeout;

  constructor(private readonly deps: { db: Db; clock: Clock; ledger: Pick<LedgerService, 'holds'>; onError: (e: unknown) => void }) {
    this.toucher = setInterval(() => void this.touchAll().catch(deps.onError), FLOAT_TOUCH_MS);
    this.toucher.unref();
  }

  /** Reserves `held` for one call from the payer's float, funding or topping it up when it falls short. */
  async reserve(payerId: string, actorId: string, held: bigint): Promise<FloatReservation> {
    for (;;) {
      let float = this.floats.get(payerId);
      if (!float || float.done) {
        float = new Float(payerId);
        this.floats.set(payerId, float);
        this.live.add(float);
      }
      if (float.available >= held) {
        float.reserved += held;
        float.inFlight++;
        this.stopIdle(float);
        return { float, held };
      }
      // One top-up at a time per float; the others wait for it and look again.
      const f = float;
      const mine = !f.funding;
      f.funding ??= this.fund(f, actorId, held).finally(() => (f.funding = null));
      try {
        await f.funding;
      } catch (e) {
        // Another call's top-up was refused: this one may need less, and tries its own.
        if (!mine) continue;
        if (f.fundings === 0 && f.inFlight === 0) this.forget(f);
        else if (f.inFlight === 0 && !f.done) this.idleLater(f);
        throw e;
      }
    }
  }

  /**
   * Ends a reserved call at its exact cost (no more than its estimate and what the float has left)
   * and queues its log row; returns what it was charged.
   */
  finish(r: FloatReservation, exact: bigint, row: CallRow): bigint {
    const f = r.float;
    f.reserved -= r.held;
    // The call's own estimate is part of `available` again: more than it only if the float has it.
    const charged = exact < f.available ? exact : f.available;
    f.charged += charged;
    f.inFlight--;
    f.lastUse = performance.now();
    f.pending.push({ ...row, cost: charged, held: r.held });
    if (f.pending.length >= FLOAT_FLUSH_ROWS) this.write(f, false);
    else if (!f.flushTimer) {
      f.flushTimer = setTimeout(() => this.write(f, false), FLOAT_FLUSH_MS);
      f.flushTimer.unref();
    }
    if (f.inFlight === 0) this.idleLater(f);
    return charged;
  }

  /** Writes every float's waiting calls and closes every float (tests, shutdown). */
  async drain(): Promise<void> {
    for (const f of [...this.live]) {
      if (f.funding) await f.funding.catch(() => {});
      this.write(f, f.inFlight === 0 && !f.done);
      await f.writing;
    }
  }

  stop(): void {
    clearInterval(this.toucher);
  }

  /** Takes no new calls (the sweeper gave it back). */
  private retire(f: Float) {
    f.done = true;
    if (this.floats.get(f.payerId) === f) this.floats.delete(f.payerId);
    if (f.inFlight === 0 && !f.pending.length) void f.writing.then(() => f.inFlight === 0 && !f.pending.length && this.live.delete(f));
  }

  /** A float that never held money: nothing to write. */
  private forget(f: Float) {
    f.done = true;
    if (this.floats.get(f.payerId) === f) this.floats.delete(f.payerId);
    this.live.delete(f);
  }

  private stopIdle(f: Float) {
    if (f.idleTimer) clearTimeout(f.idleTimer);
    f.idleTimer = null;
  }

  private idleLater(f: Float) {
    this.stopIdle(f);
    f.idleTimer = setTimeout(() => {
      f.idleTimer = null;
      if (f.funding) {
        // A top-up is under way: look again once it has ended (refused, it takes no call).
        void f.funding.catch(() => {}).then(() => f.inFlight === 0 && !f.done && this.idleLater(f));
        return;
      }
      if (f.inFlight === 0 && !f.done) this.write(f, true);
    }, FLOAT_IDLE_MS);
    f.idleTimer.unref();
  }

  /** Tops the float up to FLOAT_CALLS estimates of the call, or only to what the call needs when the cash is short. */
  private async fund(f: Float, actorId: string, held: bigint): Promise<void> {
    let refused: unknown;
    const lacking = held - f.available;
    for (const amount of [held * BigInt(FLOAT_CALLS) - f.available, lacking]) {
      try {
        if (await this.post(f, actorId, amount)) return;
        // The sweeper gave this float back (its process was presumed dead): the next look opens a new one.
        this.retire(f);
        return;
      } catch (e) {
        if (!(e instanceof AppError && e.is('INSUFFICIENT_BALANCE'))) throw e;
        refused = e;
      }
    }
    throw new FloatRefused((refused as AppError).detail);
  }

  private async post(f: Float, actorId: string, amount: bigint): Promise<boolean> {
    const now = this.deps.clock.now();
    const n = f.fundings + 1;
    const record =
      n === 1
        ? this.deps.db
            .insert(modelFloats)
            .values({ id: f.id, payerId: f.payerId, funded: amount, status: 'open', createdAt: now, touchedAt: now })
            .returning({ id: modelFloats.id })
        : this.deps.db
            .update(modelFloats)
            .set({ funded: sql`${modelFloats.funded} + ${amount}`, touchedAt: now })
            .where(and(eq(modelFloats.id, f.id), eq(modelFloats.status, 'open')))
            .returning({ id: modelFloats.id });
    const hold = {
      // A key of its own per attempt: an attempt whose answer was lost may have committed, and a
      // second one under the same key would move no money while its funded increase stayed.
      key: `model:float:${f.id}:fund:${randomUUID()}`,
      kind: 'model_hold' as const,
      memo: '大模型调用预扣',
      actorId,
      holder: f.id,
      payerId: f.payerId,
      amount,
    };
    if (!(await this.deps.ledger.holds.holdAlongside(hold, record.getSQL()))) return false;
    f.fundings = n;
    f.funded += amount;
    return true;
  }

  /** Queues a write of the float's waiting calls (and its close) after the writes before it. */
  private write(f: Float, close: boolean): void {
    if (f.flushTimer) clearTimeout(f.flushTimer);
    f.flushTimer = null;
    if (close) {
      f.done = true;
      this.stopIdle(f);
      if (this.floats.get(f.payerId) === f) this.floats.delete(f.payerId);
    }
    const rows = f.pending;
    f.pending = [];
    if (rows.length || close) {
      const batch = ++f.batches;
      f.writing = f.writing.then(() => this.writeUntilDone(f, batch, rows, close));
    }
    if (f.done && f.inFlight === 0) void f.writing.then(() => f.pending.length === 0 && f.inFlight === 0 && this.live.delete(f));
  }

  /**
   * A batch that fails (the database away) is tried again with its number, before any later batch;
   * the money stays in the hold meanwhile. After FLOAT_WRITE_TRIES it is given up and the float
   * abandoned: nothing more of it is written (a later batch would pass over this one), it is no longer
   * touched, and the sweeper gives back what was not charged — those calls are free.
   */
  private async writeUntilDone(f: Float, batch: number, rows: CallRow[], close: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writeBatch(f, batch, rows, close);
      } catch (e) {
        this.deps.onError(e);
        if (attempt >= FLOAT_WRITE_TRIES) {
          // Left to the sweeper as a dead process's float: no later batch may commit past this one.
          f.abandoned = true;
          this.retire(f);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, FLOAT_IDLE_MS).unref());
      }
    }
  }

  /** One transaction: the calls' rows, the float's charged sum, the hold to revenue (and on close the rest back to cash). */
  private async writeBatch(f: Float, batch: number, rows: CallRow[], close: boolean): Promise<void> {
    if (f.abandoned) return;
    const cost = rows.reduce((n, r) => n + (r.cost ?? 0n), 0n);
    const now = this.deps.clock.now();
    await this.deps.db.transaction(async (tx) => {
      const [float] = await tx.select().from(modelFloats).where(eq(modelFloats.id, f.id)).for('update');
      if (!float) {
        // Never funded: its calls were all estimated at nothing (a free model), and cost nothing.
        if (rows.length) await tx.insert(modelCalls).values(rows).onConflictDoNothing();
        return;
      }
      if (float.flushes >= batch) return; // this batch committed before; only its answer was lost
      if (float.status !== 'open') {
        // Given back by the sweeper: the calls are logged, uncharged, and the next call opens a new float.
        this.retire(f);
        if (rows.length)
          await tx
            .insert(modelCalls)
            .values(rows.map((r) => ({ ...r, cost: 0n, error: r.error ?? '预扣已被回收，本次调用未计费' })))
            .onConflictDoNothing();
        return;
      }
      if (rows.length) await tx.insert(modelCalls).values(rows);
      const rest = close ? float.funded - float.charged - cost : 0n;
      await tx
        .update(modelFloats)
        .set({ charged: sql`${modelFloats.charged} + ${cost}`, flushes: batch, touchedAt: now, ...(close ? { status: 'closed' as const } : {}) })
        .where(eq(modelFloats.id, f.id));
      const calls = rows.length ? `${rows.length} 次调用` : '';
      await this.deps.ledger.holds.settle(tx, {
        key: `model:float:${f.id}:${close ? 'close' : 'flush'}:${batch}`,
        kind: 'model_usage',
        memo: close ? `大模型调用结算${calls ? `（${calls}）` : ''}，未用的预扣退回` : `大模型调用结算（${calls}）`,
        actorId: null,
        holder: f.id,
        amount: cost,
        // A close gives back what the calls did not use: the float's whole rest leaves the hold.
        ...(close ? { closing: { payerId: f.payerId, held: cost + rest } } : {}),
      });
    });
  }

  /** Marks this process's open floats as alive, so the sweeper leaves them. */
  async touchAll(): Promise<void> {
    const ids = [...this.floats.values()].filter((f) => !f.done && f.fundings > 0).map((f) => f.id);
    if (!ids.length) return;
    await this.deps.db
      .update(modelFloats)
      .set({ touchedAt: this.deps.clock.now() })
      .where(and(inArray(modelFloats.id, ids), eq(modelFloats.status, 'open')));
  }

  /**
   * Gives back the floats of processes that died (open, untouched for `olderThanMs`): what was not
   * charged goes back to the cash. Each is claimed under a row lock (SKIP LOCKED), so it is given back once.
   */
  async sweep(olderThanMs = STALE_FLOAT_MS): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - olderThanMs);
    let released = 0;
    for (;;) {
      const done = await this.deps.db.transaction(async (tx) => {
        const [float] = await tx
          .select()
          .from(modelFloats)
          .where(and(eq(modelFloats.status, 'open'), lt(modelFloats.touchedAt, before)))
          .limit(1)
          .for('update', { skipLocked: true });
        if (!float) return false;
        const rest = float.funded - float.charged;
        if (rest > 0n) {
          await this.deps.ledger.holds.release(tx, {
            key: `model:float:${float.id}:sweep`,
            kind: 'model_usage',
            memo: '大模型调用预扣退回（服务进程中断）',
            actorId: null,
            holder: float.id,
            payerId: float.payerId,
            amount: rest,
          });
        }
        await tx.update(modelFloats).set({ status: 'expired' }).where(eq(modelFloats.id, float.id));
        return true;
      });
      if (!done) return released;
      released++;
    }
  }
}
