/**
 * The model gateway's money and call log (issue 14), for the /v1 routes (gateway-routes.ts).
 *
 * - Before the upstream call the estimate (prompt tokens by the tokenizer + max tokens, or a default,
 *   × the model's prices) is held. A payer without token packages (most calls) is held from its
 *   float, cash this process pre-authorised for its model calls (floats.ts): no database round trip
 *   on the way to the upstream, the call logged and charged in a batch after it ended. A float that
 *   cannot be funded is a 402 before any upstream call.
 * - After the call its exact cost (the upstream's usage; the tokenizer only when it gave none) is
 *   charged, the rest released. A call that failed before any token costs nothing.
 * - A payer with packages is held call by call in the ledger (`model:<call>:hold`, then
 *   `model:<call>:settle`, idempotent by key), with the call row open meanwhile for the sweeper.
 * - 大模型 Token 包 pay first: the hold reserves the estimate's tokens from the payer's packages
 *   (resources.reserveTokens) and holds cash only for the tokens they do not cover; the settle trims
 *   the reservation to the tokens used (prompt tokens are covered first) and charges cash for the rest.
 * - Gift credit (赠送金) is not drawn: it is granted for compute, and a model call is paid by cash or packages.
 * - One `model_calls` row per call, and the key's spend and last use (ApiKeyService.recordUse).
 * - A key with a spend limit is held call by call too, and its hold counts as the key's spend from
 *   the hold (ApiKeyService.reserveSpend, one conditional update in the hold's transaction): calls
 *   at once, in any process, cannot together pass the limit; the settle puts the spend to the exact
 *   cost, the sweeper gives a dead process's hold back. Keys without a limit keep the float path.
 * - A replica that dies (kill -9, a lost host) leaves its calls open: every process marks its open
 *   calls and floats alive every HOLD_TOUCH_MS (a long stream is touched all along), and the sweeper
 *   (every STALE_SWEEP_MS, in whichever replica runs the job) gives back those untouched for
 *   STALE_HOLD_MS — within STALE_HOLD_MS + STALE_SWEEP_MS = 40 s of the death (plus a lease
 *   takeover when the dead one ran the sweeper). A live process cut off from the database that long
 *   loses its holds too: its calls then end uncharged (the settle finds them released), never charged twice.
 */
import { randomUUID } from 'node:crypto';
import type { OpenAIUsage } from '@console/contract';
import type { Clock } from '../../clock.js';
import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { rowsOf } from '../../db/results.js';
import { AppError } from '../../http/errors.js';
import type { LedgerService } from '../ledger/index.js';
import type { ResourceService } from '../resources/index.js';
import type { AuthenticatedKey, ApiKeyService } from './keys.js';
import type { ModelInfo } from './catalogue.js';
import { FloatPool, FloatRefused, type FloatReservation } from './floats.js';
import { RecentCache } from './recent-cache.js';
import { modelCalls } from './schema.js';

/** Completion tokens held for a chat call that names no max_tokens. */
export const DEFAULT_HOLD_COMPLETION_TOKENS = 1024;
/** How often a live process marks its open calls (and floats) alive. */
export const HOLD_TOUCH_MS = 5_000;
/** A call open and untouched this long was held by a process that died: the sweeper gives the hold back (five missed touches). */
export const STALE_HOLD_MS = 25_000;
/** How often the sweeper runs (the scheduler's model.stale-holds job). */
export const STALE_SWEEP_MS = 15_000;

/** An error in OpenAI's shape with its HTTP status. */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly type: string = status === 401
      ? 'authentication_error'
      : status === 403
        ? 'permission_error'
        : status === 429
          ? 'rate_limit_error'
          : status === 402
            ? 'insufficient_quota'
            : status >= 500
              ? 'api_error'
              : 'invalid_request_error',
    readonly param: string | null = null,
  ) {
    super(message);
  }
  /** Headers the answer carries (a 429's Retry-After). */
  headers: Record<string, string> = {};
  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/**
 * A rate limit's refusal with when to try again, as OpenAI sends it: `retry-after` in whole seconds
 * (rounded up) and `retry-after-ms`; the official clients wait that long before their retry.
 */
