/**
 * Post-paid (Usage/Hour) charging: a post-paid order is "Time" (billing in progress) from its
 * start; each billing period (a meter tick, a data-disk day, arrears) is charged under its own
 * idempotency key from gift credit (earliest expiry first), then cash, as far as the balance goes.
 * What the balance cannot pay is the caller's arrears. Creating the order is the purchase's
 * (purchase.ts); ending it is finishUsage.
 */
import { asc, eq, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Tx } from '../../db/client.js';
import { pgArray } from '../../db/arrays.js';
import { orderPayments, orders } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { GiftService } from '../gifts/index.js';
import { accountCode, laneShard, type AccountRef, type Leg, type LedgerService, type TransferInput } from '../ledger/index.js';
import { moveOrder } from './rows.js';

/** One post-paid order's charge for one billing period (a tick), under its idempotency key. */
export interface UsageCharge {
  orderId: string;
  amount: bigint;
  key: string;
  memo: string;
}

export class UsageCharges {
  constructor(private deps: { clock: Clock; ledger: LedgerService; gifts: GiftService }) {}

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
      ifExisting: watch.flatMap((u) => [
        { userId: u, kind: 'cash' as const },
        { userId: u, kind: 'gift' as const },
      ]),
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
      const before =
        (locked.get(accountCode({ userId: u, kind: 'cash' }))?.balance ?? 0n) + (locked.get(accountCode({ userId: u, kind: 'gift' }))?.balance ?? 0n);
      spendable.set(u, before - (spent.get(u) ?? 0n));
    }
    return { charged, spendable };
  }

  /** The post-paid resource is gone: its order is complete with what it was charged. */
  async finishUsage(tx: Tx, orderId: string): Promise<void> {
    const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
    if (row?.status === 'Time') await moveOrder(tx, this.deps.clock, row, 'Success', { fulfilledAt: row.fulfilledAt ?? this.deps.clock.now() });
  }
}
