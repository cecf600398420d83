/**
 * Orders (DESIGN.md "Orders and instances"): created Unpaid with the server's own quote (one unpaid
 * order per payer), listed and exported. The rest of an order's life has its own file:
 *   purchase.ts    who may buy, the server's quote, a new prepaid or post-paid purchase
 *   checkout.ts    paying (balance, QR), fulfilment, refunds, recovery after a crash, expiry
 *   usage.ts       post-paid charging, period by period
 *   fulfillers.ts  who delivers each (category, order type)
 *   rows.ts        the row, its one state machine move, its view
 */
import { and, asc, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import {
  formatYuan,
  parseFilterByMulti,
  InstanceCategory,
  OrderStatus,
  OrderType,
  PaymentMethod,
  formatBeijing,
  type Order,
  type OrderKind,
  type OrderStatus as Status,
  type OrderType as Type,
  type UsageBill,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { orderPayments, orders } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { Checkout } from './checkout.js';
import type { Fulfillers } from './fulfillers.js';
import { isUniqueViolation } from '../../db/results.js';
import { findOrder, newOrderRow, orderPartsOf, orderView, type NewOrder, type OrderRow, type OrderScope } from './rows.js';
import type { UsageCharges } from './usage.js';
import type { LedgerService } from '../ledger/index.js';
import { usageBill } from './usage-bill.js';

export type { Fulfiller } from './fulfillers.js';
export type { NewOrder, OrderRow, OrderScope } from './rows.js';

/** The keys an order list may be filtered by, with their allowed values (null: any value). */
const ORDER_FILTERS: Record<string, readonly string[] | null> = {
  status: OrderStatus.values,
  type: OrderType.values,
  kind: ['Personal', 'Ai', 'default'],
  category: null,
};
const ORDER_FILTER_COLUMNS = { status: orders.status, type: orders.type, kind: orders.kind, category: orders.category };

export interface OrderDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  fulfillers: Fulfillers;
  checkout: Checkout;
  usage: UsageCharges;
  /** What the ledger took for a post-paid order: its bill's lines. */
  ledger: LedgerService;
}

export class OrderService {
  constructor(private deps: OrderDeps) {}

  async create(o: NewOrder): Promise<Order> {
    this.deps.fulfillers.assertOnSale(o.category, o.type);
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const row = newOrderRow(o, now, { expiresAt: new Date(now.getTime() + settings.paymentTimeoutMinutes * 60_000) });
    await this.deps.checkout.expireDue(o.payerId);
    try {
      await this.deps.db.insert(orders).values(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('UNPAID_ORDER_EXISTS', '请先支付或取消未支付的订单');
      throw e;
    }
    return orderView(row, []);
  }

  async get(scope: string | OrderScope, kind: OrderKind, uid: string): Promise<Order> {
    let row = await findOrder(this.deps.db, scope, kind, uid);
    if (row.status === 'Unpaid' && this.deps.clock.now() >= row.expiresAt) row = await this.deps.checkout.expire(row);
    return orderView(row, await orderPartsOf(this.deps.db, row.id));
  }

  /** A post-paid order's bill: each run segment, the data-disk days, arrears paid, adding up to what was taken (usage-bill.ts). */
  async usageBill(scope: string | OrderScope, kind: OrderKind, uid: string): Promise<UsageBill> {
    const row = await findOrder(this.deps.db, scope, kind, uid);
    if (row.type !== 'Usage') throw new AppError('ORDER_NOT_USAGE', `订单 ${uid} 为${OrderType.label(row.type)}订单`);
    return usageBill(this.deps.db, this.deps.ledger, row);
  }

  /** The payer's orders, newest first; with `createdBy` in the scope only those that account created. */
  async list(scope: string | OrderScope, q: { filterBy?: string; page: number; pageSize: number }) {
    const { payerId, createdBy } = typeof scope === 'string' ? { payerId: scope, createdBy: undefined } : scope;
    let f: Record<string, string[]>;
    try {
      f = parseFilterByMulti(q.filterBy);
    } catch (e) {
      throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
    }
    // A repeated key is "any of" (kind,Personal,kind,default); different keys must all hold.
    const conds: SQL[] = [eq(orders.userId, payerId)];
    if (createdBy) conds.push(eq(orders.createdBy, createdBy));
    for (const [key, values] of Object.entries(f)) {
      const allowed = Object.hasOwn(ORDER_FILTERS, key) ? ORDER_FILTERS[key] : undefined;
      const bad = allowed === undefined ? values[0] : values.find((v) => allowed !== null && !allowed.includes(v));
      if (bad !== undefined) throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选 ${key}=${bad}`);
      conds.push(inArray(ORDER_FILTER_COLUMNS[key as keyof typeof ORDER_FILTER_COLUMNS], values));
    }
    await this.deps.checkout.expireDue(payerId);
    const where = and(...conds);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(orders).where(where);
    const rows = await this.deps.db
      .select()
      .from(orders)
      .where(where)
      .orderBy(desc(orders.createdAt))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    const items = await Promise.all(rows.map(async (r) => orderView(r, await orderPartsOf(this.deps.db, r.id))));
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  /** The orders of a filter as CSV (with a BOM so Excel reads the Chinese), newest first. */
  async exportCsv(scope: string | OrderScope, filterBy: string | undefined): Promise<string> {
    const { items } = await this.list(scope, { filterBy, page: 1, pageSize: 5000 });
    const header = ['订单号', '下单时间', '类型', '产品', '说明', '状态', '应付（元）', '代金券抵扣（元）', '实付（元）', '支付方式', '支付时间'];
    const rows = items.map((o) => [
      o.orderUid,
      formatBeijing(o.createdAt, 'second'),
      OrderType.label(o.type),
      o.packageKind === 'gpuHours' ? 'GPU 时长包' : (CATEGORY_TEXT[o.category] ?? o.category),
      o.description,
      OrderStatus.label(o.status),
      formatYuan(o.amount),
      formatYuan(o.voucherDeduction),
      formatYuan(o.paid.filter((p) => p.source !== 'voucher').reduce((n, p) => n + BigInt(p.amount), 0n)),
      o.payMethod ? PaymentMethod.label(o.payMethod) : '',
      o.paidAt ? formatBeijing(o.paidAt, 'second') : '',
    ]);
    return '\uFEFF' + [header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
  }

  // --- what paying and post-paid charging do, for callers that hold only the order service ---

  /** Hands a paid order to its fulfiller (checkout.ts). */
  fulfil(row: OrderRow): Promise<void> {
    return this.deps.checkout.fulfil(row);
  }

  /** Fulfils or refunds orders a crashed process left paid (checkout.ts). */
  recoverPaid(limit?: number): Promise<number> {
    return this.deps.checkout.recoverPaid(limit);
  }

  /** Gift credit plus cash the payer can spend now (usage.ts). */
  spendable(payerId: string, exec?: Tx): Promise<bigint> {
    return this.deps.usage.spendable(payerId, exec);
  }

  // --- an instance's orders ------------------------------------------------------------

  /** The delivered orders that paid for a prepaid instance's time (its purchase, renewals and conversions to prepaid), oldest first, with their payment parts. */
  async prepaidPaymentsOf(tx: Tx, instanceId: string, purchaseOrderId: string | null) {
    const cond = sql`(${orders.type} in ('Renew', 'DayToMonth', 'TransferToLong') and ${orders.request}->>'instanceId' = ${instanceId})`;
    const rows = await tx
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'Success'), purchaseOrderId ? sql`(${orders.id} = ${purchaseOrderId} or ${cond})` : cond))
      .orderBy(asc(orders.paidAt), asc(orders.createdAt));
    return withPaymentParts(tx, rows);
  }

  /** An instance's orders of `type` in `status`, oldest first, with how each was paid (voucher, gift grants, cash). */
  async instanceOrdersOf(tx: Tx, instanceId: string, type: Type, status: Status) {
    const rows = await tx
      .select()
      .from(orders)
      .where(and(eq(orders.type, type), eq(orders.status, status), sql`${orders.request}->>'instanceId' = ${instanceId}`))
      .orderBy(asc(orders.createdAt), asc(orders.id));
    return withPaymentParts(tx, rows);
  }

  /** The order number (orderUid) of each of these orders. */
  async uidsOf(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = await this.deps.db
      .select({ id: orders.id, uid: orders.orderUid })
      .from(orders)
      .where(inArray(orders.id, [...new Set(ids)]));
    return new Map(rows.map((r) => [r.id, r.uid]));
  }

  /** The order with this id if it belongs to this payer (a Refund order looked up by its derived id). */
  async byId(payerId: string, id: string, exec: Db | Tx = this.deps.db): Promise<OrderRow | null> {
    const [row] = await exec
      .select()
      .from(orders)
      .where(and(eq(orders.id, id), eq(orders.userId, payerId)));
    return row ?? null;
  }
}

const CATEGORY_TEXT: Record<string, string> = { ...InstanceCategory.map, Ai: '模型资源包' };

/** A CSV cell: quoted when it holds a comma, quote or line break; a leading =+-@ is defused for spreadsheets. */
function csvCell(value: string): string {
  const safe = /^[=+\-@]/.test(value) && !/^-?\d/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** Each order with how it was paid (its voucher, gift grant and cash parts). */
async function withPaymentParts(tx: Tx, rows: OrderRow[]) {
  const parts = rows.length
    ? await tx
        .select()
        .from(orderPayments)
        .where(
          inArray(
            orderPayments.orderId,
            rows.map((r) => r.id),
          ),
        )
    : [];
  return rows.map((order) => ({ order, parts: parts.filter((p) => p.orderId === order.id) }));
}
