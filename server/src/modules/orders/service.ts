/**
 * Orders (DESIGN.md "Orders and instances"): created Unpaid with the server's own quote, paid from
 * the balance (voucher, then gift credit by earliest expiry, then cash) or by a gateway QR, then
 * fulfilled by the domain that owns the product. A failed fulfilment refunds every part to where it
 * came from. Every move goes through ORDER_TRANSITIONS with a guarded update, so two requests cannot
 * both move the same order.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  canMoveOrder,
  formatYuan,
  parseFilterByMulti,
  InstanceCategory,
  OrderStatus,
  OrderType,
  PaymentMethod,
  type Order,
  type OrderKind,
  type OrderStatus as Status,
  type OrderType as Type,
  type PayOrderRequest,
  type OrderPrice,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { orderPayments, orders, vouchers } from '../../db/schema.js';
import type { GatewayMethod } from '../../drivers/payment/types.js';
import { AppError } from '../../http/errors.js';
import type { CatalogueStore } from '../catalogue/store.js';
import type { GiftService } from '../gifts/service.js';
import { accountCode, laneShard, type AccountRef, type Leg, type LedgerService, type TransferInput } from '../ledger/service.js';
import { pgArray } from '../../db/arrays.js';
import type { PaymentRow, PaymentService } from '../payments/service.js';
import type { VoucherService } from '../vouchers/service.js';

export type OrderRow = typeof orders.$inferSelect;

/** The domain that turns a paid order into what was bought. Must be idempotent per order id. */
export interface Fulfiller {
  fulfil(order: OrderRow): Promise<{ resourceId: string }>;
}

export interface NewOrder {
  payerId: string;
  createdBy: string;
  kind: OrderKind;
  type: Type;
  category: string;
  request: unknown;
  quote: OrderPrice;
  description: string;
}

/** The keys an order list may be filtered by, with their allowed values (null: any value). */
const ORDER_FILTERS: Record<string, readonly string[] | null> = {
  status: OrderStatus.values,
  type: OrderType.values,
  kind: ['Personal', 'Ai', 'default'],
  category: null,
};
const ORDER_FILTER_COLUMNS = { status: orders.status, type: orders.type, kind: orders.kind, category: orders.category };

/** How long a paid order may wait for fulfilment before recovery takes it over (a crashed process). */
export const FULFIL_GRACE_MS = 60_000;

export function newOrderUid(now: Date): string {
  return `O${now.toISOString().replace(/\D/g, '').slice(0, 14)}${randomBytes(4).toString('hex')}`;
}

