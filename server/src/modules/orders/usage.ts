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
import { describeRoom, type ChildSpending } from './spending.js';
import { formatYuan } from '@console/contract';

/**
 * What a payer's post-paid runs of one domain cost per hour (the instances module gives its own), leaving
 * out `except` (the resource about to start, which the caller prices itself) and the runs of
 * `pendingOrderIds` (post-paid orders not yet marked delivered: counted by their own quote, see pendingHour).
 */
export type HourlyLoad = (tx: Tx, payerId: string, except?: string, createdBy?: string, pendingOrderIds?: readonly string[]) => Promise<bigint>;

/** One post-paid order's charge for one billing period (a tick), under its idempotency key. */
export interface UsageCharge {
  orderId: string;
  amount: bigint;
  key: string;
  memo: string;
  /** The run segment charged (a meter tick): kept once per segment so the bill can itemise it (usage_runs). */
  run?: UsageRun;
}

/** What a run segment is charged at, which its ledger charges do not say. */
export interface UsageRun {
  resourceId: string;
  segmentStart: Date;
  noCard: boolean;
  cards: number;
  ratePerHour: bigint;
  /** The bandwidth's share of ratePerHour. */
  bandwidthPerHour: bigint;
}

export class UsageCharges {
  /**
   * `spending`: child accounts' spending limits, which post-paid starts and ticks respect too (absent: none).
   * `hourlyLoads`: the domains whose post-paid runs count against the payer's balance when another run starts.
   */
  constructor(private deps: { clock: Clock; ledger: LedgerService; gifts: GiftService; spending?: ChildSpending; hourlyLoads: readonly HourlyLoad[] }) {}

  /**
   * A post-paid run may start only if the balance covers an hour of it on top of an hour of every
   * run the payer already has going (and of post-paid orders not yet delivered). The check holds a
   * per-payer lock to the end of `tx`, which must also make the new run visible (start it or insert
   * its order), so concurrent starts queue and the last one sees the others.
   */
  async reserveHour(tx: Tx, payerId: string, hourly: bigint, opts: { except?: string; spender?: string } = {}): Promise<void> {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`postpaid:${payerId}`}, 0))`);
    if (opts.spender && opts.spender !== payerId) await this.reserveChildHour(tx, payerId, opts.spender, hourly, opts.except);
    const spendable = await this.spendable(payerId, tx);
    const pending = await this.pendingHour(tx, payerId);
    const loads = await Promise.all(this.deps.hourlyLoads.map((load) => load(tx, payerId, opts.except, undefined, pending.ids)));
    const committed = loads.reduce((a, b) => a + b, pending.sum);
    if (spendable - committed >= hourly) return;
    const running = committed > 0n ? `，其中 ${formatYuan(committed)} 元需为已在运行的按量实例预留 1 小时` : '';
    throw new AppError(
      'INSUFFICIENT_BALANCE',
      `按量计费需余额不少于 ${formatYuan(hourly)} 元（1 小时费用）；当前可用 ${formatYuan(spendable)} 元${running}。请充值后再试`,
    );
  }

  /**
   * The payer's post-paid orders made but not yet marked delivered (of `createdBy` only, when given), and
   * an hour of each at its quote. Their runs may already exist (the domain made it, the order is marked
   * just after): the loads leave those out, so that a start racing that moment does not count one run twice
   * and refuse what the balance carries.
   */
  private async pendingHour(tx: Tx, payerId: string, createdBy?: string): Promise<{ ids: string[]; sum: bigint }> {
    const rows = await tx
      .select({ id: orders.id, total: sql<string>`(${orders.quote}->>'total')::bigint` })
      .from(orders)
      .where(
        sql`${orders.userId} = ${payerId} and ${orders.type} = 'Usage' and ${orders.status} = 'Time' and ${orders.fulfilledAt} is null${
          createdBy ? sql` and ${orders.createdBy} = ${createdBy}` : sql``
        }`,
      );
    return { ids: rows.map((r) => r.id), sum: rows.reduce((a, r) => a + BigInt(r.total ?? 0), 0n) };
  }

  /**
   * The child account `childId` runs a post-paid resource of its parent's (its own order): an hour of it
   * and of the child's other runs must fit in the child's spending limit (orders/spending.ts).
   */
  private async reserveChildHour(tx: Tx, payerId: string, childId: string, hourly: bigint, except?: string): Promise<void> {
    const room = this.deps.spending && (await this.deps.spending.rooms(tx, [childId])).get(childId);
    if (!room) return;
    const pending = await this.pendingHour(tx, payerId, childId);
    const loads = await Promise.all(this.deps.hourlyLoads.map((load) => load(tx, payerId, except, childId, pending.ids)));
    const committed = loads.reduce((a, b) => a + b, pending.sum);
    if (room.left - committed >= hourly) return;
    const running = committed > 0n ? `，其中 ${formatYuan(committed)} 元需为该子账号已在运行的按量实例预留 1 小时` : '';
    throw new AppError('SPEND_LIMIT_EXCEEDED', `${describeRoom(room)}${running}；按量计费需为 1 小时预留 ${formatYuan(hourly)} 元`);
  }

  /**
   * At a billing tick: the runs (by resource id) of child accounts whose spending limit cannot pay
   * their next tick, with the reason; they are stopped like runs whose balance ran out.
   */
  async overLimit(tx: Tx, runs: { id: string; childId: string; nextTick: bigint }[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!this.deps.spending || !runs.length) return out;
    const rooms = await this.deps.spending.rooms(tx, [...new Set(runs.map((r) => r.childId))]);
    for (const [childId, room] of rooms) {
      const mine = runs.filter((r) => r.childId === childId);
      const need = mine.reduce((n, r) => n + r.nextTick, 0n);
      if (room.left > 0n && room.left >= need) continue;
      for (const r of mine) out.set(r.id, `${describeRoom(room)}，不足以支付下一计费周期`);
    }
    return out;
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
    const runs = due.filter((i) => i.run && byId.has(i.orderId));
    if (runs.length) {
      await tx.execute(sql`insert into usage_runs (order_id, resource_id, segment_start, no_card, cards, rate_per_hour, bandwidth_per_hour, created_at)
        select r.o, r.res, r.seg, r.nc, r.cards, r.rate, r.bw, ${now.toISOString()}::timestamptz
        from unnest(${pgArray(runs.map((i) => i.orderId))}::uuid[], ${pgArray(runs.map((i) => i.run!.resourceId))}::text[],
          ${pgArray(runs.map((i) => i.run!.segmentStart.toISOString()))}::timestamptz[], ${pgArray(runs.map((i) => i.run!.noCard))}::boolean[],
          ${pgArray(runs.map((i) => i.run!.cards))}::int[], ${pgArray(runs.map((i) => i.run!.ratePerHour))}::bigint[],
          ${pgArray(runs.map((i) => i.run!.bandwidthPerHour))}::bigint[]) as r(o, res, seg, nc, cards, rate, bw)
        on conflict do nothing`);
    }
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
  /** Its completion time (完成时间) is when the resource went away (`at`, the release), not when it was delivered. */
  async finishUsage(tx: Tx, orderId: string, at?: Date): Promise<void> {
    const [row] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
    if (row?.status === 'Time') await moveOrder(tx, this.deps.clock, row, 'Success', { fulfilledAt: at ?? this.deps.clock.now() });
  }
}
