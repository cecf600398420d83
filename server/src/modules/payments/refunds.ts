/**
 * Refunds to the original payment method (退回原支付渠道). They live in the payments module because
 * a refund is of one gateway payment: it locks that payment's row (only this module reads it), goes
 * through the same drivers, and its notifications arrive beside the payment notifications.
 *
 * Money (DESIGN.md "Money"), each step one ledger transfer under its own key:
 *   request   user cash −(A + bonus shortfall), user gift −(bonus from gift) → platform refund +A
 *             (in flight), platform promotion +(bonus share)                       `refund:<id>`
 *   success   platform refund −A → platform clearing(method) +A                     `refund-done:<id>`
 *   failure   everything of the request back where it came from                     `refund-back:<id>`
 *
 * Rules:
 * - Partial refunds of one payment sum to at most what it paid, counting every refund not failed.
 *   The payment row is locked while a refund is recorded, so two at once cannot both pass.
 * - Only money still in the user's cash can go back (REFUND_OVER_CASH otherwise): what was spent
 *   was spent on something delivered, and is refunded by its order (to balance) first.
 * - A recharge's bonus (gift credit) is taken back in proportion: the share of the refunded part,
 *   floor(bonus × refunded so far ÷ paid) less what earlier refunds took, so partials add up to
 *   exactly the bonus of a full refund. It comes from gift credit (earliest expiry first, never
 *   below zero); what gift credit no longer covers (the bonus was spent) is taken from cash.
 * - A refund id (the caller's requestId) is asked once: asking again answers the same refund.
 */
