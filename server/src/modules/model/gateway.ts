/**
 * The model gateway's money and call log (issue 14), for the /v1 routes (gateway-routes.ts).
 *
 * - Before the upstream call the estimate (prompt tokens by the tokenizer + max tokens, or a default,
 *   × the model's prices) moves from the payer's cash to the platform's hold account in one ledger
 *   transfer (`model:<call>:hold`). ledger_post locks the cash account and refuses to take it below
 *   zero, so concurrent calls on a small balance never overdraw it; a refusal is a 402 before any
 *   upstream call.
 * - After the call one transfer (`model:<call>:settle`) moves the exact cost (the upstream's usage;
 *   the tokenizer only when it gave none) from the hold to revenue and the rest back to cash. A call
 *   that failed before any token settles at zero (everything back). Both are idempotent by key.
 * - 大模型 Token 包 pay first: the hold reserves the estimate's tokens from the payer's packages
 *   (resources.reserveTokens) and holds cash only for the tokens they do not cover; the settle trims
 *   the reservation to the tokens used (prompt tokens are covered first) and charges cash for the rest.
 * - Gift credit (赠送金) is not drawn: it is granted for compute, and a model call is paid by cash or packages.
 * - One `model_calls` row per call, and the key's spend and last use (ApiKeyService.recordUse).
 */
import { randomUUID } from 'node:crypto';
import type { OpenAIUsage } from '@console/contract';
import type { Clock } from '../../clock.js';
import { and, eq, lt } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { laneShard, type AccountRef, type LedgerService, type TransferInput } from '../ledger/index.js';
import type { ResourceService } from '../resources/index.js';
import type { AuthenticatedKey, ApiKeyService } from './keys.js';
import type { ModelInfo } from './catalogue.js';
import { modelCalls } from './schema.js';

/** Completion tokens held for a chat call that names no max_tokens. */
export const DEFAULT_HOLD_COMPLETION_TOKENS = 1024;
/** A call still open after this long was held by a process that died: the sweeper gives the hold back. */
export const STALE_HOLD_MS = 60 * 60_000;

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
  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
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
}

export interface CallEnd {
  usage: OpenAIUsage | null;
  channel: string | null;
  status: 'ok' | 'aborted' | 'error';
  error?: string;
}