export function retryLater(error: GatewayError, retryAfterMs: number): GatewayError {
  const ms = Math.max(1, Math.ceil(retryAfterMs));
  error.headers['retry-after'] = String(Math.ceil(ms / 1000));
  error.headers['retry-after-ms'] = String(ms);
  return error;
}

/** The cost of tokens at per-million prices, rounded up to the next 0.0001 yuan. */
export function tokenCost(model: Pick<ModelInfo, 'inputPricePerMillion' | 'outputPricePerMillion'>, prompt: number, completion: number): bigint {
  const micro = BigInt(prompt) * model.inputPricePerMillion + BigInt(completion) * model.outputPricePerMillion;
  return (micro + 999_999n) / 1_000_000n;
}

/** The tokens a package did not pay for: it pays for prompt tokens first, then completion tokens. */
export function uncovered(prompt: number, completion: number, covered: number): { prompt: number; completion: number } {
  const onPrompt = Math.min(prompt, covered);
  return { prompt: prompt - onPrompt, completion: Math.max(0, completion - (covered - onPrompt)) };
}

export interface CallStart {
  id: string;
  key: AuthenticatedKey;
  model: ModelInfo;
  held: bigint;
  /** Tokens reserved from Token 包 at the hold. */
  heldTokens: number;
  startedAt: number;
  createdAt: Date;
  /** Held from the payer's float (no call row until it is settled). */
  float?: FloatReservation;
}

export interface CallEnd {
  usage: OpenAIUsage | null;
  channel: string | null;
  status: 'ok' | 'aborted' | 'error';
  error?: string;
}

/** How long "this payer holds no token package" is believed (a package bought pays from the next call after). */
const HOLDS_TOKENS_CACHE_MS = 1_000;

