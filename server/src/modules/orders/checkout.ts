/**
 * Checkout (DESIGN.md "Orders and instances"): an Unpaid order is paid from the balance (the chosen
 * voucher, then gift credit by earliest expiry, then cash) or by a gateway QR for what is left after
 * the voucher, then handed to its fulfiller (fulfillers.ts). A failed fulfilment refunds every part
 * to where it came from. Unpaid orders expire; paid orders a crashed process left behind are
 * recovered. Also the orders that are paid and delivered in one transaction (an auto-renewal) and
 * the money-back orders (refund of unused time, a bandwidth downgrade).
 */
import { and, eq, lt } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { formatYuan, OrderStatus, roundUpToFen, type InstanceCategory, type Order, type OrderKind, type PayOrderRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { orderPayments, orders } from './schema.js';
import type { GatewayMethod } from '../../drivers/payment/types.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { GiftService } from '../gifts/index.js';
import type { Leg, LedgerService } from '../ledger/index.js';
import type { PaymentRow, PaymentService } from '../payments/index.js';
import type { VoucherService } from '../vouchers/index.js';
import type { Fulfillers } from './fulfillers.js';
import { findOrder, moveOrder, newOrderRow, orderPartsOf, orderView, type NewOrder, type OrderRow, type OrderScope } from './rows.js';
import type { ChildSpending } from './spending.js';

/** How long a paid order may wait for fulfilment before recovery takes it over (a crashed process). */
export const FULFIL_GRACE_MS = 60_000;

export interface CheckoutDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  gifts: GiftService;
  vouchers: VoucherService;
  payments: PaymentService;
  fulfillers: Fulfillers;
  log: FastifyBaseLogger;
  /** Child accounts' spending limits, checked when a child's order is paid (absent: no limits). */
  spending?: ChildSpending;
}

/**
 * Who acts on an order: whose balance it is (a child acts on its parent's orders) and whether this
 * account may act on it — paying, opening a QR for or cancelling an order needs what placing it
 * needed (spec §6), so a child without the permission cannot spend on its parent's orders.
 */
export interface Buyer extends OrderScope {
  assertMayActOn(order: { category: string; type: string }): void;
}

export class Checkout {
  constructor(private deps: CheckoutDeps) {
    deps.payments.register('order', {
      onPaid: (tx, p) => this.onGatewayPaid(tx, p),
      onClosed: async () => {},
      afterPaid: async (p) => {
        const [row] = await deps.db.select().from(orders).where(eq(orders.id, p.subjectId));
        if (row) await this.fulfil(row);
      },
    });
  }

  /**
   * Pays an order. Balance: everything happens in one transaction and fulfilment follows. A gateway:
   * a QR for what is left after the voucher; when its money arrives the same balance payment runs.
   */
  async pay(buyer: Buyer, kind: OrderKind, uid: string, req: PayOrderRequest) {
    const payerId = buyer.payerId;
    let row = await findOrder(this.deps.db, buyer, kind, uid);
    buyer.assertMayActOn(row);
    await this.refuseUnlessPayable(row, '不能支付');
    // No voucher in the request: the one chosen on the order (PUT …/voucher) pays; null pays without one.
    const voucherId = req.voucherId === undefined ? row.voucherId : req.voucherId;
    if (req.method === 'Balance') {
      await this.deps.db.transaction((tx) => this.payFromBalance(tx, row.id, voucherId, { useGift: true, method: 'Balance' }));
      row = await findOrder(this.deps.db, payerId, kind, uid);
      await this.fulfil(row);
      return this.status(payerId, kind, uid);
    }
    await this.openPayment(row, req.method, voucherId);
    return this.status(payerId, kind, uid);
  }

