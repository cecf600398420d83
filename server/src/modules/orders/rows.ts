/**
 * An order's row, shared by the files of this module: how a new one looks, the one way its status
 * changes (ORDER_TRANSITIONS with a guarded update, so two requests cannot both move the same order),
 * how it is found for its payer and how it is shown.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { canMoveOrder, OrderStatus, type Order, type OrderKind, type OrderPrice, type OrderStatus as Status, type OrderType } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { orderPayments, orders } from './schema.js';
import { AppError } from '../../http/errors.js';

export type OrderRow = typeof orders.$inferSelect;
export type OrderPart = typeof orderPayments.$inferSelect;

export interface NewOrder {
  payerId: string;
  createdBy: string;
  kind: OrderKind;
  type: OrderType;
  category: string;
  request: unknown;
  quote: OrderPrice;
  description: string;
}

export function newOrderUid(now: Date): string {
  return `O${now.toISOString().replace(/\D/g, '').slice(0, 14)}${randomBytes(4).toString('hex')}`;
}

/** A new order's row: Unpaid at the quote's total unless `set` says otherwise. */
export function newOrderRow(o: NewOrder, now: Date, set: Partial<OrderRow> & Pick<OrderRow, 'expiresAt'>): OrderRow {
  return {
    id: randomUUID(),
    orderUid: newOrderUid(now),
    userId: o.payerId,
    createdBy: o.createdBy,
    kind: o.kind,
    type: o.type,
    category: o.category,
    status: 'Unpaid',
    request: o.request,
    quote: o.quote,
    description: o.description,
    amount: BigInt(o.quote.total),
    voucherId: null,
    voucherDeduction: 0n,
    payMethod: null,
    resourceId: null,
    failReason: null,
    paidAt: null,
    fulfilledAt: null,
    refundedAt: null,
    createdAt: now,
    updatedAt: now,
    ...set,
  };
}

/** The one way an order changes status: allowed by the state machine, and only from the status it had. */
export async function moveOrder(tx: Tx, clock: Clock, row: OrderRow, to: Status, set: Partial<OrderRow> = {}): Promise<OrderRow> {
  if (!canMoveOrder(row.status, to)) throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，不能变为${OrderStatus.label(to)}`);
  const [moved] = await tx
    .update(orders)
    .set({ ...set, status: to, updatedAt: clock.now() })
    .where(and(eq(orders.id, row.id), eq(orders.status, row.status)))
    .returning();
  if (!moved) throw new AppError('ORDER_STATE_INVALID', '订单状态已变化，请刷新后重试');
  return moved;
}

/**
 * Whose orders a caller sees: the payer's, and with `createdBy` only those that account created (a
 * child without the 财务 permission sees only its own orders).
 */
export interface OrderScope {
  payerId: string;
  createdBy?: string;
}

/** The payer's order of this kind with this number (within the scope: another child's order is "not found"). */
export async function findOrder(db: Db, scope: string | OrderScope, kind: OrderKind, uid: string): Promise<OrderRow> {
  const { payerId, createdBy } = typeof scope === 'string' ? { payerId: scope, createdBy: undefined } : scope;
  const [row] = await db
    .select()
    .from(orders)
    .where(and(eq(orders.orderUid, uid), eq(orders.userId, payerId), eq(orders.kind, kind), createdBy ? eq(orders.createdBy, createdBy) : undefined));
  if (!row) throw new AppError('RECORD_NOT_FOUND', `订单 ${uid} 不存在`);
  return row;
}

/** How the order was paid: voucher, gift grants, cash. */
export function orderPartsOf(db: Db, orderId: string): Promise<OrderPart[]> {
  return db.select().from(orderPayments).where(eq(orderPayments.orderId, orderId));
}

/** Orders that were never paid: a voucher chosen for them deducted nothing. */
const NEVER_PAID: readonly OrderRow['status'][] = ['Cancelled', 'Expired', 'Abated'];

export function orderView(r: OrderRow, parts: OrderPart[]): Order {
  // A post-paid order is complete when its resource goes away (finishUsage); while it bills it has no completion time.
  const billing = r.type === 'Usage' && r.status === 'Time';
  return {
    orderUid: r.orderUid,
    kind: r.kind,
    type: r.type,
    category: r.category,
    // Ai orders placed before the kind was kept were all model packages.
    packageKind: r.kind === 'Ai' ? ((r.request as { packageKind?: 'gpuHours' | 'tokens' }).packageKind ?? 'tokens') : null,
    status: r.status,
    description: r.description,
    amount: String(r.amount),
    voucherId: r.voucherId,
    voucherDeduction: NEVER_PAID.includes(r.status) ? '0' : String(r.voucherDeduction),
    payMethod: r.payMethod,
    paid: parts.map((p) => ({ source: p.source, amount: String(p.amount) })),
    quote: r.quote as OrderPrice,
    resourceId: r.resourceId,
    failReason: r.failReason,
    expiresAt: r.expiresAt.toISOString(),
    paidAt: r.paidAt?.toISOString() ?? null,
    fulfilledAt: billing ? null : (r.fulfilledAt?.toISOString() ?? null),
    refundedAt: r.refundedAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
  };
}