export class ModelGateway {
  private readonly floats: FloatPool;
  /** Calls this process holds in the database (open call rows), touched every HOLD_TOUCH_MS until settled. */
  private readonly openCalls = new Set<string>();
  private readonly toucher: NodeJS.Timeout;
  private readonly holdsTokensSeen = new RecentCache<string, boolean>(HOLDS_TOKENS_CACHE_MS, () => performance.now());

  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      ledger: Pick<LedgerService, 'holds'>;
      apiKeys: Pick<ApiKeyService, 'recordUse' | 'reserveSpend' | 'adjustSpend'>;
      resources: Pick<ResourceService, 'holdsTokens' | 'reserveTokens' | 'settleTokens'>;
      onError?: (e: unknown) => void;
    },
  ) {
    const onError = deps.onError ?? ((e) => console.error('model float write failed', e));
    this.floats = new FloatPool({ ...deps, onError });
    this.toucher = setInterval(() => void this.touchCalls().catch(onError), HOLD_TOUCH_MS);
    this.toucher.unref();
  }

  /** Marks this process's open calls and floats alive now (the timers do so every HOLD_TOUCH_MS). */
  async heartbeat(): Promise<void> {
    await Promise.all([this.touchCalls(), this.floats.touchAll()]);
  }

  private async touchCalls(): Promise<void> {
    if (!this.openCalls.size) return;
    const ids = [...this.openCalls];
    await this.deps.db
      .update(modelCalls)
      .set({ touchedAt: this.deps.clock.now() })
      .where(and(inArray(modelCalls.id, ids), eq(modelCalls.status, 'open')));
  }

  private async holdsTokens(payerId: string): Promise<boolean> {
    return (await this.holdsTokensSeen.get(payerId, () => this.deps.resources.holdsTokens(payerId))) === true;
  }

  /**
   * Holds the estimate: tokens from the payer's 大模型 Token 包 first, the cost of the rest from the
   * cash, puts the call on record and counts the hold against the key's spend limit, in one
   * transaction; a 402 when the cash does not cover it, a 403 when the key's limit would be passed
   * with the calls under way (issue 28 §5: twelve calls at once on a ¥5 limit all went through).
   * A key with no limit whose payer holds no packages is held from the payer's float instead.
   */
  async hold(key: AuthenticatedKey, model: ModelInfo, promptTokens: number, completionTokens: number): Promise<CallStart> {
    const id = randomUUID();
    const createdAt = this.deps.clock.now();
    if (key.spendLeft === null && !(await this.holdsTokens(key.payerId))) return this.holdFromFloat(id, key, model, promptTokens, completionTokens);
    const call = await this.deps.db.transaction(async (tx) => {
      const heldTokens = await this.deps.resources.reserveTokens(tx, key.payerId, id, promptTokens + completionTokens);
      const rest = uncovered(promptTokens, completionTokens, heldTokens);
      const held = tokenCost(model, rest.prompt, rest.completion);
      this.checkSpendLimit(key, held);
      // The call is on record before the upstream is asked: a crash before settle leaves it open for the sweeper.
      // The hold transfer comes last, so the payer's cash account stays locked only until the commit.
      await tx.insert(modelCalls).values({
        id,
        keyId: key.id,
        userId: key.ownerId,
        payerId: key.payerId,
        model: model.id,
        held,
        heldTokens,
        status: 'open',
        createdAt,
        touchedAt: createdAt,
      });
      if (held > 0n) {
        try {
          await this.deps.ledger.holds.hold(tx, {
            key: `model:${id}:hold`,
            kind: 'model_hold',
            memo: `${model.id} 调用预扣`,
            actorId: key.ownerId,
            holder: id,
            payerId: key.payerId,
            amount: held,
          });
        } catch (e) {
          throw insufficient(e, heldTokens);
        }
        // The key's row last (after the cash, as the settle and the sweeper take them): calls of one
        // key at once wait here for each other, and each sees the holds committed before it.
        if (!(await this.deps.apiKeys.reserveSpend(tx, key.id, held))) throw spendLimitReached();
      }
      return { id, key, model, held, heldTokens, startedAt: performance.now(), createdAt };
    });
    this.openCalls.add(id);
    return call;
  }

  /** The hold of a payer without token packages: from its float, in memory (a database round trip only to fund the float). */
  private async holdFromFloat(id: string, key: AuthenticatedKey, model: ModelInfo, promptTokens: number, completionTokens: number): Promise<CallStart> {
    const held = tokenCost(model, promptTokens, completionTokens);
    this.checkSpendLimit(key, held);
    const createdAt = this.deps.clock.now();
    try {
      const float = await this.floats.reserve(key.payerId, key.ownerId, held);
      return { id, key, model, held, heldTokens: 0, startedAt: performance.now(), createdAt, float };
    } catch (e) {
      if (e instanceof FloatRefused) throw insufficientCash(e.detail, 0);
      throw e;
    }
  }

  /** Refuses early by the key row this process read (the hold's transaction decides: reserveSpend). */
  private checkSpendLimit(key: AuthenticatedKey, held: bigint) {
    if (key.spendLeft !== null && held > key.spendLeft) throw spendLimitReached();
  }

  /**
   * Releases the holds of calls open and untouched for `olderThanMs` (the process that held them died
   * before settling): the whole hold goes back to the cash, nothing is charged. Each call is claimed
   * under a row lock (SKIP LOCKED), so processes sweeping at once release it once. The floats of
   * processes that died are given back too (floats.ts).
   */
  async sweepStaleHolds(olderThanMs = STALE_HOLD_MS): Promise<number> {
    return (await this.sweepOpenCalls(olderThanMs)) + (await this.floats.sweep());
  }

  private async sweepOpenCalls(olderThanMs: number): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - olderThanMs);
    let released = 0;
    for (;;) {
      const done = await this.deps.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(modelCalls)
          .where(and(eq(modelCalls.status, 'open'), lt(modelCalls.touchedAt, before)))
          .limit(1)
          .for('update', { skipLocked: true });
        if (!row) return false;
        await this.deps.resources.settleTokens(tx, row.payerId, row.id, row.heldTokens, 0);
        await this.deps.ledger.holds.release(tx, {
          key: `model:${row.id}:settle`,
          kind: 'model_usage',
          memo: `${row.model} 调用未完成，预扣退回`,
          actorId: null,
          holder: row.id,
          payerId: row.payerId,
          amount: row.held,
        });
        await tx.update(modelCalls).set({ status: 'expired', error: '调用未正常结束，预扣已退回' }).where(eq(modelCalls.id, row.id));
        this.openCalls.delete(row.id);
        // Its hold was counted as the key's spend (reserveSpend): nothing was spent.
        await this.deps.apiKeys.adjustSpend(tx, row.keyId, -row.held);
        return true;
      });
      if (!done) return released;
      released++;
    }
  }

  private readonly settling = new Set<Promise<unknown>>();

  /**
   * Settles after the answer has gone out, so the client never waits for the ledger (the hold
   * already guarantees the money); `drain` waits for these (tests, shutdown).
   */
  settleAfterAnswer(call: CallStart, end: CallEnd, onError: (e: unknown) => void): void {
    const done: Promise<unknown> = this.settle(call, end)
      .catch(onError)
      .finally(() => this.settling.delete(done));
    this.settling.add(done);
  }

  /** Resolves once every settle started so far has finished, its call logged and every float closed. */
  async drain(): Promise<void> {
    while (this.settling.size) await Promise.all([...this.settling]);
    await this.floats.drain();
  }

  /** The payer's cash held right now for calls under way: its open floats' rest and its open calls' holds. */
  async heldFor(payerId: string, exec: Executor = this.deps.db): Promise<bigint> {
    const [row] = rowsOf<{ held: string }>(
      await exec.execute(sql`select (
          coalesce((select sum(funded - charged) from model_floats where payer_id = ${payerId} and status = 'open'), 0)
        + coalesce((select sum(held) from model_calls where payer_id = ${payerId} and status = 'open'), 0))::text as held`),
    );
    return BigInt(row?.held ?? '0');
  }

  /** Stops the heartbeats (the process is going away; `drain` first). */
  stop(): void {
    clearInterval(this.toucher);
    this.floats.stop();
  }

  /**
   * Settles the call at its exact cost (capped by what the cash can still give), releases the rest,
   * and logs it, under the call row's lock: a call the sweeper already released is not charged.
   */
  async settle(call: CallStart, end: CallEnd): Promise<bigint> {
    const prompt = end.usage?.prompt_tokens ?? 0;
    const completion = end.usage?.completion_tokens ?? 0;
    const now = this.deps.clock.now();
    let cost: bigint | null;
    try {
      cost = call.float ? this.settleFromFloat(call, end, prompt, completion) : await this.settleInTransaction(call, end, prompt, completion);
    } finally {
      // Settled, or left to the sweeper when the settle failed (untouched from now, released within STALE_HOLD_MS + STALE_SWEEP_MS).
      this.openCalls.delete(call.id);
    }
    if (cost === null) return 0n;
    // A call held in a transaction put its cost on the key's spend there (reserveSpend, adjustSpend).
    // Tokens count towards the key's tokens per minute only where it has a limit (no write for the others).
    await this.deps.apiKeys.recordUse(call.key.id, call.float ? cost : 0n, now, call.key.tpmLimit === null ? 0 : prompt + completion);
    return cost;
  }

  /** The settle of a call held from its payer's float: charged in memory, logged with the float's next batch. */
  private settleFromFloat(call: CallStart, end: CallEnd, prompt: number, completion: number): bigint {
    // Usage an upstream reported in a shape the price cannot take (a fraction): the call ends free
    // rather than stay under way for ever, which would keep its float open.
    const counted = Number.isSafeInteger(prompt) && Number.isSafeInteger(completion) && prompt >= 0 && completion >= 0;
    if (!counted) {
      prompt = 0;
      completion = 0;
    }
    const exact = tokenCost(call.model, prompt, completion);
    const row = {
      id: call.id,
      keyId: call.key.id,
      userId: call.key.ownerId,
      payerId: call.key.payerId,
      model: call.model.id,
      createdAt: call.createdAt,
      ...this.outcome(call, end, prompt, completion, 0, exact),
    };
    return this.floats.finish(call.float!, exact, row);
  }

  private outcome(call: CallStart, end: CallEnd, prompt: number, completion: number, packageTokens: number, cost: bigint) {
    return {
      channel: end.channel,
      promptTokens: prompt,
      completionTokens: completion,
      packageTokens,
      cost,
      latencyMs: Math.round(performance.now() - call.startedAt),
      status: end.status,
      error: end.error ?? null,
    };
  }

  /** Settles under the call row's lock in a transaction: calls with package tokens, or costing more than their hold. */
  private async settleInTransaction(call: CallStart, end: CallEnd, prompt: number, completion: number): Promise<bigint | null> {
    return this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select({ status: modelCalls.status }).from(modelCalls).where(eq(modelCalls.id, call.id)).for('update');
      if (row?.status !== 'open') return null;
      const packageTokens = await this.deps.resources.settleTokens(tx, call.key.payerId, call.id, call.heldTokens, prompt + completion);
      const rest = uncovered(prompt, completion, packageTokens);
      const exact = tokenCost(call.model, rest.prompt, rest.completion);
      const record = (charged: bigint) =>
        tx
          .update(modelCalls)
          .set(this.outcome(call, end, prompt, completion, packageTokens, charged))
          .where(eq(modelCalls.id, call.id));
      let charged = exact;
      if (exact <= call.held) {
        // The usual case: the hold covers it, nothing can be refused. The transfer comes last, so the
        // payer's cash account stays locked only until the commit (calls of one payer queue on it).
        await record(exact);
        await this.post(call, exact, tx);
      } else {
        try {
          // A savepoint: on PostgreSQL a refused statement would otherwise end the whole transaction.
          await tx.transaction((sp) => this.post(call, exact, sp));
        } catch (e) {
          if (!(e instanceof AppError && e.is('INSUFFICIENT_BALANCE'))) throw e;
          // The upstream counted more than was held and the cash cannot give the difference: the hold is what is charged.
          charged = await this.post(call, call.held, tx);
        }
        await record(charged);
      }
      await this.deps.apiKeys.adjustSpend(tx, call.key.id, charged - call.held);
      return charged;
    });
  }

  /** The call's final settle: `cost` to revenue out of its hold, the rest of the hold back to the cash (or the cash pays what the hold lacks). */
  private async post(call: CallStart, cost: bigint, tx: Tx): Promise<bigint> {
    await this.deps.ledger.holds.settle(tx, {
      key: `model:${call.id}:settle`,
      kind: 'model_usage',
      memo: `${call.model.id} 调用`,
      actorId: call.key.ownerId,
      holder: call.id,
      amount: cost,
      closing: { payerId: call.key.payerId, held: call.held },
    });
    return cost;
  }
}

function spendLimitReached(): GatewayError {
  return new GatewayError(
    403,
    '该密钥剩余可用额度不足以支付本次调用的预估费用（进行中的调用按预估费用计入）：请在控制台「API KEY」中提高消费上限，或调小 max_tokens',
    'api_key_spend_limit',
  );
}

/** The 402 for a hold the cash could not cover; anything else as it was. */
function insufficient(e: unknown, heldTokens: number): unknown {
  if (!(e instanceof AppError && e.is('INSUFFICIENT_BALANCE'))) return e;
  return insufficientCash(e.detail, heldTokens);
}

function insufficientCash(detail: string | undefined, heldTokens: number): GatewayError {
  const hint = heldTokens > 0 ? '（Token 包余量不足以支付全部预估 Token）' : '';
  return new GatewayError(
    402,
    `现金余额不足以支付本次调用的预估费用${hint}（${detail ?? ''}；赠送金不能用于模型调用）：请充值或购买大模型 Token 包后重试，或调小 max_tokens`,
    'insufficient_quota',
  );
}