  /**
   * PUT …/voucher: the voucher an unpaid order is to be paid with, kept on the order (a refreshed
   * pay dialog shows it, a QR is opened for what it leaves). It must be the payer's, usable for the
   * order's product and its minimum spend met; null takes it off. A QR opened for another voucher
   * is closed, since it asks for another amount.
   */
  async chooseVoucher(buyer: Buyer, kind: OrderKind, uid: string, voucherId: string | null): Promise<Order> {
    const row = await findOrder(this.deps.db, buyer, kind, uid);
    buyer.assertMayActOn(row);
    await this.refuseUnlessPayable(row, '不能更换代金券');
    const deduction = voucherId ? await this.previewVoucher(row, voucherId) : 0n;
    if (voucherId !== row.voucherId) await this.closeOpenPayment(row);
    const [saved] = await this.deps.db
      .update(orders)
      .set({ voucherId, voucherDeduction: deduction, updatedAt: this.deps.clock.now() })
      .where(and(eq(orders.id, row.id), eq(orders.status, 'Unpaid')))
      .returning();
    if (!saved) throw new AppError('ORDER_STATE_INVALID', '订单状态已变化，请刷新后重试');
    return orderView(saved, []);
  }

  /** An unpaid order past its time: it expires when next looked at (expireDue catches the others). */
  private overdue(row: OrderRow): boolean {
    return row.status === 'Unpaid' && this.deps.clock.now() >= row.expiresAt;
  }

