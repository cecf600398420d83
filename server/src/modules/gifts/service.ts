/**
 * Gift credit (赠送金): grants with their own expiry, backed by the user's `gift` ledger account.
 * The ledger holds the sum; the grants say which part expires when, so spending can take the
 * earliest expiry first and a refund can put each part back where it came from.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, inArray, lte, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { giftGrants } from './schema.js';
import { AppError } from '../../http/errors.js';
import { pgArray } from '../../db/arrays.js';
import { FreshReads } from '../../db/fresh-reads.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';

export type GiftGrantRow = typeof giftGrants.$inferSelect;

/**
 * What each account has paid in by recharge (the user object's `recharged`): the recharge module's totals.
 * Named here because recharge sits above gifts (a recharge grants its bonus as gift credit).
 */
export interface RechargedAmounts {
  paidBy(userIds: string[]): Promise<Map<string, bigint>>;
}
const WELCOME = 'welcome';

/** A grant as the API shows it (giftItemSchema). */
export function giftItemView(g: GiftGrantRow) {
  return {
    id: g.id,
    source: g.source,
    amount: String(g.amount),
    remain: String(g.remain),
    expireAt: g.expireAt.toISOString(),
    status: g.status === 1 ? (1 as const) : (0 as const),
    createdAt: g.createdAt.toISOString(),
  };
}

export class GiftService {
  private fieldsOf = new FreshReads((payerIds: string[]) => this.loadUserFields(payerIds));

  constructor(
    private db: Db,
    private ledger: LedgerService,
    private clock: Clock,
    /** What each user has paid in by recharge, the user object's `recharged`. */
    private recharged: RechargedAmounts,
    private catalogue?: CatalogueStore,
  ) {}

  private settings() {
    if (!this.catalogue) throw new Error('gifts: the welcome scheme needs the catalogue settings');
    return this.catalogue.peek().settings;
  }

  /** Spec §3/§4 fields of the user: obtained, recharged, remain, renewStatus, expireAt. */
  async summary(userId: string) {
    const [grants, recharged] = await Promise.all([this.list(userId), this.recharged.paidBy([userId])]);
    return this.summarize(grants, recharged.get(userId) ?? 0n);
  }

  private summarize(grants: GiftGrantRow[], recharged: bigint) {
    const now = this.clock.now();
    const counting = grants.filter((g) => this.countsTowardRemain(g, now));
    return {
      grants,
      remain: counting.reduce((n, g) => n + g.remain, 0n),
      obtained: grants.some((g) => g.source === WELCOME),
      recharged,
      renewStatus: grants.some((g) => g.status === 0 && g.remain > 0n && g.expireAt > now),
      expireAt: counting.map((g) => g.expireAt).sort((a, b) => a.getTime() - b.getTime())[0] ?? null,
    };
  }

  /**
   * The money fields of the user object (spec §3) for me/info: the payer's cash and gift summary
   * with the items (remain is summed from the same list, so the two never disagree). Concurrent
   * calls share their statements, each answered by statements that started after it was made
   * (FreshReads): a balance changed before the request shows in it, in whichever process it changed.
   */
  async userFields(payerId: string) {
    return (await this.fieldsOf.load(payerId))!;
  }

  private async loadUserFields(payerIds: string[]) {
    const [grants, recharged, balances] = await Promise.all([
      this.listMany(payerIds),
      this.recharged.paidBy(payerIds),
      this.ledger.spendableMany(this.db, payerIds),
    ]);
    return new Map(payerIds.map((id) => [id, this.userFieldsView(this.summarize(grants.get(id) ?? [], recharged.get(id) ?? 0n), balances.get(id)!.cash)]));
  }

  private userFieldsView(s: ReturnType<GiftService['summarize']>, cash: bigint) {
    return {
      cash: String(cash),
      obtained: s.obtained,
      recharged: String(s.recharged),
      remain: String(s.remain),
      renewStatus: s.renewStatus,
      expireAt: s.expireAt?.toISOString() ?? null,
      gift: s.grants.map(giftItemView),
    };
  }

  /** list for many users at once: their grants by user, each user's earliest expiry first. */
  private async listMany(userIds: string[]): Promise<Map<string, GiftGrantRow[]>> {
    const rows = await this.db
      .select()
      .from(giftGrants)
      .where(sql`${giftGrants.userId} = any(${pgArray(userIds)}::uuid[])`)
      .orderBy(asc(giftGrants.userId), asc(giftGrants.expireAt), asc(giftGrants.createdAt));
    const out = new Map<string, GiftGrantRow[]>();
    for (const g of rows) {
      const list = out.get(g.userId);
      if (list) list.push(g);
      else out.set(g.userId, [g]);
    }
    return out;
  }

  async eligibility(user: { id: string; isChild: boolean }) {
    const s = this.settings();
    const obtained = (await this.list(user.id)).some((g) => g.source === WELCOME);
    const reason = s.welcomeGift <= 0n ? '当前没有可领取的赠送金活动' : user.isChild ? '子账号不能领取，请使用主账号' : obtained ? '已领取过新人赠送金' : '';
    return { eligible: reason === '', obtained, amount: String(s.welcomeGift), validDays: s.welcomeGiftValidDays, reason };
  }