import { randomBytes } from 'node:crypto';
import { and, asc, count, desc, eq, isNull, lt, ne, or, sql, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { formatYuan, PaymentMethod, RefundStatus, yuanToUnits, type Refund, type RefundRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/results.js';
import { PaymentGatewayError } from '../../drivers/payment/errors.js';
import type { GatewayMethod, NotificationAck, PaymentDriver, RefundState } from '../../drivers/payment/types.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { GiftService } from '../gifts/index.js';
import type { Leg, LedgerService } from '../ledger/index.js';
import { paymentNotifications, payments, refunds } from './schema.js';
import type { PaymentRow } from './service.js';

export type RefundRow = typeof refunds.$inferSelect;

/** How long a refund stays 退款中 before the poller asks the gateway again. */
export const REFUND_QUERY_INTERVAL_MS = 10_000;

export interface RefundServiceDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  gifts: Pick<GiftService, 'lockSpendable' | 'take' | 'giveBack'>;
  drivers: Record<GatewayMethod, PaymentDriver>;
  publicBaseUrl: string;
  log: FastifyBaseLogger;
  /** The gift bonus a payment brought (a recharge's 18%); 0 for a payment of an order. */
  bonusOf: (payment: PaymentRow) => Promise<bigint>;
}

/** Our refund number: "RF", the time, random; ≤ 32 characters of [A-Za-z0-9] as both gateways take. */
function newRefundNo(now: Date): string {
  return `RF${now.toISOString().replace(/\D/g, '').slice(0, 14)}${randomBytes(6).toString('hex')}`;
}

/** The bonus share owed once `refunded` of `paid` has gone back (rounded down: never more than the bonus). */
export function bonusShare(bonus: bigint, paid: bigint, refunded: bigint): bigint {
  return paid > 0n ? (bonus * refunded) / paid : 0n;
}

export class RefundService {
  constructor(private deps: RefundServiceDeps) {}

  notifyUrl(method: GatewayMethod) {
    return `${this.deps.publicBaseUrl}/billing/api/v1/payment/refund-notify/${method.toLowerCase()}`;
  }

  /**
   * Records a refund (money leaves cash for the in-flight account) and asks the gateway. A gateway
   * that refuses for good fails the refund at once (money back to cash); one that cannot be reached
   * leaves it 退款中 for the poller, which asks again under the same refund number.
   */
  async request(req: RefundRequest, operatorId: string | null): Promise<{ refund: Refund; replayed: boolean }> {
    const amount = yuanToUnits(req.amount);
    const prior = await this.find(req.requestId);
    if (prior) return { refund: await this.replay(prior, req.outTradeNo, amount), replayed: true };
    const [payment] = await this.deps.db.select().from(payments).where(eq(payments.outTradeNo, req.outTradeNo));
    if (!payment) throw new AppError('PAYMENT_NOT_FOUND', req.outTradeNo);
    const bonus = await this.deps.bonusOf(payment);
    let row: RefundRow;
    try {
      row = await this.deps.db.transaction((tx) => this.record(tx, { id: req.requestId, payment, amount, bonus, reason: req.reason, operatorId }));
    } catch (e) {
      // The same requestId twice at once: the second finds the first's row.
      if (isUniqueViolation(e)) {
        const won = await this.find(req.requestId);
        if (won) return { refund: await this.replay(won, req.outTradeNo, amount), replayed: true };
      }
      if (isAppError(e, 'INSUFFICIENT_BALANCE')) throw new AppError('REFUND_OVER_CASH', e.detail);
      throw e;
    }
    await this.send(row, payment);
    return { refund: view((await this.find(row.id))!, payment.outTradeNo), replayed: false };
  }

  private async replay(prior: RefundRow, outTradeNo: string, amount: bigint): Promise<Refund> {
    const [payment] = await this.deps.db.select().from(payments).where(eq(payments.id, prior.paymentId));
    if (payment!.outTradeNo !== outTradeNo || prior.amount !== amount) throw new AppError('IDEMPOTENCY_CONFLICT', `退款 ${prior.id} 已用于另一笔退款`);
    return view(prior, payment!.outTradeNo);
  }

  /** Inside one transaction: the payment locked, the limits checked, the money moved, the row written. */
  private async record(
    tx: Tx,
    r: { id: string; payment: PaymentRow; amount: bigint; bonus: bigint; reason: string; operatorId: string | null },
  ): Promise<RefundRow> {
    const [payment] = await tx.select().from(payments).where(eq(payments.id, r.payment.id)).for('update');
    if (!payment || payment.status !== 'Succeeded') throw new AppError('REFUND_NOT_PAID', r.payment.outTradeNo);
    const refunded = await this.refundedOf(tx, payment.id);
    const left = payment.amount - refunded;
    if (r.amount > left) throw new AppError('REFUND_OVER_PAID', `该笔支付 ${formatYuan(payment.amount)} 元，最多还可退 ${formatYuan(left)} 元`);
    const share = bonusShare(r.bonus, payment.amount, refunded + r.amount) - bonusShare(r.bonus, payment.amount, refunded);
    const takes = await this.takeGift(tx, payment.userId, share);
    const fromGift = takes.reduce((n, t) => n + t.amount, 0n);
    const fromCash = share - fromGift;
    const now = this.deps.clock.now();
    const row: RefundRow = {
      id: r.id,
      refundNo: newRefundNo(now),
      paymentId: payment.id,
      userId: payment.userId,
      method: payment.method,
      amount: r.amount,
      bonusFromGift: fromGift,
      bonusFromCash: fromCash,
      giftTakes: takes.map((t) => ({ grantId: t.grantId, amount: String(t.amount) })),
      reason: r.reason,
      status: 'Processing',
      gatewayRefundNo: null,
      failReason: '',
      operatorId: r.operatorId,
      lastQueriedAt: null,
      settledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await tx.insert(refunds).values(row);
    await this.deps.ledger.post(
      {
        key: `refund:${row.id}`,
        kind: 'refund_out',
        memo: `退回${PaymentMethod.label(payment.method)}：${r.reason}（交易 ${payment.outTradeNo}）`,
        actorId: r.operatorId,
        legs: requestLegs(row),
      },
      tx,
    );
    return row;
  }

  /** What earlier refunds of this payment took, counting every one not failed (退款中 ones too). */
  private async refundedOf(tx: Tx, paymentId: string): Promise<bigint> {
    const [row] = await tx
      .select({ sum: sql<string>`coalesce(sum(${refunds.amount}), 0)::text` })
      .from(refunds)
      .where(and(eq(refunds.paymentId, paymentId), ne(refunds.status, 'Failed')));
    return BigInt(row?.sum ?? '0');
  }

  /** Up to `amount` from the user's spendable gift grants, earliest expiry first. */
  private async takeGift(tx: Tx, userId: string, amount: bigint): Promise<{ grantId: string; amount: bigint }[]> {
    const takes: { grantId: string; amount: bigint }[] = [];
    let rest = amount;
    if (rest <= 0n) return takes;
    for (const g of await this.deps.gifts.lockSpendable(tx, userId)) {
      const take = g.remain < rest ? g.remain : rest;
      await this.deps.gifts.take(tx, g.id, take);
      takes.push({ grantId: g.id, amount: take });
      rest -= take;
      if (rest === 0n) break;
    }
    return takes;
  }

  /** Asks the gateway (again: the refund number makes a repeat harmless) and applies its answer. */
  private async send(row: RefundRow, payment: PaymentRow): Promise<void> {
    let state: RefundState;
    try {
      state = await this.deps.drivers[row.method].refund({
        paymentTradeNo: payment.outTradeNo,
        refundNo: row.refundNo,
        amount: row.amount,
        total: payment.amount,
        reason: row.reason,
        notifyUrl: this.notifyUrl(row.method),
      });
    } catch (e) {
      if (e instanceof PaymentGatewayError && (e.kind === 'Rejected' || e.kind === 'NotFound')) {
        await this.apply(row.refundNo, { refundNo: row.refundNo, status: 'Failed', failReason: e.message.slice(0, 300) });
        return;
      }
      // Unreachable, or an answer we cannot trust: it may have arrived; the poller asks.
      this.deps.log.warn({ err: e, refundNo: row.refundNo }, 'refund request not confirmed by the gateway; will ask again');
      return;
    }
    await this.apply(row.refundNo, state);
  }

  /**
   * Moves a 退款中 refund to what the gateway says, once: the row is locked and its status checked,
   * and each outcome's ledger key is unique. Processing/NotFound change nothing but the gateway's id.
   */
  async apply(refundNo: string, state: RefundState): Promise<'applied' | 'replayed'> {
    return this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(refunds).where(eq(refunds.refundNo, refundNo)).for('update');
      if (!row) throw new AppError('RECORD_NOT_FOUND', `未知的退款请求号 ${refundNo}`);
      if (row.status !== 'Processing') return 'replayed';
      const now = this.deps.clock.now();
      if (state.status === 'Succeeded') {
        if (state.amount !== undefined && state.amount !== row.amount) {
          throw new AppError('VALIDATION_FAILED', `退款金额不符：应退 ${formatYuan(row.amount)}，渠道 ${formatYuan(state.amount)}`);
        }
        await this.deps.ledger.post({ key: `refund-done:${row.id}`, kind: 'refund_settle', memo: `退款完成 ${row.refundNo}`, legs: settleLegs(row) }, tx);
        await tx
          .update(refunds)
          .set({ status: 'Succeeded', gatewayRefundNo: state.gatewayRefundNo ?? row.gatewayRefundNo, settledAt: state.succeededAt ?? now, updatedAt: now })
          .where(eq(refunds.id, row.id));
        return 'applied';
      }
      if (state.status === 'Failed') {
        await this.giveBack(tx, row, state.failReason ?? '支付渠道退款失败');
        return 'applied';
      }
      if (state.gatewayRefundNo && !row.gatewayRefundNo) {
        await tx.update(refunds).set({ gatewayRefundNo: state.gatewayRefundNo, updatedAt: now }).where(eq(refunds.id, row.id));
      }
      return 'replayed';
    });
  }

  private async giveBack(tx: Tx, row: RefundRow, why: string) {
    const now = this.deps.clock.now();
    await this.deps.ledger.post(
      { key: `refund-back:${row.id}`, kind: 'refund_back', memo: `退款失败，退回余额：${why}`.slice(0, 300), legs: backLegs(row) },
      tx,
    );
    for (const t of row.giftTakes) await this.deps.gifts.giveBack(tx, t.grantId, BigInt(t.amount));
    await tx
      .update(refunds)
      .set({ status: 'Failed', failReason: why.slice(0, 300), settledAt: now, updatedAt: now })
      .where(eq(refunds.id, row.id));
  }

  /**
   * The scheduler's poll: every refund 退款中 not asked about for REFUND_QUERY_INTERVAL_MS is asked
   * about; one the gateway never received is sent again under its number. Runs under a lease.
   */
  async pollProcessing(limit = 50): Promise<number> {
    const now = this.deps.clock.now();
    const before = new Date(now.getTime() - REFUND_QUERY_INTERVAL_MS);
    const due = await this.deps.db
      .select()
      .from(refunds)
      .where(and(eq(refunds.status, 'Processing'), or(isNull(refunds.lastQueriedAt), lt(refunds.lastQueriedAt, before))))
      .orderBy(asc(refunds.createdAt))
      .limit(limit);
    for (const row of due) await this.refresh(row, now);
    return due.length;
  }

  private async refresh(row: RefundRow, now: Date): Promise<void> {
    await this.deps.db.update(refunds).set({ lastQueriedAt: now }).where(eq(refunds.id, row.id));
    const [payment] = await this.deps.db.select().from(payments).where(eq(payments.id, row.paymentId));
    try {
      const state = await this.deps.drivers[row.method].queryRefund({ refundNo: row.refundNo, paymentTradeNo: payment!.outTradeNo });
      if (state.status === 'NotFound') await this.send(row, payment!);
      else await this.apply(row.refundNo, state);
    } catch (e) {
      this.deps.log.warn({ err: e, refundNo: row.refundNo }, 'refund query failed; will ask again');
    }
  }

  /** A gateway's refund notification: verified, logged, applied at most once. */
  async handleNotification(method: GatewayMethod, headers: Record<string, string | string[] | undefined>, rawBody: string): Promise<NotificationAck> {
    const driver = this.deps.drivers[method];
    const verified = await driver.verifyRefundNotification({ headers, rawBody });
    if (!verified.ok) {
      await this.log(method, '', 'refused', verified.reason, rawBody);
      this.deps.log.warn({ method, reason: verified.reason }, 'refund notification refused');
      return driver.ack(false);
    }
    const n = verified.notification;
    try {
      await this.checkBelongs(n.refundNo, n.paymentTradeNo, method);
      const outcome = await this.apply(n.refundNo, n);
      await this.log(method, n.paymentTradeNo, outcome, `refund ${n.refundNo} ${n.status}`, rawBody);
      return driver.ack(true);
    } catch (e) {
      await this.log(method, n.paymentTradeNo, 'refused', `refund ${n.refundNo}: ${(e as Error).message}`, rawBody);
      this.deps.log.error({ method, refundNo: n.refundNo, err: (e as Error).message }, 'refund notification not applied');
      return driver.ack(false);
    }
  }

  /** A correctly signed notification must still be about a refund of that payment, by that method. */
  private async checkBelongs(refundNo: string, paymentTradeNo: string, method: GatewayMethod) {
    const [r] = await this.deps.db
      .select({ outTradeNo: payments.outTradeNo, method: refunds.method })
      .from(refunds)
      .innerJoin(payments, eq(payments.id, refunds.paymentId))
      .where(eq(refunds.refundNo, refundNo));
    if (!r) throw new AppError('RECORD_NOT_FOUND', `未知的退款请求号 ${refundNo}`);
    if (r.outTradeNo !== paymentTradeNo || r.method !== method) throw new AppError('VALIDATION_FAILED', `退款 ${refundNo} 不属于交易 ${paymentTradeNo}`);
  }

  private async log(method: string, outTradeNo: string, outcome: 'applied' | 'replayed' | 'refused', reason: string, body: string) {
    await this.deps.db
      .insert(paymentNotifications)
      .values({ method, outTradeNo, outcome, reason: reason.slice(0, 500), body: body.slice(0, 8000), createdAt: this.deps.clock.now() });
  }

  async find(id: string): Promise<RefundRow | undefined> {
    const [row] = await this.deps.db.select().from(refunds).where(eq(refunds.id, id));
    return row;
  }

  /** The user's refunds (账单: 退款中 / 已退款 / 退款失败), newest first. */
  async listForUser(userId: string, paging: { page: number; pageSize: number }) {
    return this.page(eq(refunds.userId, userId), paging);
  }

  /** The operator's list: every refund, or those of one payment. */
  async listAll(filter: { outTradeNo?: string }, paging: { page: number; pageSize: number }) {
    return this.page(filter.outTradeNo ? eq(payments.outTradeNo, filter.outTradeNo) : undefined, paging);
  }

  private async page(where: SQL | undefined, paging: { page: number; pageSize: number }) {
    const [{ total } = { total: 0 }] = await this.deps.db
      .select({ total: count() })
      .from(refunds)
      .innerJoin(payments, eq(payments.id, refunds.paymentId))
      .where(where);
    const rows = await this.deps.db
      .select({ r: refunds, outTradeNo: payments.outTradeNo })
      .from(refunds)
      .innerJoin(payments, eq(payments.id, refunds.paymentId))
      .where(where)
      .orderBy(desc(refunds.createdAt), desc(refunds.id))
      .limit(paging.pageSize)
      .offset((paging.page - 1) * paging.pageSize);
    return { items: rows.map((x) => view(x.r, x.outTradeNo)), total, ...paging };
  }
}