  /** Refuses an order that can no longer be paid: one past its time expires first (its QR closed), then is refused. */
  private async refuseUnlessPayable(row: OrderRow, refusal: string): Promise<void> {
    if (this.overdue(row)) {
      await this.expire(row);
      throw new AppError('ORDER_EXPIRED');
    }
    if (row.status !== 'Unpaid') throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，${refusal}`);
  }

  /** GET …/pay: the order's status and its open QR payment (asking the gateway if a notification is late). */
  async status(scope: string | OrderScope, kind: OrderKind, uid: string) {
    const payerId = typeof scope === 'string' ? scope : scope.payerId;
    let row = await findOrder(this.deps.db, scope, kind, uid);
    let payment: PaymentRow | null = null;
    try {
      payment = await this.deps.payments.bySubject(row.id);
    } catch {
      payment = null;
    }
    if (payment?.status === 'Pending') {
      payment = await this.deps.payments.refresh(payment.id);
      row = await findOrder(this.deps.db, payerId, kind, uid);
    }
    if (row.status === 'Paid') {
      await this.fulfil(row);
      row = await findOrder(this.deps.db, payerId, kind, uid);
    }
    if (this.overdue(row)) row = await this.expire(row);
    return { orderUid: row.orderUid, status: row.status, payment: payment ? qrView(payment) : null };
  }

  /** GET …/qrcode/{alipay|wechat}: the open QR of that method, opened if there is none. */
  async qrcode(buyer: Buyer, kind: OrderKind, uid: string, method: GatewayMethod) {
    const row = await findOrder(this.deps.db, buyer, kind, uid);
    buyer.assertMayActOn(row);
    if (row.status !== 'Unpaid') throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，无需支付`);
    const open = await this.deps.payments.bySubject(row.id).catch(() => null);
    if (open && open.status === 'Pending' && open.method === method) return qrView(open);
    return qrView(await this.openPayment(row, method, row.voucherId));
  }

  /** An unpaid order the payer gives up: its open QR is closed first, so no money can arrive for it. */
  async cancel(buyer: Buyer, kind: OrderKind, uid: string): Promise<Order> {
    const payerId = buyer.payerId;
    const row = await findOrder(this.deps.db, buyer, kind, uid);
    buyer.assertMayActOn(row);
    await this.closeOpenPayment(row);
    await this.deps.db.transaction((tx) => moveOrder(tx, this.deps.clock, row, 'Cancelled'));
    return orderView(await findOrder(this.deps.db, payerId, kind, uid), await orderPartsOf(this.deps.db, row.id));
  }

  // --- paying --------------------------------------------------------------------

  private async openPayment(row: OrderRow, method: GatewayMethod, voucherId: string | null): Promise<PaymentRow> {
    await this.closeOpenPayment(row);
    const deduction = voucherId ? await this.previewVoucher(row, voucherId) : 0n;
    // Gateways move whole fen: round up; the fraction stays in the user's cash.
    const due = roundUpToFen(row.amount - deduction);
    if (due === 0n) throw new AppError('VALIDATION_FAILED', 'method：代金券已抵扣全部金额，请使用余额支付');
    // The QR's money lands in the parent's cash and pays from there: a child's limit is checked before anyone scans.
    await this.assertChildRoom(this.deps.db, row, row.amount - deduction);
    await this.deps.db.update(orders).set({ voucherId, voucherDeduction: deduction, updatedAt: this.deps.clock.now() }).where(eq(orders.id, row.id));
    return this.deps.payments.create({
      purpose: 'order',
      subjectId: row.id,
      userId: row.userId,
      method,
      amount: due,
      subject: `算力云订单 ${row.orderUid}`,
      expiresAt: row.expiresAt,
    });
  }

  private async closeOpenPayment(row: OrderRow) {
    const open = await this.deps.payments.bySubject(row.id).catch(() => null);
    if (open?.status === 'Pending') await this.deps.payments.close(open, 'cancelled');
  }

  /** The gateway's money is in the user's cash: pay the order from it, in the same transaction. */
  private async onGatewayPaid(tx: Tx, payment: PaymentRow) {
    const [row] = await tx.select().from(orders).where(eq(orders.id, payment.subjectId)).for('update');
    if (!row || row.status !== 'Unpaid') {
      // Paid after the order expired or was cancelled: the money stays as cash, visible on the balance page.
      this.deps.log.warn({ order: payment.subjectId, outTradeNo: payment.outTradeNo }, 'gateway money for an order that is no longer unpaid: kept as cash');
      return;
    }
    try {
      await tx.transaction((inner) => this.payFromBalance(inner, row.id, row.voucherId, { useGift: false, method: payment.method }));
    } catch (e) {
      // A voucher spent elsewhere meanwhile: the cash stays, the order stays unpaid, the user can pay again.
      this.deps.log.warn({ order: row.orderUid, err: (e as Error).message }, 'order not paid from gateway money');
    }
  }

  private async previewVoucher(row: OrderRow, voucherId: string): Promise<bigint> {
    const v = await this.deps.vouchers.usableFor(row.userId, voucherId, row.category as InstanceCategory, this.deps.clock.now());
    if (row.amount < v.minSpend) throw new AppError('VOUCHER_UNUSABLE', `该券需满 ${formatYuan(v.minSpend)} 元可用`);
    return v.amount < row.amount ? v.amount : row.amount;
  }

  /**
   * One ledger transfer for the whole payment: the voucher (its unused rest goes back to the
   * promotion account: a voucher is spent once), gift credit by earliest expiry, then cash.
   */
  private async payFromBalance(tx: Tx, orderId: string, voucherId: string | null, opts: { useGift: boolean; method: 'Balance' | GatewayMethod }) {
    const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
    if (!row) throw new AppError('RECORD_NOT_FOUND', '订单不存在');
    if (row.status !== 'Unpaid') throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，不能支付`);
    const now = this.deps.clock.now();
    const payer = row.userId;
    const legs: Leg[] = [];
    const parts: (typeof orderPayments.$inferInsert)[] = [];
    let rest = row.amount;

    let deduction = 0n;
    if (voucherId) {
      const v = await this.deps.vouchers.usableFor(payer, voucherId, row.category as InstanceCategory, now, tx);
      if (rest < v.minSpend) throw new AppError('VOUCHER_UNUSABLE', `该券需满 ${formatYuan(v.minSpend)} 元可用`);
      deduction = v.amount < rest ? v.amount : rest;
      legs.push({ account: { userId: payer, kind: 'voucher' }, amount: -v.amount });
      if (v.amount > deduction) legs.push({ account: { platform: 'promotion' }, amount: v.amount - deduction });
      await this.deps.vouchers.markUsed(tx, v.id);
      if (deduction > 0n) parts.push({ orderId, source: 'voucher', amount: deduction, voucherId: v.id, createdAt: now });
      rest -= deduction;
    }

    // What the wallet pays counts against a child's spending limit, checked under a per-child lock.
    await this.assertChildRoom(tx, row, rest, true);
    if (rest > 0n) rest -= await this.spendGiftThenCash(tx, { payer, orderId, amount: rest, useGift: opts.useGift, cashUpTo: null, legs, parts, now });
    legs.push({ account: { platform: 'revenue' }, amount: row.amount });
    if (legs.length > 1) {
      await this.deps.ledger.post(
        { key: `order-pay:${orderId}`, kind: 'order', memo: row.description, actorId: row.createdBy, orderId: row.orderUid, legs },
        tx,
      );
    }
    if (parts.length) await tx.insert(orderPayments).values(parts);
    await tx
      .update(orders)
      .set({ status: 'Paid', payMethod: opts.method, voucherId, voucherDeduction: deduction, paidAt: now, updatedAt: now })
      .where(and(eq(orders.id, orderId), eq(orders.status, 'Unpaid')));
  }

  /** A child's order may take `amount` from its parent's wallet only within the child's spending limit (orders/spending.ts). */
  private async assertChildRoom(exec: Db | Tx, row: OrderRow, amount: bigint, lock = false): Promise<void> {
    if (!this.deps.spending || row.createdBy === row.userId) return;
    await this.deps.spending.assertRoom(exec, row.createdBy, amount, { lock });
  }

  /**
   * Takes `amount` from gift credit (earliest expiry first, if `useGift`) and then cash, adding the
   * legs and payment parts. `cashUpTo` caps the cash taken (a usage tick takes what there is); the
   * ledger still refuses cash below zero. Returns what was taken.
   */
  private async spendGiftThenCash(
    tx: Tx,
    a: {
      payer: string;
      orderId: string;
      amount: bigint;
      useGift: boolean;
      cashUpTo: bigint | null;
      legs: Leg[];
      parts: (typeof orderPayments.$inferInsert)[];
      now: Date;
    },
  ): Promise<bigint> {
    let rest = a.amount;
    if (a.useGift) {
      for (const g of await this.deps.gifts.lockSpendable(tx, a.payer)) {
        if (rest === 0n) break;
        const take = g.remain < rest ? g.remain : rest;
        await this.deps.gifts.take(tx, g.id, take);
        a.legs.push({ account: { userId: a.payer, kind: 'gift' }, amount: -take });
        a.parts.push({ orderId: a.orderId, source: 'gift', amount: take, giftGrantId: g.id, createdAt: a.now });
        rest -= take;
      }
    }
    const cash = a.cashUpTo !== null && a.cashUpTo < rest ? a.cashUpTo : rest;
    if (cash > 0n) {
      a.legs.push({ account: { userId: a.payer, kind: 'cash' }, amount: -cash });
      a.parts.push({ orderId: a.orderId, source: 'cash', amount: cash, createdAt: a.now });
      rest -= cash;
    }
    return a.amount - rest;
  }

  // --- orders paid and delivered in one go; money back without a purchase -------------

  /**
   * An order created and paid from the balance in one go, inside the caller's transaction, which
   * also delivers it (an auto-renewal): gift credit by earliest expiry, then cash, as balance
   * payment does; no voucher. `id` is derived from the business event, so a repeated or concurrent
   * attempt inserts nothing and returns null. A balance that cannot pay throws INSUFFICIENT_BALANCE
   * before anything is written (the caller's transaction rolls back).
   */
  async payNewFromBalance(tx: Tx, o: NewOrder, id: string, resourceId: string): Promise<OrderRow | null> {
    this.deps.fulfillers.assertOnSale(o.category, o.type);
    const now = this.deps.clock.now();
    const amount = BigInt(o.quote.total);
    const [row] = await tx
      .insert(orders)
      .values(newOrderRow(o, now, { id, status: 'Success', payMethod: 'Balance', expiresAt: now, paidAt: now, fulfilledAt: now, resourceId }))
      .onConflictDoNothing()
      .returning();
    if (!row) return null;
    const legs: Leg[] = [];
    const parts: (typeof orderPayments.$inferInsert)[] = [];
    const taken =
      amount > 0n ? await this.spendGiftThenCash(tx, { payer: o.payerId, orderId: id, amount, useGift: true, cashUpTo: null, legs, parts, now }) : 0n;
    const cashLeg = legs.find((l) => 'userId' in l.account && l.account.kind === 'cash');
    const cash = cashLeg ? -cashLeg.amount : 0n;
    if (taken < amount || (cash > 0n && (await this.deps.ledger.balances(o.payerId, tx)).cash < cash)) {
      throw new AppError('INSUFFICIENT_BALANCE', `需 ${formatYuan(amount)} 元，余额不足`);
    }
    if (legs.length) {
      legs.push({ account: { platform: 'revenue' }, amount });
      await this.deps.ledger.post({ key: `order-pay:${id}`, kind: 'order', memo: o.description, actorId: o.createdBy, orderId: row.orderUid, legs }, tx);
      await tx.insert(orderPayments).values(parts);
    }
    return row;
  }

  /**
   * A money-back order (Refund, TrafficDowngrade; status Refunded) and its one ledger transfer from
   * revenue back to cash and to the gift grants that paid, inside the caller's transaction. `id` is derived from the instance:
   * a second refund inserts nothing and gets REFUND_DONE.
   */
  async postRefund(tx: Tx, o: NewOrder, id: string, back: { cash: bigint; gift: { grantId: string; amount: bigint }[] }): Promise<OrderRow> {
    const now = this.deps.clock.now();
    const total = back.cash + back.gift.reduce((n, g) => n + g.amount, 0n);
    const [row] = await tx
      .insert(orders)
      .values(
        newOrderRow(o, now, { id, type: o.type, status: 'Refunded', amount: total, payMethod: 'Balance', expiresAt: now, refundedAt: now, fulfilledAt: now }),
      )
      .onConflictDoNothing()
      .returning();
    if (!row) throw new AppError('REFUND_DONE');
    const legs: Leg[] = [{ account: { platform: 'revenue' }, amount: -total }];
    if (back.cash > 0n) legs.push({ account: { userId: o.payerId, kind: 'cash' }, amount: back.cash });
    for (const g of back.gift) {
      if (g.amount <= 0n) continue;
      legs.push({ account: { userId: o.payerId, kind: 'gift' }, amount: g.amount });
      await this.deps.gifts.giveBack(tx, g.grantId, g.amount);
    }
    if (total > 0n)
      await this.deps.ledger.post({ key: `instance-refund:${id}`, kind: 'refund', memo: o.description, actorId: o.createdBy, orderId: row.orderUid, legs }, tx);
    return row;
  }

  // --- fulfilment and refunds ----------------------------------------------------

  /** Hands a paid order to its domain; a failure refunds it. Safe to call again (fulfillers are idempotent). */
  async fulfil(row: OrderRow): Promise<void> {
    if (row.status !== 'Paid') return;
    try {
      const { resourceId } = await this.deps.fulfillers.fulfil(row);
      await this.deps.db.transaction((tx) => moveOrder(tx, this.deps.clock, row, 'Success', { resourceId, fulfilledAt: this.deps.clock.now() }));
    } catch (e) {
      if (isAppError(e, 'ORDER_STATE_INVALID')) return; // someone else finished it
      this.deps.log.error({ order: row.orderUid, err: (e as Error).message }, 'fulfilment failed: refunding');
      await this.deps.db.transaction(async (tx) => {
        const failed = await moveOrder(tx, this.deps.clock, row, 'Failed', { failReason: (e as Error).message.slice(0, 500) });
        await this.refund(tx, failed);
      });
    }
  }

  /** Puts every part back where it came from and marks the order Refunded. */
  async refund(tx: Tx, row: OrderRow): Promise<void> {
    const parts = await tx.select().from(orderPayments).where(eq(orderPayments.orderId, row.id));
    const legs: Leg[] = [{ account: { platform: 'revenue' }, amount: -row.amount }];
    for (const p of parts) {
      if (p.source === 'cash') legs.push({ account: { userId: row.userId, kind: 'cash' }, amount: p.amount });
      if (p.source === 'gift') {
        legs.push({ account: { userId: row.userId, kind: 'gift' }, amount: p.amount });
        await this.deps.gifts.giveBack(tx, p.giftGrantId!, p.amount);
      }
      if (p.source === 'voucher') {
        // The voucher comes back whole, as it was before this order: its unused rest returns from promotion.
        const v = await this.deps.vouchers.restore(tx, p.voucherId!);
        legs.push({ account: { userId: row.userId, kind: 'voucher' }, amount: v.amount });
        if (v.amount > p.amount) legs.push({ account: { platform: 'promotion' }, amount: -(v.amount - p.amount) });
      }
    }
    if (legs.length > 1) {
      await this.deps.ledger.post({ key: `order-refund:${row.id}`, kind: 'refund', memo: `退款：${row.description}`, orderId: row.orderUid, legs }, tx);
    }
    await moveOrder(tx, this.deps.clock, row, 'Refunded', { refundedAt: this.deps.clock.now() });
  }

  /**
   * After a crash: orders paid but not fulfilled for longer than FULFIL_GRACE_MS are fulfilled now
   * (or refunded if that fails). Run at start and by the scheduler.
   */
  async recoverPaid(limit = 100): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - FULFIL_GRACE_MS);
    const stuck = await this.deps.db
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'Paid'), lt(orders.updatedAt, before)))
      .limit(limit);
    for (const row of stuck) await this.fulfil(row);
    return stuck.length;
  }

  /** Unpaid orders past their time become Expired (their QR closed first). */
  async expireDue(payerId?: string, limit = 100): Promise<number> {
    const now = this.deps.clock.now();
    const conds = [eq(orders.status, 'Unpaid'), lt(orders.expiresAt, now)];
    if (payerId) conds.push(eq(orders.userId, payerId));
    const due = await this.deps.db
      .select()
      .from(orders)
      .where(and(...conds))
      .limit(limit);
    for (const row of due) await this.expire(row);
    return due.length;
  }

  /** The order, Expired if it was still Unpaid (its QR closed first); as it is otherwise. */
  async expire(row: OrderRow): Promise<OrderRow> {
    await this.closeOpenPayment(row).catch((e) => this.deps.log.warn({ err: e, order: row.orderUid }, 'closing the QR of an expired order failed'));
    return this.deps.db.transaction(async (tx) => {
      const [fresh] = await tx.select().from(orders).where(eq(orders.id, row.id)).for('update');
      if (!fresh || fresh.status !== 'Unpaid') return fresh ?? row;
      return moveOrder(tx, this.deps.clock, fresh, 'Expired');
    });
  }

  /** What was delivered failed afterwards (a machine that never came up): the whole order goes back. */
  async refundDelivered(orderId: string, reason: string): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
      if (!row || row.status !== 'Success') return;
      await tx
        .update(orders)
        .set({ failReason: reason.slice(0, 500) })
        .where(eq(orders.id, orderId));
      await this.refund(tx, { ...row, failReason: reason });
    });
  }
}

function qrView(p: PaymentRow) {
  return {
    method: p.method,
    amount: String(p.amount),
    qrContent: p.status === 'Pending' ? p.qrContent : '',
    expiresAt: p.expiresAt.toISOString(),
    status: p.status,
  };
}
