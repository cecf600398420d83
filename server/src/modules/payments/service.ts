/**
 * Money that comes in through a gateway. A payment is created Pending with the QR content the
 * gateway gave; it becomes Succeeded only from a notification whose signature checked out (or, when
 * a notification is late, from the gateway's own answer to a query), and then exactly once:
 * the payment row is locked, the ledger key is the trade number, a replay posts nothing.
 *
 * What the money was for (a recharge, an order) is a purpose whose handler runs in the same
 * transaction, so "paid" and "credited" cannot be separated by a crash.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, desc, eq, lt } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { formatYuan, PaymentMethod } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { paymentNotifications, payments } from './schema.js';
import type { GatewayMethod, NotificationAck, PaymentDriver, TradeState } from '../../drivers/payment/types.js';
import { AppError } from '../../http/errors.js';
import type { LedgerService } from '../ledger/index.js';

export type PaymentRow = typeof payments.$inferSelect;
export type Purpose = PaymentRow['purpose'];

export interface PurposeHandler {
  /** The gateway's money has reached the user's cash account; do what it was for. */
  onPaid(tx: Tx, payment: PaymentRow): Promise<void>;
  /** The payment can no longer be paid (expired or cancelled). */
  onClosed(tx: Tx, payment: PaymentRow): Promise<void>;
  /** After the paid transaction committed: work that must not hold it open (an order's fulfilment). */
  afterPaid?(payment: PaymentRow): Promise<void>;
}

/** How often a page polling a pending payment may make us ask the gateway. */
export const QUERY_INTERVAL_MS = 5000;

export function newTradeNo(prefix: string, now: Date): string {
  const stamp = now.toISOString().replace(/\D/g, '').slice(0, 14);
  return `${prefix}${stamp}${randomBytes(6).toString('hex')}`;
}

