import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { pgArray } from '../../db/arrays.js';
import { recharges } from './schema.js';

/**
 * What each account has paid in by recharge (spec §3 `recharged`), for the user object's money
 * fields. Apart from RechargeService because those fields are assembled by gift credit, which a
 * recharge itself needs (for the bonus).
 */
export class RechargeTotals {
  constructor(private db: Db) {}

  async paidBy(userIds: string[]): Promise<Map<string, bigint>> {
    const rows = await this.db
      .select({ userId: recharges.userId, total: sql<string>`sum(${recharges.amount})::text` })
      .from(recharges)
      .where(and(sql`${recharges.userId} = any(${pgArray(userIds)}::uuid[])`, eq(recharges.status, 'Paid')))
      .groupBy(recharges.userId);
    return new Map(rows.map((r) => [r.userId, BigInt(r.total)]));
  }
}
