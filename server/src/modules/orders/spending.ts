/**
 * What child accounts spend of their parent's balance, against the limit the parent gave each
 * (users module: an amount per Beijing calendar month or in total; none is unlimited).
 *
 * A child's spend is the money its own orders (orders.created_by = the child) took from the parent's
 * wallet: the gift credit and cash parts of every payment — prepaid orders when paid, post-paid orders
 * at each billing tick — less orders refunded whole and the money-back orders (退订) the child made.
 * Vouchers are not money and do not count. A month is a Beijing calendar month of the payment.
 *
 * Enforced on every payment of a child's order (checkout, under a per-child lock so two payments
 * cannot both fit the same room), on every post-paid start (an hour of the child's runs must fit, as
 * the balance must cover one: UsageCharges.reserveHour) and at every billing tick (a child whose
 * room cannot pay the next tick has its post-paid instances stopped, like an empty balance: it may
 * run over by at most one tick).
 */
import { sql } from 'drizzle-orm';
import { beijingMonthStart, formatYuan, SpendLimitPeriod } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { pgArray } from '../../db/arrays.js';
import { rowsOf } from '../../db/results.js';
import { AppError } from '../../http/errors.js';

export interface ChildLimit {
  childName: string;
  amount: bigint;
  period: 'Month' | 'Total';
}

/** The limits of those of `userIds` that are child accounts with one (the users module answers). */
export type ChildLimitLookup = (exec: Executor, userIds: string[]) => Promise<Map<string, ChildLimit>>;

export interface SpendRoom {
  limit: ChildLimit;
  spent: bigint;
  /** What may still be spent (never below zero). */
  left: bigint;
}

export class ChildSpending {
  constructor(private deps: { db: Db; clock: Clock; limitsOf: ChildLimitLookup }) {}

  /** Each child's spend this Beijing month and in total, for the parent's child list. */
  async summary(childIds: string[]): Promise<Map<string, { month: bigint; total: bigint }>> {
    const [month, total] = await Promise.all([
      this.spent(this.deps.db, childIds, beijingMonthStart(this.deps.clock.now())),
      this.spent(this.deps.db, childIds),
    ]);
    return new Map(childIds.map((id) => [id, { month: month.get(id) ?? 0n, total: total.get(id) ?? 0n }]));
  }

  /** What each of these accounts spent since `since` (ever, without), as `exec` sees it; 0 for none. */
  async spent(exec: Executor, childIds: string[], since?: Date): Promise<Map<string, bigint>> {
    const ids = [...new Set(childIds)];
    if (!ids.length) return new Map();
    const after = since ? since.toISOString() : null;
    // Both halves read the child's orders through orders_child_created_idx (created_by <> user_id).
    const rows = await exec.execute(sql`
      select id, sum(n)::text as spent from (
        select o.created_by as id, p.amount as n
          from orders o join order_payments p on p.order_id = o.id
          where o.created_by = any(${pgArray(ids)}::uuid[]) and o.created_by <> o.user_id and o.status <> 'Refunded'
            and p.source in ('gift', 'cash') and (${after}::timestamptz is null or p.created_at >= ${after}::timestamptz)
        union all
        select o.created_by, -o.amount
          from orders o
          where o.created_by = any(${pgArray(ids)}::uuid[]) and o.created_by <> o.user_id and o.status = 'Refunded'
            and o.type in ('Refund', 'TrafficDowngrade') and (${after}::timestamptz is null or o.refunded_at >= ${after}::timestamptz)
      ) s group by id`);
    return new Map(rowsOf<{ id: string; spent: string }>(rows).map((r) => [r.id, BigInt(r.spent) > 0n ? BigInt(r.spent) : 0n]));
  }

  /** The limit, spend and room of each of these accounts that is a child with a limit. */
  async rooms(exec: Executor, userIds: string[]): Promise<Map<string, SpendRoom>> {
    const limits = await this.deps.limitsOf(exec, [...new Set(userIds)]);
    if (!limits.size) return new Map();
    const byPeriod = (p: ChildLimit['period']) => [...limits].filter(([, l]) => l.period === p).map(([id]) => id);
    const monthly = byPeriod('Month');
    const ever = byPeriod('Total');
    const [m, t] = await Promise.all([
      monthly.length ? this.spent(exec, monthly, beijingMonthStart(this.deps.clock.now())) : new Map<string, bigint>(),
      ever.length ? this.spent(exec, ever) : new Map<string, bigint>(),
    ]);
    const out = new Map<string, SpendRoom>();
    for (const [id, limit] of limits) {
      const spent = (limit.period === 'Month' ? m : t).get(id) ?? 0n;
      out.set(id, { limit, spent, left: limit.amount > spent ? limit.amount - spent : 0n });
    }
    return out;
  }

  /**
   * Refuses (SPEND_LIMIT_EXCEEDED) when `amount` more would take the child `spenderId` past its
   * limit; nothing for a main account or a child without one. `lock` holds a per-child lock to the end
   * of `exec` (a transaction that then takes the money), so concurrent payments of one child queue.
   */
  async assertRoom(exec: Executor, spenderId: string, amount: bigint, opts: { lock?: boolean; what?: string } = {}): Promise<void> {
    if (amount <= 0n) return;
    if (opts.lock) await exec.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`child-spend:${spenderId}`}, 0))`);
    const room = (await this.rooms(exec, [spenderId])).get(spenderId);
    if (!room || room.left >= amount) return;
    throw new AppError('SPEND_LIMIT_EXCEEDED', `${describeRoom(room)}；${opts.what ?? '本次需'} ${formatYuan(amount)} 元`);
  }
}

/** "子账号 dev 本月额度 100.00 元，已用 80.00 元，剩余 20.00 元". */
export function describeRoom(room: SpendRoom): string {
  const period = room.limit.period === 'Month' ? '本月' : SpendLimitPeriod.label('Total');
  return `子账号 ${room.limit.childName} ${period}额度 ${formatYuan(room.limit.amount)} 元，已用 ${formatYuan(room.spent)} 元，剩余 ${formatYuan(room.left)} 元`;
}

/** The rows of a raw query (node-postgres and PGlite both answer `{ rows }`). */