export class PaymentService {
  private handlers = new Map<Purpose, PurposeHandler>();

  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      ledger: LedgerService;
      drivers: Record<GatewayMethod, PaymentDriver>;
      publicBaseUrl: string;
      log: FastifyBaseLogger;
    },
  ) {}

  register(purpose: Purpose, handler: PurposeHandler) {
    this.handlers.set(purpose, handler);
  }

  notifyUrl(method: GatewayMethod) {
    return `${this.deps.publicBaseUrl}/billing/api/v1/payment/notify/${method.toLowerCase()}`;
  }

  /**
   * Opens a gateway trade. The row is written first, so a notification can never arrive for a
   * trade we do not know; if the gateway refuses, the row is closed and the caller told.
   */
  async create(p: {
    purpose: Purpose;
    subjectId: string;
    userId: string;
    method: GatewayMethod;
    amount: bigint;
    subject: string;
    expiresAt: Date;
  }): Promise<PaymentRow> {
    const now = this.deps.clock.now();
    const row: PaymentRow = {
      id: randomUUID(),
      outTradeNo: newTradeNo(p.purpose === 'recharge' ? 'R' : 'P', now),
      method: p.method,
      purpose: p.purpose,
      subjectId: p.subjectId,
      userId: p.userId,
      amount: p.amount,
      status: 'Pending',
      gatewayTradeNo: null,
      qrContent: '',
      expiresAt: p.expiresAt,
      paidAt: null,
      lastQueriedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.db.insert(payments).values(row);
    try {
      const { qrContent } = await this.deps.drivers[p.method].precreate({
        outTradeNo: row.outTradeNo,
        amount: p.amount,
        subject: p.subject,
        expiresAt: p.expiresAt,
        notifyUrl: this.notifyUrl(p.method),
      });
      await this.deps.db.update(payments).set({ qrContent, updatedAt: now }).where(eq(payments.id, row.id));
      return { ...row, qrContent };
    } catch (e) {
      this.deps.log.error({ err: e, outTradeNo: row.outTradeNo }, 'gateway precreate failed');
      await this.deps.db.update(payments).set({ status: 'Closed', updatedAt: now }).where(eq(payments.id, row.id));
      throw new AppError('UPSTREAM_FAILED', `${PaymentMethod.label(p.method)}下单失败，请稍后重试或换一种支付方式`);
    }
  }

  /** A gateway's POST: verified, logged, applied at most once. The ack tells the gateway to stop retrying. */
  async handleNotification(method: GatewayMethod, headers: Record<string, string | string[] | undefined>, rawBody: string): Promise<NotificationAck> {
    const driver = this.deps.drivers[method];
    const verified = await driver.verifyNotification({ headers, rawBody });
    if (!verified.ok) {
      await this.logNotification(method, '', 'refused', verified.reason, rawBody);
      this.deps.log.warn({ method, reason: verified.reason }, 'payment notification refused');
      return driver.ack(false);
    }
    const n = verified.notification;
    if (n.status !== 'Succeeded') {
      await this.logNotification(method, n.outTradeNo, 'replayed', `trade status ${n.status}: nothing to credit`, rawBody);
      return driver.ack(true);
    }
    try {
      const outcome = await this.applySucceeded(method, n);
      await this.logNotification(method, n.outTradeNo, outcome, '', rawBody);
      return driver.ack(true);
    } catch (e) {
      const reason = e instanceof AppError ? `${e.message}` : (e as Error).message;
      await this.logNotification(method, n.outTradeNo, 'refused', reason, rawBody);
      this.deps.log.error({ method, outTradeNo: n.outTradeNo, reason }, 'payment notification not applied');
      return driver.ack(false);
    }
  }

  /**
   * Credits a succeeded trade once. The amount must be the one we asked for; the payment may have
   * been closed on our side meanwhile (the payer was quicker than the expiry): money that arrived
   * is credited all the same, and the purpose decides what to do with it.
   */
  async applySucceeded(method: GatewayMethod, trade: TradeState): Promise<'applied' | 'replayed'> {
    let paid: PaymentRow | null = null;
    const outcome = await this.deps.db.transaction(async (tx) => {
      const [payment] = await tx.select().from(payments).where(eq(payments.outTradeNo, trade.outTradeNo)).for('update');
      if (!payment) throw new AppError('RECORD_NOT_FOUND', `未知的交易号 ${trade.outTradeNo}`);
      if (payment.method !== method) throw new AppError('VALIDATION_FAILED', `交易 ${trade.outTradeNo} 不是${method}交易`);
      if (payment.status === 'Succeeded') return 'replayed';
      if (trade.amount !== undefined && trade.amount !== payment.amount) {
        throw new AppError('VALIDATION_FAILED', `金额不符：应收 ${formatYuan(payment.amount)}，通知 ${formatYuan(trade.amount)}`);
      }
      const now = this.deps.clock.now();
      await this.deps.ledger.post(
        {
          key: `payment:${payment.outTradeNo}`,
          kind: 'gateway_in',
          memo: `${PaymentMethod.label(method)}到账 ${payment.outTradeNo}`,
          actorId: payment.userId,
          legs: [
            { account: { platform: 'clearing', name: method.toLowerCase() }, amount: -payment.amount },
            { account: { userId: payment.userId, kind: 'cash' }, amount: payment.amount },
          ],
        },
        tx,
      );
      paid = { ...payment, status: 'Succeeded' as const, gatewayTradeNo: trade.gatewayTradeNo ?? null, paidAt: trade.paidAt ?? now, updatedAt: now };
      await tx
        .update(payments)
        .set({ status: paid.status, gatewayTradeNo: paid.gatewayTradeNo, paidAt: paid.paidAt, updatedAt: now })
        .where(eq(payments.id, payment.id));
      await this.handler(payment.purpose).onPaid(tx, paid);
      return 'applied' as const;
    });
    if (paid) {
      const done = paid as PaymentRow;
      await this.handler(done.purpose)
        .afterPaid?.(done)
        .catch((e: Error) => this.deps.log.error({ outTradeNo: done.outTradeNo, err: e.message }, 'after-payment step failed; recovery will retry'));
    }
    return outcome;
  }

  /**
   * What a polling page sees. A pending payment past its expiry is closed at the gateway; one whose
   * notification is late is asked about (at most every QUERY_INTERVAL_MS), and applied if paid.
   */
  async refresh(paymentId: string): Promise<PaymentRow> {
    const payment = await this.get(paymentId);
    if (payment.status !== 'Pending') return payment;
    const now = this.deps.clock.now();
    if (payment.lastQueriedAt && now.getTime() - payment.lastQueriedAt.getTime() < QUERY_INTERVAL_MS && now < payment.expiresAt) return payment;
    await this.deps.db.update(payments).set({ lastQueriedAt: now }).where(eq(payments.id, payment.id));
    const driver = this.deps.drivers[payment.method];
    let state: TradeState | null = null;
    try {
      state = await driver.query(payment.outTradeNo);
    } catch (e) {
      this.deps.log.warn({ err: e, outTradeNo: payment.outTradeNo }, 'gateway query failed');
    }
    if (state?.status === 'Succeeded') {
      await this.applySucceeded(payment.method, state);
    } else if (now >= payment.expiresAt) {
      await this.close(payment, 'expired');
    }
    return this.get(paymentId);
  }

  /** Closes a pending payment at the gateway first, so it cannot be paid after we give up on it. */
  async close(payment: PaymentRow, why: 'expired' | 'cancelled'): Promise<void> {
    try {
      await this.deps.drivers[payment.method].close(payment.outTradeNo);
    } catch (e) {
      // Paid in the meantime? Then the query answers Succeeded and we credit it instead of closing.
      const state = await this.deps.drivers[payment.method].query(payment.outTradeNo).catch(() => null);
      if (state?.status === 'Succeeded') {
        await this.applySucceeded(payment.method, state);
        return;
      }
      this.deps.log.warn({ err: e, outTradeNo: payment.outTradeNo }, 'gateway close failed');
      if (why === 'cancelled') throw new AppError('UPSTREAM_FAILED', '取消支付失败，请稍后重试');
    }
    await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(payments).where(eq(payments.id, payment.id)).for('update');
      if (!row || row.status !== 'Pending') return;
      await tx.update(payments).set({ status: 'Closed', updatedAt: this.deps.clock.now() }).where(eq(payments.id, row.id));
      await this.handler(row.purpose).onClosed(tx, { ...row, status: 'Closed' });
    });
  }

  /** Closes every pending payment past its expiry: run by the scheduler, safe in several processes. */
  async closeExpired(limit = 100): Promise<number> {
    const due = await this.deps.db
      .select()
      .from(payments)
      .where(and(eq(payments.status, 'Pending'), lt(payments.expiresAt, this.deps.clock.now())))
      .limit(limit);
    for (const p of due) await this.refresh(p.id);
    return due.length;
  }

  async get(paymentId: string): Promise<PaymentRow> {
    const [row] = await this.deps.db.select().from(payments).where(eq(payments.id, paymentId));
    if (!row) throw new AppError('RECORD_NOT_FOUND', '支付记录不存在');
    return row;
  }

  /** The latest payment opened for a recharge or order. */
  async bySubject(subjectId: string): Promise<PaymentRow> {
    const [row] = await this.deps.db.select().from(payments).where(eq(payments.subjectId, subjectId)).orderBy(desc(payments.createdAt)).limit(1);
    if (!row) throw new AppError('RECORD_NOT_FOUND', '支付记录不存在');
    return row;
  }

  private handler(purpose: Purpose): PurposeHandler {
    const h = this.handlers.get(purpose);
    if (!h) throw new Error(`payments: no handler for ${purpose}`);
    return h;
  }

  private async logNotification(method: string, outTradeNo: string, outcome: 'applied' | 'replayed' | 'refused', reason: string, body: string) {
    await this.deps.db
      .insert(paymentNotifications)
      .values({ method, outTradeNo, outcome, reason: reason.slice(0, 500), body: body.slice(0, 8000), createdAt: this.deps.clock.now() });
  }
}
