/**
 * Gift credit (赠送金): grants with their own expiry, backed by the user's `gift` ledger account.
 * The ledger holds the sum; the grants say which part expires when, so spending can take the
 * earliest expiry first and a refund can put each part back where it came from.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { giftGrants } from '../../db/schema.js';
import type { LedgerService } from '../ledger/service.js';

export type GiftGrantRow = typeof giftGrants.$inferSelect;

export class GiftService {
  constructor(
    private db: Db,
    private ledger: LedgerService,
    private clock: Clock,
  ) {}

  /** Credits gift money from the platform's promotion account; the key makes a retry grant once. */
  async grant(tx: Tx, g: { userId: string; amount: bigint; source: string; validDays: number; key: string; memo: string; actorId?: string | null }): Promise<string | null> {
    if (g.amount <= 0n) return null;
    const posted = await this.ledger.post(
      {
        key: g.key,
        kind: 'gift_grant',
        memo: g.memo,
        actorId: g.actorId ?? null,
        legs: [
          { account: { platform: 'promotion' }, amount: -g.amount },
          { account: { userId: g.userId, kind: 'gift' }, amount: g.amount },
        ],
      },
      tx,
    );
    if (posted.replayed) return null;
    const now = this.clock.now();
    const id = randomUUID();
    await tx.insert(giftGrants).values({
      id,
      userId: g.userId,
      source: g.source,
      amount: g.amount,
      remain: g.amount,
      expireAt: new Date(now.getTime() + g.validDays * 86400_000),
      createdAt: now,
    });
    return id;
  }

  /** A user's grants, earliest expiry first. */
  list(userId: string, exec: Executor = this.db): Promise<GiftGrantRow[]> {
    return exec.select().from(giftGrants).where(eq(giftGrants.userId, userId)).orderBy(asc(giftGrants.expireAt), asc(giftGrants.createdAt));
  }

  /** Spec §3: an item counts toward remain only if remain > 0, not expired and status 1. */
  countsTowardRemain(g: GiftGrantRow, now = this.clock.now()): boolean {
    return g.remain > 0n && g.expireAt > now && g.status === 1;
  }

  /** Grants that can pay now, locked, earliest expiry first. */
  async lockSpendable(tx: Tx, userId: string): Promise<GiftGrantRow[]> {
    const now = this.clock.now();
    return tx
      .select()
      .from(giftGrants)
      .where(and(eq(giftGrants.userId, userId), eq(giftGrants.status, 1), gt(giftGrants.remain, 0n), gt(giftGrants.expireAt, now)))
      .orderBy(asc(giftGrants.expireAt), asc(giftGrants.createdAt))
      .for('update');
  }

  /** Takes part of a locked grant (the ledger transfer is the caller's). */
  async take(tx: Tx, grantId: string, amount: bigint) {
    await tx.update(giftGrants).set({ remain: sql`${giftGrants.remain} - ${amount}` }).where(eq(giftGrants.id, grantId));
  }

  /** Gives a refunded part back to the grant it came from. */
  async giveBack(tx: Tx, grantId: string, amount: bigint) {
    await tx.update(giftGrants).set({ remain: sql`least(${giftGrants.remain} + ${amount}, ${giftGrants.amount})` }).where(eq(giftGrants.id, grantId));
  }

  /**
   * Expired gift credit leaves the balance through the ledger (back to the promotion account), so
   * the balance never shows money that cannot be spent. Each grant expires once (its key).
   */
  async expireDue(limit = 500): Promise<number> {
    const now = this.clock.now();
    const due = await this.db
      .select({ id: giftGrants.id })
      .from(giftGrants)
      .where(and(lte(giftGrants.expireAt, now), gt(giftGrants.remain, 0n)))
      .limit(limit);
    for (const { id } of due) {
      await this.db.transaction(async (tx) => {
        const [g] = await tx.select().from(giftGrants).where(eq(giftGrants.id, id)).for('update');
        if (!g || g.remain <= 0n) return;
        await this.ledger.post(
          {
            key: `gift-expire:${g.id}`,
            kind: 'gift_expire',
            memo: '赠送金到期',
            legs: [
              { account: { userId: g.userId, kind: 'gift' }, amount: -g.remain },
              { account: { platform: 'promotion' }, amount: g.remain },
            ],
          },
          tx,
        );
        await tx.update(giftGrants).set({ remain: 0n }).where(eq(giftGrants.id, g.id));
      });
    }
    return due.length;
  }
}