export class ModelGateway {
  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      ledger: LedgerService;
      apiKeys: Pick<ApiKeyService, 'recordUse'>;
      resources: Pick<ResourceService, 'holdsTokens' | 'reserveTokens' | 'settleTokens'>;
    },
  ) {}

  private holdAccount(callId: string): AccountRef {
    return { platform: 'hold', name: laneShard(callId, { index: 0, count: 1 }) };
  }

  /**
   * Holds the estimate: tokens from the payer's 大模型 Token 包 first, the cost of the rest from the
   * cash, and puts the call on record, in one transaction (one statement without packages, holdCash);
   * a 402 when the cash does not cover it.
   */
  async hold(key: AuthenticatedKey, model: ModelInfo, promptTokens: number, completionTokens: number): Promise<CallStart> {
    const id = randomUUID();
    if (!(await this.deps.resources.holdsTokens(key.payerId))) return this.holdCash(id, key, model, promptTokens, completionTokens);
    return this.deps.db.transaction(async (tx) => {
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
        createdAt: this.deps.clock.now(),
      });
      if (held > 0n) {
        try {
          await this.deps.ledger.post(this.holdTransfer(id, key, model, held), tx);
        } catch (e) {
          throw insufficient(e, heldTokens);
        }
      }
      return { id, key, model, held, heldTokens, startedAt: performance.now() };
    });
  }

  /**
   * The hold of a payer without token packages (most calls): the call row and the cash hold in one
   * statement (ledger.postAlongside), so concurrent calls of one payer queue on its cash account only
   * while that statement runs. A package bought while the call is under way pays for the next one.
   */
  private async holdCash(id: string, key: AuthenticatedKey, model: ModelInfo, promptTokens: number, completionTokens: number): Promise<CallStart> {
    const held = tokenCost(model, promptTokens, completionTokens);
    this.checkSpendLimit(key, held);
    const insert = this.deps.db
      .insert(modelCalls)
      .values({ id, keyId: key.id, userId: key.ownerId, payerId: key.payerId, model: model.id, held, status: 'open', createdAt: this.deps.clock.now() })
      .returning({ id: modelCalls.id });
    if (held === 0n) await insert;
    else {
      try {
        await this.deps.ledger.postAlongside(this.holdTransfer(id, key, model, held), insert.getSQL());
      } catch (e) {
        throw insufficient(e, 0);
      }
    }
    return { id, key, model, held, heldTokens: 0, startedAt: performance.now() };
  }

  private holdTransfer(id: string, key: AuthenticatedKey, model: ModelInfo, held: bigint) {
    return {
      key: `model:${id}:hold`,
      kind: 'model_hold' as const,
      memo: `${model.id} 调用预扣`,
      actorId: key.ownerId,
      legs: [
        { account: { userId: key.payerId, kind: 'cash' } as AccountRef, amount: -held },
        { account: this.holdAccount(id), amount: held },
      ],
    };
  }

  private checkSpendLimit(key: AuthenticatedKey, held: bigint) {
    if (key.spendLeft !== null && held > key.spendLeft) {
      throw new GatewayError(
        403,
        `该密钥剩余可用额度不足以支付本次调用的预估费用：请在控制台「API KEY」中提高消费上限，或调小 max_tokens`,
        'api_key_spend_limit',
      );
    }
  }

  /**
   * Releases the holds of calls still open after `olderThanMs` (the process that held them died
   * before settling): the whole hold goes back to the cash, nothing is charged. Each call is claimed
   * under a row lock (SKIP LOCKED), so processes sweeping at once release it once.
   */
  async sweepStaleHolds(olderThanMs = STALE_HOLD_MS): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - olderThanMs);
    let released = 0;
    for (;;) {
      const done = await this.deps.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(modelCalls)
          .where(and(eq(modelCalls.status, 'open'), lt(modelCalls.createdAt, before)))
          .limit(1)
          .for('update', { skipLocked: true });
        if (!row) return false;
        await this.deps.resources.settleTokens(tx, row.payerId, row.id, row.heldTokens, 0);
        if (row.held > 0n) {
          await this.deps.ledger.post(
            {
              key: `model:${row.id}:settle`,
              kind: 'model_usage',
              memo: `${row.model} 调用未完成，预扣退回`,
              actorId: null,
              legs: [
                { account: this.holdAccount(row.id), amount: -row.held },
                { account: { userId: row.payerId, kind: 'cash' }, amount: row.held },
              ],
            },
            tx,
          );
        }
        await tx.update(modelCalls).set({ status: 'expired', error: '调用未正常结束，预扣已退回' }).where(eq(modelCalls.id, row.id));
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

  /** Resolves once every settle started so far has finished. */
  async drain(): Promise<void> {
    while (this.settling.size) await Promise.all([...this.settling]);
  }

  /**
   * Settles the call at its exact cost (capped by what the cash can still give), releases the rest,
   * and logs it, under the call row's lock: a call the sweeper already released is not charged.
   */
  async settle(call: CallStart, end: CallEnd): Promise<bigint> {
    const prompt = end.usage?.prompt_tokens ?? 0;
    const completion = end.usage?.completion_tokens ?? 0;
    const now = this.deps.clock.now();
    const cost = (await this.settleCash(call, end, prompt, completion)) ?? (await this.settleInTransaction(call, end, prompt, completion));
    if (cost === null) return 0n;
    await this.deps.apiKeys.recordUse(call.key.id, cost, now, prompt + completion);
    return cost;
  }

  /**
   * The settle of a call paid in cash whose hold covers it (most calls): the call row moves on from
   * `open` and the transfer is posted in one statement. `undefined` when it does not apply; null when
   * the call was no longer open (the sweeper released it).
   */
  private async settleCash(call: CallStart, end: CallEnd, prompt: number, completion: number): Promise<bigint | null | undefined> {
    if (call.heldTokens > 0) return undefined;
    const exact = tokenCost(call.model, prompt, completion);
    if (exact > call.held) return undefined;
    const update = this.deps.db
      .update(modelCalls)
      .set(this.outcome(call, end, prompt, completion, 0, exact))
      .where(and(eq(modelCalls.id, call.id), eq(modelCalls.status, 'open')))
      .returning({ id: modelCalls.id });
    const transfer = this.settleTransfer(call, exact);
    const done = transfer ? (await this.deps.ledger.postAlongside(transfer, update.getSQL())) !== null : (await update).length > 0;
    return done ? exact : null;
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
      return charged;
    });
  }

  private async post(call: CallStart, cost: bigint, tx: Tx): Promise<bigint> {
    const transfer = this.settleTransfer(call, cost);
    if (transfer) await this.deps.ledger.post(transfer, tx);
    return cost;
  }

  /** The settle transfer: the hold to revenue (the cost) and back to cash (the rest); null when no money moves. */
  private settleTransfer(call: CallStart, cost: bigint): TransferInput | null {
    const cash: AccountRef = { userId: call.key.payerId, kind: 'cash' };
    const legs = [
      { account: this.holdAccount(call.id), amount: -call.held },
      { account: { platform: 'revenue' } as AccountRef, amount: cost },
      { account: cash, amount: call.held - cost },
    ].filter((l) => l.amount !== 0n);
    if (legs.length < 2) return null;
    return { key: `model:${call.id}:settle`, kind: 'model_usage', memo: `${call.model.id} 调用`, actorId: call.key.ownerId, legs };
  }
}

/** The 402 for a hold the cash could not cover; anything else as it was. */
function insufficient(e: unknown, heldTokens: number): unknown {
  if (!(e instanceof AppError && e.is('INSUFFICIENT_BALANCE'))) return e;
  const hint = heldTokens > 0 ? '（Token 包余量不足以支付全部预估 Token）' : '';
  return new GatewayError(
    402,
    `现金余额不足以支付本次调用的预估费用${hint}（${e.detail ?? ''}；赠送金不能用于模型调用）：请充值或购买大模型 Token 包后重试，或调小 max_tokens`,
    'insufficient_quota',
  );
}
