/**
 * Money held while work is under way (DESIGN.md "Money"): work priced only when it ends holds an
 * estimate from the payer's cash first, then settles what it really cost and releases the rest.
 * One API for every kind of such work: the model gateway (a hold per call, and a float that covers
 * many calls of one payer), LoRA training (per job, charged epoch by epoch) and image generation
 * (per task, charged image by image). Resource packages are drawn by the callers before they hold.
 *
 * The money sits on the platform's hold account, on the shard of its `holder` (the job, the call,
 * the float): every move of one holder meets on one row. Each move is one ledger transfer under the
 * caller's key, so a move posted twice (a tick replayed after a crash) moves money once; the kinds,
 * keys and memos are the caller's, as the statements show them.
 */
import type { ErrorName, TransferKind } from '@console/contract';
import type { SQL } from 'drizzle-orm';
import type { Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { laneShard, type AccountRef, type Leg, type PostedTransfer, type TransferInput } from './accounts.js';

/** What the hold API needs of the ledger: posting transfers. */
export interface TransferPoster {
  post(transfer: TransferInput, tx?: Tx): Promise<PostedTransfer>;
  postAlongside(transfer: TransferInput, alongside: SQL): Promise<PostedTransfer | null>;
}

/** What every move of held money names: its transfer, and whose money on the hold account it is. */
export interface HoldMove {
  key: string;
  kind: TransferKind;
  memo: string;
  actorId: string | null;
  /** The job, call or float the money is held for. */
  holder: string;
}

export interface HoldInput extends HoldMove {
  payerId: string;
  amount: bigint;
  /** The error a cash too short is refused with; without it, INSUFFICIENT_BALANCE as the ledger raised it. */
  short?: ErrorName;
}

export interface SettleInput extends HoldMove {
  /** Charged: from the hold to revenue. */
  amount: bigint;
  /**
   * A final settle: the holder's whole `held` leaves the hold in the same transfer, what `amount`
   * does not take goes back to the payer's cash (and when `amount` is more, the cash pays the
   * difference — refused with INSUFFICIENT_BALANCE when it cannot). Without it, a partial settle.
   */
  closing?: { payerId: string; held: bigint };
}

export interface ReleaseInput extends HoldMove {
  payerId: string;
  /** Still held: back to the payer's cash. */
  amount: bigint;
  /** Charged before and given back too (a job that failed pays nothing). */
  refunded?: bigint;
}

export class Holds {
  constructor(private readonly ledger: TransferPoster) {}

  /** Moves `amount` from the payer's cash to the hold; nothing when it is zero. */
  async hold(tx: Tx, h: HoldInput): Promise<void> {
    if (h.amount === 0n) return;
    await this.ledger.post(holdTransfer(h), tx).catch((e: unknown) => {
      throw h.short && e instanceof AppError && e.is('INSUFFICIENT_BALANCE') ? new AppError(h.short) : e;
    });
  }

  /**
   * The hold in one statement with `alongside` (see LedgerService.postAlongside): false when
   * `alongside` returned no row and nothing was held.
   */
  async holdAlongside(h: Omit<HoldInput, 'short'>, alongside: SQL): Promise<boolean> {
    return (await this.ledger.postAlongside(holdTransfer(h), alongside)) !== null;
  }

  /** Charges `amount` of the hold (see SettleInput); what it moved to revenue, nothing when this key moved it before. */
  async settle(tx: Tx, s: SettleInput): Promise<bigint> {
    const fromHold = s.closing ? s.closing.held : s.amount;
    const posted = await this.fromHold(tx, s, { payerId: s.closing?.payerId, fromHold, toRevenue: s.amount });
    return posted ? s.amount : 0n;
  }

  /** Gives what is still held (and `refunded` of what was charged) back to the payer's cash. */
  async release(tx: Tx, r: ReleaseInput): Promise<void> {
    await this.fromHold(tx, r, { payerId: r.payerId, fromHold: r.amount, toRevenue: -(r.refunded ?? 0n) });
  }

  /**
   * `fromHold` leaves the hold, `toRevenue` goes to revenue and the difference to the payer's cash,
   * in one transfer (legs of zero left out). True when it moved money now, false when nothing was to
   * move or the key moved it before.
   */
  private async fromHold(tx: Tx, m: HoldMove, a: { payerId?: string; fromHold: bigint; toRevenue: bigint }): Promise<boolean> {
    const toCash = a.fromHold - a.toRevenue;
    const legs: Leg[] = [
      { account: holdAccount(m.holder), amount: -a.fromHold },
      { account: REVENUE, amount: a.toRevenue },
      ...(a.payerId ? [{ account: cashOf(a.payerId), amount: toCash }] : []),
    ].filter((l) => l.amount !== 0n);
    if (legs.length < 2) return false;
    const posted = await this.ledger.post({ key: m.key, kind: m.kind, memo: m.memo, actorId: m.actorId, legs }, tx);
    return !posted.replayed;
  }
}

const REVENUE: AccountRef = { platform: 'revenue' };

/** The shard of the platform's hold account that holds `holder`'s money. */
function holdAccount(holder: string): AccountRef {
  return { platform: 'hold', name: laneShard(holder, { index: 0, count: 1 }) };
}

function cashOf(userId: string): AccountRef {
  return { userId, kind: 'cash' };
}

function holdTransfer(h: Omit<HoldInput, 'short'>): TransferInput {
  return {
    key: h.key,
    kind: h.kind,
    memo: h.memo,
    actorId: h.actorId,
    legs: [
      { account: cashOf(h.payerId), amount: -h.amount },
      { account: holdAccount(h.holder), amount: h.amount },
    ],
  };
}