function requestLegs(r: RefundRow): Leg[] {
  const legs: Leg[] = [
    { account: { userId: r.userId, kind: 'cash' }, amount: -(r.amount + r.bonusFromCash) },
    { account: { platform: 'refund' }, amount: r.amount },
  ];
  if (r.bonusFromGift > 0n) legs.push({ account: { userId: r.userId, kind: 'gift' }, amount: -r.bonusFromGift });
  const bonus = r.bonusFromGift + r.bonusFromCash;
  if (bonus > 0n) legs.push({ account: { platform: 'promotion' }, amount: bonus });
  return legs;
}

/** The in-flight money reaches the payer: it leaves the gateway's clearing account as it came in. */
function settleLegs(r: RefundRow): Leg[] {
  return [
    { account: { platform: 'refund' }, amount: -r.amount },
    { account: { platform: 'clearing', name: r.method.toLowerCase() }, amount: r.amount },
  ];
}

/** The request's legs reversed: the amount and the bonus share back where they came from. */
function backLegs(r: RefundRow): Leg[] {
  return requestLegs(r).map((l) => ({ ...l, amount: -l.amount }));
}

function view(r: RefundRow, outTradeNo: string): Refund {
  return {
    id: r.id,
    refundNo: r.refundNo,
    outTradeNo,
    method: r.method,
    amount: String(r.amount),
    bonusTaken: String(r.bonusFromGift + r.bonusFromCash),
    reason: r.reason,
    status: r.status,
    statusText: RefundStatus.label(r.status),
    failReason: r.failReason,
    createdAt: r.createdAt.toISOString(),
    settledAt: r.settledAt?.toISOString() ?? null,
  };
}