  /** Claims the welcome credit, once per account (the key), active at once. */
  async obtain(user: { id: string; isChild: boolean }): Promise<void> {
    const e = await this.eligibility(user);
    if (!e.eligible) throw new AppError('GIFT_NOT_ELIGIBLE', e.reason);
    const s = this.settings();
    await this.db.transaction((tx) =>
      this.grant(tx, {
        userId: user.id,
        amount: s.welcomeGift,
        source: WELCOME,
        validDays: s.welcomeGiftValidDays,
        key: `gift-welcome:${user.id}`,
        memo: '新人赠送金',
      }),
    );
  }

  /**
   * Renews items waiting for renewal (status 0): active again for giftRenewDays. Renewal is for
   * paying customers: the account must have recharged at least once.
   */
  async renew(userId: string, onlyId?: string): Promise<number> {
    const { recharged } = await this.summary(userId);
    if (recharged <= 0n) throw new AppError('GIFT_RENEW_NEEDS_RECHARGE');
    const now = this.clock.now();
    const until = new Date(now.getTime() + this.settings().giftRenewDays * 86400_000);
    const conds = [eq(giftGrants.userId, userId), eq(giftGrants.status, 0), gt(giftGrants.remain, 0n), gt(giftGrants.expireAt, now)];
    if (onlyId) conds.push(eq(giftGrants.id, onlyId));
    const renewed = await this.db
      .update(giftGrants)
      .set({ status: 1, expireAt: until })
      .where(and(...conds))
      .returning({ id: giftGrants.id });
    if (renewed.length === 0) throw new AppError('GIFT_NOT_RENEWABLE', onlyId ? '该赠送金不在待续期状态' : undefined);
    return renewed.length;
  }

  /** Credits gift money from the platform's promotion account; the key makes a retry grant once. */
  async grant(
    tx: Tx,
    g: { userId: string; amount: bigint; source: string; validDays: number; key: string; memo: string; actorId?: string | null },
  ): Promise<string | null> {
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

  /** lockSpendable for many users at once: their grants by user, each user's earliest expiry first. */
  async lockSpendableMany(tx: Tx, userIds: string[]): Promise<Map<string, GiftGrantRow[]>> {
    const out = new Map<string, GiftGrantRow[]>();
    if (!userIds.length) return out;
    const now = this.clock.now();
    const rows = await tx
      .select()
      .from(giftGrants)
      // One array parameter however many users (a tick batch has thousands).
      .where(
        and(sql`${giftGrants.userId} = any(${pgArray(userIds)}::uuid[])`, eq(giftGrants.status, 1), gt(giftGrants.remain, 0n), gt(giftGrants.expireAt, now)),
      )
      .orderBy(asc(giftGrants.userId), asc(giftGrants.expireAt), asc(giftGrants.createdAt))
      .for('update');
    for (const g of rows) out.set(g.userId, [...(out.get(g.userId) ?? []), g]);
    return out;
  }

  /** take for many locked grants in one statement. */
  async takeMany(tx: Tx, takes: Map<string, bigint>) {
    if (!takes.size) return;
    await tx.execute(sql`update gift_grants g set remain = g.remain - v.amount
      from unnest(${pgArray([...takes.keys()])}::uuid[], ${pgArray([...takes.values()])}::bigint[]) as v(id, amount) where g.id = v.id`);
  }

  /** Takes part of a locked grant (the ledger transfer is the caller's). */
  async take(tx: Tx, grantId: string, amount: bigint) {
    await tx
      .update(giftGrants)
      .set({ remain: sql`${giftGrants.remain} - ${amount}` })
      .where(eq(giftGrants.id, grantId));
  }

  /** Gives a refunded part back to the grant it came from. */
  /** Which of these grants have not expired yet (money given back to an expired grant could never be spent or expire). */
  async unexpired(tx: Tx, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await tx
      .select({ id: giftGrants.id })
      .from(giftGrants)
      .where(and(inArray(giftGrants.id, ids), gt(giftGrants.expireAt, this.clock.now())));
    return new Set(rows.map((r) => r.id));
  }

  async giveBack(tx: Tx, grantId: string, amount: bigint) {
    await tx
      .update(giftGrants)
      .set({ remain: sql`least(${giftGrants.remain} + ${amount}, ${giftGrants.amount})` })
      .where(eq(giftGrants.id, grantId));
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
        const grace = this.catalogue ? this.settings().giftRenewGraceDays : 0;
        if (g.source === WELCOME && g.status === 1 && grace > 0) {
          // Welcome credit waits for renewal first; it cannot be spent meanwhile (status 0).
          await tx
            .update(giftGrants)
            .set({ status: 0, expireAt: new Date(g.expireAt.getTime() + grace * 86400_000) })
            .where(eq(giftGrants.id, g.id));
          return;
        }
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
