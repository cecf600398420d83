/**
 * 余额保底 — a main account's balance floor: when its spendable balance (cash + gift credit) falls
 * below it, the post-paid billing tick stops the account's running post-paid instances before the
 * balance is empty (instances/billing.ts reads the floors through floorsOf). A child account spends
 * its parent's balance, so the parent's floor is the one that applies; only the main account sets it.
 */
import { inArray, isNotNull, and, eq } from 'drizzle-orm';
import type { BalanceFloor } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { users } from './schema.js';
import { AppError } from '../../http/errors.js';

export class BalanceFloors {
  constructor(private deps: { db: Db; clock: Clock }) {}

  /** The account's floor as the settings form shows it. */
  async get(userId: string): Promise<BalanceFloor> {
    const [row] = await this.deps.db.select({ floor: users.balanceFloor }).from(users).where(eq(users.id, userId));
    if (!row) throw new AppError('USER_NOT_FOUND');
    return { floor: row.floor === null ? null : String(row.floor) };
  }

  /** Sets the floor (units of 0.0001 yuan) or, with null, turns it off. */
  async set(userId: string, floor: bigint | null): Promise<BalanceFloor> {
    await this.deps.db.update(users).set({ balanceFloor: floor, updatedAt: this.deps.clock.now() }).where(eq(users.id, userId));
    return this.get(userId);
  }

  /** The floors of those of `payerIds` that have one. */
  readonly floorsOf = async (tx: Executor, payerIds: string[]): Promise<Map<string, bigint>> => {
    if (!payerIds.length) return new Map();
    const rows = await tx
      .select({ id: users.id, floor: users.balanceFloor })
      .from(users)
      .where(and(inArray(users.id, [...new Set(payerIds)]), isNotNull(users.balanceFloor)));
    return new Map(rows.map((r) => [r.id, r.floor!]));
  };
}