/** A new order's row: Unpaid at the quote's total unless `set` says otherwise. */
function newOrderRow(o: NewOrder, now: Date, set: Partial<OrderRow> & Pick<OrderRow, 'expiresAt'>): OrderRow {
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

/** One post-paid order's charge for one billing period (a tick), under its idempotency key. */
export interface UsageCharge {
  orderId: string;
  amount: bigint;
  key: string;
  memo: string;
}

export class OrderService {
  private fulfillers = new Map<string, Fulfiller>();

  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      ledger: LedgerService;
      gifts: GiftService;
      vouchers: VoucherService;
      payments: PaymentService;
      catalogue: CatalogueStore;
      log: FastifyBaseLogger;
    },
  ) {
    deps.payments.register('order', {
      onPaid: (tx, p) => this.onGatewayPaid(tx, p),
      onClosed: async () => {},
      afterPaid: async (p) => {
        const [row] = await deps.db.select().from(orders).where(eq(orders.id, p.subjectId));
        if (row) await this.fulfil(row);
      },
    });
  }

  /** The owning domain says it can deliver this category; without one, nothing of it is sold. */
  registerFulfiller(category: string, f: Fulfiller) {
    this.fulfillers.set(category, f);
  }

  assertOnSale(category: string) {
    if (!this.fulfillers.has(category)) throw new AppError('PRODUCT_NOT_ON_SALE', `${category} 暂不能下单`);
  }

  async create(o: NewOrder): Promise<Order> {
    this.assertOnSale(o.category);
    const now = this.deps.clock.now();
    const { settings } = await this.deps.catalogue.get();
    const row = newOrderRow(o, now, { expiresAt: new Date(now.getTime() + settings.paymentTimeoutMinutes * 60_000) });
    await this.expireDue(o.payerId);
    try {
      await this.deps.db.insert(orders).values(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('UNPAID_ORDER_EXISTS', '请先支付或取消未支付的订单');
      throw e;
    }
    return this.view(row, []);
  }

  async get(payerId: string, kind: OrderKind, uid: string): Promise<Order> {
    let row = await this.find(payerId, kind, uid);
    if (row.status === 'Unpaid' && this.deps.clock.now() >= row.expiresAt) row = await this.expire(row);
    return this.view(row, await this.partsOf(row.id));
  }

  async list(payerId: string, q: { filterBy?: string; page: number; pageSize: number }) {
    let f: Record<string, string[]>;
    try {
      f = parseFilterByMulti(q.filterBy);
    } catch (e) {
      throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
    }
    // A repeated key is "any of" (kind,Personal,kind,default); different keys must all hold.
    const conds: SQL[] = [eq(orders.userId, payerId)];
    for (const [key, values] of Object.entries(f)) {
      const allowed = Object.hasOwn(ORDER_FILTERS, key) ? ORDER_FILTERS[key] : undefined;
      const bad = allowed === undefined ? values[0] : values.find((v) => allowed !== null && !allowed.includes(v));
      if (bad !== undefined) throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选 ${key}=${bad}`);
      conds.push(inArray(ORDER_FILTER_COLUMNS[key as keyof typeof ORDER_FILTER_COLUMNS], values));
    }
    await this.expireDue(payerId);
    const where = and(...conds);
    const [{ total } = { total: 0 }] = await this.deps.db.select({ total: count() }).from(orders).where(where);
    const rows = await this.deps.db.select().from(orders).where(where).orderBy(desc(orders.createdAt)).limit(q.pageSize).offset((q.page - 1) * q.pageSize);
    const items = await Promise.all(rows.map(async (r) => this.view(r, await this.partsOf(r.id))));
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  /** The orders of a filter as CSV (with a BOM so Excel reads the Chinese), newest first. */
  async exportCsv(payerId: string, filterBy: string | undefined): Promise<string> {
    const { items } = await this.list(payerId, { filterBy, page: 1, pageSize: 5000 });
    const header = ['订单号', '下单时间', '类型', '产品', '说明', '状态', '应付（元）', '代金券抵扣（元）', '实付（元）', '支付方式', '支付时间'];
    const rows = items.map((o) => [
      o.orderUid,
      beijing(o.createdAt),
      OrderType.label(o.type),
      CATEGORY_TEXT[o.category] ?? o.category,
      o.description,
      OrderStatus.label(o.status),
      formatYuan(o.amount),
      formatYuan(o.voucherDeduction),
      formatYuan(o.paid.filter((p) => p.source !== 'voucher').reduce((n, p) => n + BigInt(p.amount), 0n)),
      o.payMethod ? PaymentMethod.label(o.payMethod) : '',
      o.paidAt ? beijing(o.paidAt) : '',
    ]);
    return '\uFEFF' + [header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
  }

  async cancel(payerId: string, kind: OrderKind, uid: string): Promise<Order> {
    const row = await this.find(payerId, kind, uid);
    await this.closeOpenPayment(row);
    await this.deps.db.transaction((tx) => this.move(tx, row, 'Cancelled'));
    return this.get(payerId, kind, uid);
  }

  /**
   * Pays an order. Balance: everything happens in one transaction and fulfilment follows. A gateway:
   * a QR for what is left after the voucher; when its money arrives the same balance payment runs.
   */
  async pay(payerId: string, kind: OrderKind, uid: string, req: PayOrderRequest) {
    let row = await this.find(payerId, kind, uid);
    if (row.status === 'Unpaid' && this.deps.clock.now() >= row.expiresAt) {
      await this.expire(row);
      throw new AppError('ORDER_EXPIRED');
    }
    if (row.status !== 'Unpaid') throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，不能支付`);
    if (req.method === 'Balance') {
      await this.deps.db.transaction((tx) => this.payFromBalance(tx, row.id, req.voucherId ?? null, { useGift: true, method: 'Balance' }));
      row = await this.find(payerId, kind, uid);
      await this.fulfil(row);
      return this.status(payerId, kind, uid);
    }
    await this.openPayment(row, req.method, req.voucherId ?? null);
    return this.status(payerId, kind, uid);
  }

  /** GET …/pay: the order's status and its open QR payment (asking the gateway if a notification is late). */
  async status(payerId: string, kind: OrderKind, uid: string) {
    let row = await this.find(payerId, kind, uid);
    let payment: PaymentRow | null = null;
    try {
      payment = await this.deps.payments.bySubject(row.id);
    } catch {
      payment = null;
    }
    if (payment?.status === 'Pending') {
      payment = await this.deps.payments.refresh(payment.id);
      row = await this.find(payerId, kind, uid);
    }
    if (row.status === 'Paid') {
      await this.fulfil(row);
      row = await this.find(payerId, kind, uid);
    }
    if (row.status === 'Unpaid' && this.deps.clock.now() >= row.expiresAt) row = await this.expire(row);
    return { orderUid: row.orderUid, status: row.status, payment: payment ? qrView(payment) : null };
  }

  /** GET …/qrcode/{alipay|wechat}: the open QR of that method, opened if there is none. */
  async qrcode(payerId: string, kind: OrderKind, uid: string, method: GatewayMethod) {
    const row = await this.find(payerId, kind, uid);
    if (row.status !== 'Unpaid') throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，无需支付`);
    const open = await this.deps.payments.bySubject(row.id).catch(() => null);
    if (open && open.status === 'Pending' && open.method === method) return qrView(open);
    return qrView(await this.openPayment(row, method, row.voucherId));
  }

  // --- paying --------------------------------------------------------------------

  private async openPayment(row: OrderRow, method: GatewayMethod, voucherId: string | null): Promise<PaymentRow> {
    await this.closeOpenPayment(row);
    const deduction = voucherId ? await this.previewVoucher(row, voucherId) : 0n;
    // Gateways move whole fen: round up; the fraction stays in the user's cash.
    const due = roundUpToFen(row.amount - deduction);
    if (due === 0n) throw new AppError('VALIDATION_FAILED', 'method：代金券已抵扣全部金额，请使用余额支付');
    await this.deps.db.update(orders).set({ voucherId, updatedAt: this.deps.clock.now() }).where(eq(orders.id, row.id));
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
      await tx.update(vouchers).set({ status: 'Used' }).where(and(eq(vouchers.id, v.id), eq(vouchers.status, 'Unused')));
      if (deduction > 0n) parts.push({ orderId, source: 'voucher', amount: deduction, voucherId: v.id, createdAt: now });
      rest -= deduction;
    }

    if (rest > 0n) rest -= await this.spendGiftThenCash(tx, { payer, orderId, amount: rest, useGift: opts.useGift, cashUpTo: null, legs, parts, now });
    legs.push({ account: { platform: 'revenue' }, amount: row.amount });
    if (legs.length > 1) {
      await this.deps.ledger.post({ key: `order-pay:${orderId}`, kind: 'order', memo: row.description, actorId: row.createdBy, orderId: row.orderUid, legs }, tx);
    }
    if (parts.length) await tx.insert(orderPayments).values(parts);
    await tx
      .update(orders)
      .set({ status: 'Paid', payMethod: opts.method, voucherId, voucherDeduction: deduction, paidAt: now, updatedAt: now })
      .where(and(eq(orders.id, orderId), eq(orders.status, 'Unpaid')));
  }

  /**
   * Takes `amount` from gift credit (earliest expiry first, if `useGift`) and then cash, adding the
   * legs and payment parts. `cashUpTo` caps the cash taken (a usage tick takes what there is); the
   * ledger still refuses cash below zero. Returns what was taken.
   */
  private async spendGiftThenCash(
    tx: Tx,
    a: { payer: string; orderId: string; amount: bigint; useGift: boolean; cashUpTo: bigint | null; legs: Leg[]; parts: (typeof orderPayments.$inferInsert)[]; now: Date },
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

  // --- post-paid (Usage/Hour) orders ---------------------------------------------------

  /**
   * A post-paid order: nothing is paid up front, the order is "Time" (billing in progress) from the
   * start and each billing tick charges it. The balance must cover `minBalance` (an hour of use) to
   * begin; the owning domain fulfils it at once.
   */
  async createPostpaid(o: NewOrder, minBalance: bigint): Promise<Order> {
    this.assertOnSale(o.category);
    const spendable = await this.spendable(o.payerId);
    if (spendable < minBalance) {
      throw new AppError('INSUFFICIENT_BALANCE', `按量计费需余额不少于 ${formatYuan(minBalance)} 元（1 小时费用），当前可用 ${formatYuan(spendable)} 元`);
    }
    const now = this.deps.clock.now();
    const row = newOrderRow(o, now, { type: 'Usage', status: 'Time', amount: 0n, payMethod: 'Balance', expiresAt: now });
    await this.deps.db.insert(orders).values(row);
    try {
      const { resourceId } = await this.fulfillers.get(o.category)!.fulfil(row);
      await this.deps.db.update(orders).set({ resourceId, fulfilledAt: this.deps.clock.now(), updatedAt: this.deps.clock.now() }).where(eq(orders.id, row.id));
    } catch (e) {
      await this.deps.db.transaction((tx) => this.move(tx, row, 'Failed', { failReason: (e as Error).message.slice(0, 500) }));
      throw e;
    }
    const [fresh] = await this.deps.db.select().from(orders).where(eq(orders.id, row.id));
    return this.view(fresh!, []);
  }

  /** spendable for many payers, as the transaction sees them. */
  async spendableMany(tx: Tx, payerIds: string[]): Promise<Map<string, bigint>> {
    const wallets = await this.deps.ledger.spendableMany(tx, payerIds);
    return new Map([...wallets].map(([id, w]) => [id, w.cash + w.gift]));
  }

  /** Gift credit plus cash the payer can spend now. */
  async spendable(payerId: string, exec?: Tx): Promise<bigint> {
    const b = await this.deps.ledger.balances(payerId, exec);
    return b.cash + b.gift;
  }

  /**
   * Charges a post-paid order for one billing period under `key` (once, however often it is asked):
   * gift credit, then cash, as far as they go. Returns what was charged; less than `amount` means
   * the balance ran out.
   */
  async chargeUsage(tx: Tx, orderId: string, amount: bigint, key: string, memo: string): Promise<bigint> {
    const [row] = await tx.select({ status: orders.status }).from(orders).where(eq(orders.id, orderId));
    if (!row || row.status !== 'Time') throw new AppError('ORDER_STATE_INVALID', '该按量订单已结束计费');
    return (await this.chargeUsageMany(tx, [{ orderId, amount, key, memo }])).get(key) ?? 0n;
  }

  /**
   * chargeUsage for many post-paid orders in one go (a billing tick): each item takes gift credit
   * (earliest expiry first), then cash, as far as its payer's balance goes, in the order given.
   * Returns what each item (by key) was charged.
   */
  async chargeUsageMany(tx: Tx, items: UsageCharge[]): Promise<Map<string, bigint>> {
    return (await this.chargeUsageBatch(tx, items)).charged;
  }

  /**
   * chargeUsageMany for a billing tick: `lane` (parallel batches of one tick) keeps the revenue
   * legs on that lane's platform shards; `watch` are users whose spendable balance (gift credit plus
   * cash, as `spendableMany` would read it after the charges) the caller wants back, read under the
   * same account locks instead of another query.
   */
  async chargeUsageBatch(
    tx: Tx,
    items: UsageCharge[],
    opts: { lane?: { index: number; count: number }; watch?: string[] } = {},
  ): Promise<{ charged: Map<string, bigint>; spendable: Map<string, bigint> }> {
    const charged = new Map<string, bigint>();
    const watch = [...new Set(opts.watch ?? [])];
    const due = items.filter((i) => i.amount > 0n);
    if (!due.length) return { charged, spendable: watch.length ? await this.spendableMany(tx, watch) : new Map() };
    const ids = [...new Set(due.map((i) => i.orderId))].sort();
    const rows = await tx
      .select({ id: orders.id, status: orders.status, userId: orders.userId, orderUid: orders.orderUid })
      .from(orders)
      .where(sql`${orders.id} = any(${pgArray(ids)}::uuid[])`)
      .orderBy(asc(orders.id))
      .for('update');
    const byId = new Map(rows.filter((r) => r.status === 'Time').map((r) => [r.id, r]));
    const payers = [...new Set([...byId.values()].map((r) => r.userId))];
   
    const grants = await this.deps.gifts.lockSpendableMany(tx, payers);
    // Revenue goes to the platform shard of the item's key (the ledger's own choice), among the
    // lane's shards when the tick runs in lanes; named here so the batch's accounts are known by code.
    const lane = opts.lane ?? { index: 0, count: 1 };
    const shards = new Map<string, AccountRef>();
    const revenue = (key: string): AccountRef => {
      const name = laneShard(key, lane);
      let ref = shards.get(name);
      if (!ref) shards.set(name, (ref = { platform: 'revenue', name }));
      return ref;
    };
    // Every account the batch will touch is locked before its balance is read, in the ledger's order;
    // a gift account only where a grant can pay (others are read, if they exist, for `watch`).
    const touched: AccountRef[] = [];
    for (const p of payers) {
      touched.push({ userId: p, kind: 'cash' });
      if (grants.get(p)?.length) touched.push({ userId: p, kind: 'gift' });
    }
    for (const i of due) if (byId.has(i.orderId)) revenue(i.key);
    touched.push(...shards.values());
    const locked = await this.deps.ledger.lockFor(tx, [{ key: 'usage', accounts: touched }], {
      ifExisting: watch.flatMap((u) => [{ userId: u, kind: 'cash' as const }, { userId: u, kind: 'gift' as const }]),
    });
    const balances = new Map(payers.map((p) => [p, { cash: locked.get(accountCode({ userId: p, kind: 'cash' }))?.balance ?? 0n }]));
    const now = this.deps.clock.now();
    const transfers: TransferInput[] = [];
    const parts: (typeof orderPayments.$inferInsert)[] = [];
    const takes = new Map<string, bigint>();
    const added = new Map<string, bigint>();
    for (const item of due) {
      const order = byId.get(item.orderId);
      if (!order) continue;
      const payer = order.userId;
      const legs: Leg[] = [];
      let rest = item.amount;
      for (const g of grants.get(payer) ?? []) {
        if (rest === 0n) break;
        const left = g.remain - (takes.get(g.id) ?? 0n);
        const take = left < rest ? left : rest;
        if (take <= 0n) continue;
        takes.set(g.id, (takes.get(g.id) ?? 0n) + take);
        legs.push({ account: { userId: payer, kind: 'gift' }, amount: -take });
        parts.push({ orderId: order.id, source: 'gift', amount: take, giftGrantId: g.id, createdAt: now });
        rest -= take;
      }
      const wallet = balances.get(payer)!;
      const cash = wallet.cash < rest ? (wallet.cash > 0n ? wallet.cash : 0n) : rest;
      if (cash > 0n) {
        wallet.cash -= cash;
        legs.push({ account: { userId: payer, kind: 'cash' }, amount: -cash });
        parts.push({ orderId: order.id, source: 'cash', amount: cash, createdAt: now });
        rest -= cash;
      }
      const taken = item.amount - rest;
      charged.set(item.key, taken);
      if (taken === 0n) continue;
      legs.push({ account: revenue(item.key), amount: taken });
      transfers.push({ key: item.key, kind: 'usage', memo: item.memo, actorId: null, orderId: order.orderUid, legs });
      added.set(order.id, (added.get(order.id) ?? 0n) + taken);
    }
   
    await this.deps.ledger.postMany(tx, transfers, locked);
    await this.deps.gifts.takeMany(tx, takes);
    if (parts.length) {
      await tx.execute(sql`insert into order_payments (order_id, source, amount, gift_grant_id, created_at)
        select p.o, p.s, p.a, p.g, ${now.toISOString()}::timestamptz
        from unnest(${pgArray(parts.map((p) => p.orderId))}::uuid[], ${pgArray(parts.map((p) => p.source))}::text[], ${pgArray(parts.map((p) => p.amount))}::bigint[],
          ${pgArray(parts.map((p) => p.giftGrantId ?? null))}::uuid[]) as p(o, s, a, g)`);
    }
    if (added.size) {
      // The running total only: updated_at (indexed) follows the order's status changes, so this
      // update of no indexed column stays on the row's page (a HOT update, no index entries).
      await tx.execute(sql`update orders o set amount = o.amount + v.n, paid_at = coalesce(o.paid_at, ${now.toISOString()}::timestamptz)
        from unnest(${pgArray([...added.keys()])}::uuid[], ${pgArray([...added.values()])}::bigint[]) as v(id, n) where o.id = v.id`);
    }
    // What the watched users can spend now: the locked balances less what this batch took.
    const spent = new Map<string, bigint>();
    for (const t of transfers) {
      for (const l of t.legs) if ('userId' in l.account) spent.set(l.account.userId, (spent.get(l.account.userId) ?? 0n) - l.amount);
    }
    const spendable = new Map<string, bigint>();
    for (const u of watch) {
      const before = (locked.get(accountCode({ userId: u, kind: 'cash' }))?.balance ?? 0n) + (locked.get(accountCode({ userId: u, kind: 'gift' }))?.balance ?? 0n);
      spendable.set(u, before - (spent.get(u) ?? 0n));
    }
    return { charged, spendable };
  }

  /** The post-paid resource is gone: its order is complete with what it was charged. */
  async finishUsage(tx: Tx, orderId: string): Promise<void> {
    const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
    if (row?.status === 'Time') await this.move(tx, row, 'Success', { fulfilledAt: row.fulfilledAt ?? this.deps.clock.now() });
  }

  /** What was delivered failed afterwards (a machine that never came up): the whole order goes back. */
  async refundDelivered(orderId: string, reason: string): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
      if (!row || row.status !== 'Success') return;
      await tx.update(orders).set({ failReason: reason.slice(0, 500) }).where(eq(orders.id, orderId));
      await this.refund(tx, { ...row, failReason: reason });
    });
  }

  // --- prepaid instances: auto-renewal and refund of unused time (instances/prepaid.ts) -----

  /**
   * An order created and paid from the balance in one go, inside the caller's transaction, which
   * also delivers it (an auto-renewal): gift credit by earliest expiry, then cash, as balance
   * payment does; no voucher. `id` is derived from the business event, so a repeated or concurrent
   * attempt inserts nothing and returns null. A balance that cannot pay throws INSUFFICIENT_BALANCE
   * before anything is written (the caller's transaction rolls back).
   */
  async payNewFromBalance(tx: Tx, o: NewOrder, id: string, resourceId: string): Promise<OrderRow | null> {
    this.assertOnSale(o.category);
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
    const taken = amount > 0n ? await this.spendGiftThenCash(tx, { payer: o.payerId, orderId: id, amount, useGift: true, cashUpTo: null, legs, parts, now }) : 0n;
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

  /** The delivered orders that paid for a prepaid instance's time (its purchase, renewals and conversions to prepaid), oldest first, with their payment parts. */
  async prepaidPaymentsOf(tx: Tx, instanceId: string, purchaseOrderId: string | null) {
    const cond = sql`(${orders.type} in ('Renew', 'DayToMonth', 'TransferToLong') and ${orders.request}->>'instanceId' = ${instanceId})`;
    const rows = await tx
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'Success'), purchaseOrderId ? sql`(${orders.id} = ${purchaseOrderId} or ${cond})` : cond))
      .orderBy(asc(orders.paidAt), asc(orders.createdAt));
    const parts = rows.length ? await tx.select().from(orderPayments).where(inArray(orderPayments.orderId, rows.map((r) => r.id))) : [];
    return rows.map((order) => ({ order, parts: parts.filter((p) => p.orderId === order.id) }));
  }

  /** An instance's orders of `type` in `status`, oldest first, with how each was paid (voucher, gift grants, cash). */
  async instanceOrdersOf(tx: Tx, instanceId: string, type: Type, status: Status) {
    const rows = await tx
      .select()
      .from(orders)
      .where(and(eq(orders.type, type), eq(orders.status, status), sql`${orders.request}->>'instanceId' = ${instanceId}`))
      .orderBy(asc(orders.createdAt), asc(orders.id));
    const parts = rows.length ? await tx.select().from(orderPayments).where(inArray(orderPayments.orderId, rows.map((r) => r.id))) : [];
    return rows.map((order) => ({ order, parts: parts.filter((p) => p.orderId === order.id) }));
  }

  /** The order with this id if it belongs to this payer (a Refund order looked up by its derived id). */
  async byId(payerId: string, id: string, exec: Db | Tx = this.deps.db): Promise<OrderRow | null> {
    const [row] = await exec.select().from(orders).where(and(eq(orders.id, id), eq(orders.userId, payerId)));
    return row ?? null;
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
      .values(newOrderRow(o, now, { id, type: o.type, status: 'Refunded', amount: total, payMethod: 'Balance', expiresAt: now, refundedAt: now, fulfilledAt: now }))
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
    if (total > 0n) await this.deps.ledger.post({ key: `instance-refund:${id}`, kind: 'refund', memo: o.description, actorId: o.createdBy, orderId: row.orderUid, legs }, tx);
    return row;
  }

  // --- fulfilment and refunds ----------------------------------------------------

  /** Hands a paid order to its domain; a failure refunds it. Safe to call again (fulfillers are idempotent). */
  async fulfil(row: OrderRow): Promise<void> {
    if (row.status !== 'Paid') return;
    const fulfiller = this.fulfillers.get(row.category);
    try {
      if (!fulfiller) throw new Error(`没有 ${row.category} 的交付方`);
      const { resourceId } = await fulfiller.fulfil(row);
      await this.deps.db.transaction((tx) => this.move(tx, row, 'Success', { resourceId, fulfilledAt: this.deps.clock.now() }));
    } catch (e) {
      if (e instanceof AppError && e.code === 40020005) return; // someone else finished it
      this.deps.log.error({ order: row.orderUid, err: (e as Error).message }, 'fulfilment failed: refunding');
      await this.deps.db.transaction(async (tx) => {
        const failed = await this.move(tx, row, 'Failed', { failReason: (e as Error).message.slice(0, 500) });
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
        const [v] = await tx.select().from(vouchers).where(eq(vouchers.id, p.voucherId!));
        legs.push({ account: { userId: row.userId, kind: 'voucher' }, amount: v!.amount });
        if (v!.amount > p.amount) legs.push({ account: { platform: 'promotion' }, amount: -(v!.amount - p.amount) });
        await tx.update(vouchers).set({ status: 'Unused' }).where(eq(vouchers.id, v!.id));
      }
    }
    if (legs.length > 1) {
      await this.deps.ledger.post({ key: `order-refund:${row.id}`, kind: 'refund', memo: `退款：${row.description}`, orderId: row.orderUid, legs }, tx);
    }
    await this.move(tx, row, 'Refunded', { refundedAt: this.deps.clock.now() });
  }

  /**
   * After a crash: orders paid but not fulfilled for longer than FULFIL_GRACE_MS are fulfilled now
   * (or refunded if that fails). Run at start and by the scheduler.
   */
  async recoverPaid(limit = 100): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - FULFIL_GRACE_MS);
    const stuck = await this.deps.db.select().from(orders).where(and(eq(orders.status, 'Paid'), lt(orders.updatedAt, before))).limit(limit);
    for (const row of stuck) await this.fulfil(row);
    return stuck.length;
  }

  /** Unpaid orders past their time become Expired (their QR closed first). */
  async expireDue(payerId?: string, limit = 100): Promise<number> {
    const now = this.deps.clock.now();
    const conds = [eq(orders.status, 'Unpaid'), lt(orders.expiresAt, now)];
    if (payerId) conds.push(eq(orders.userId, payerId));
    const due = await this.deps.db.select().from(orders).where(and(...conds)).limit(limit);
    for (const row of due) await this.expire(row);
    return due.length;
  }

  private async expire(row: OrderRow): Promise<OrderRow> {
    await this.closeOpenPayment(row).catch((e) => this.deps.log.warn({ err: e, order: row.orderUid }, 'closing the QR of an expired order failed'));
    return this.deps.db.transaction(async (tx) => {
      const [fresh] = await tx.select().from(orders).where(eq(orders.id, row.id)).for('update');
      if (!fresh || fresh.status !== 'Unpaid') return fresh ?? row;
      return this.move(tx, fresh, 'Expired');
    });
  }

  /** The one way an order changes status: allowed by the state machine, and only from the status it had. */
  private async move(tx: Tx, row: OrderRow, to: Status, set: Partial<OrderRow> = {}): Promise<OrderRow> {
    if (!canMoveOrder(row.status, to)) throw new AppError('ORDER_STATE_INVALID', `订单${OrderStatus.label(row.status)}，不能变为${OrderStatus.label(to)}`);
    const [moved] = await tx
      .update(orders)
      .set({ ...set, status: to, updatedAt: this.deps.clock.now() })
      .where(and(eq(orders.id, row.id), eq(orders.status, row.status)))
      .returning();
    if (!moved) throw new AppError('ORDER_STATE_INVALID', '订单状态已变化，请刷新后重试');
    return moved;
  }

  // --- reading ---------------------------------------------------------------------

  private async find(payerId: string, kind: OrderKind, uid: string): Promise<OrderRow> {
    const [row] = await this.deps.db.select().from(orders).where(and(eq(orders.orderUid, uid), eq(orders.userId, payerId), eq(orders.kind, kind)));
    if (!row) throw new AppError('RECORD_NOT_FOUND', `订单 ${uid} 不存在`);
    return row;
  }

  private partsOf(orderId: string) {
    return this.deps.db.select().from(orderPayments).where(eq(orderPayments.orderId, orderId));
  }

  private view(r: OrderRow, parts: (typeof orderPayments.$inferSelect)[]): Order {
    return {
      orderUid: r.orderUid,
      kind: r.kind,
      type: r.type,
      category: r.category,
      status: r.status,
      description: r.description,
      amount: String(r.amount),
      voucherDeduction: String(r.voucherDeduction),
      payMethod: r.payMethod,
      paid: parts.map((p) => ({ source: p.source, amount: String(p.amount) })),
      quote: r.quote as OrderPrice,
      resourceId: r.resourceId,
      failReason: r.failReason,
      expiresAt: r.expiresAt.toISOString(),
      paidAt: r.paidAt?.toISOString() ?? null,
      fulfilledAt: r.fulfilledAt?.toISOString() ?? null,
      refundedAt: r.refundedAt?.toISOString() ?? null,
      createdAt: r.createdAt.toISOString(),
    };
  }
}

const CATEGORY_TEXT: Record<string, string> = { ...InstanceCategory.map, Ai: '模型资源包' };

/** "2026-11-23T08:00:00.000Z" → "2026-11-23 16:00:00": bills are read in China time. */
function beijing(iso: string): string {
  return new Date(Date.parse(iso) + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/** A CSV cell: quoted when it holds a comma, quote or line break; a leading =+-@ is defused for spreadsheets. */
function csvCell(value: string): string {
  const safe = /^[=+\-@]/.test(value) && !/^-?\d/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function qrView(p: PaymentRow) {
  return { method: p.method, amount: String(p.amount), qrContent: p.status === 'Pending' ? p.qrContent : '', expiresAt: p.expiresAt.toISOString(), status: p.status };
}

function roundUpToFen(units: bigint): bigint {
  return ((units + 99n) / 100n) * 100n;
}

/** PostgreSQL's unique_violation, through drizzle's wrapping (PGlite and node-postgres alike). */
function isUniqueViolation(e: unknown): boolean {
  for (let cur = e as { code?: string; cause?: unknown } | undefined; cur; cur = cur.cause as typeof cur) {
    if (cur.code === '23505') return true;
  }
  return false;
}

