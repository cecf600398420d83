/**
 * 代金券 as far as a price quote needs them: is this voucher the caller's, unused, valid now and
 * good for this product? Granting, locking at checkout and redemption belong to the money issue and
 * will post ledger transfers; they extend this service.
 */
import { randomUUID } from 'node:crypto';
import { and, desc, eq, lte } from 'drizzle-orm';
import { InstanceCategory } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import { vouchers } from './schema.js';
import { AppError } from '../../http/errors.js';

export type VoucherRow = typeof vouchers.$inferSelect;

const STATUS_TEXT: Record<VoucherRow['status'], string> = {
  Unused: '',
  Used: '该代金券已使用',
  Expired: '该代金券已过期',
  Revoked: '该代金券已作废',
};

export interface VoucherGrant {
  userId: string;
  name: string;
  amount: bigint;
  minSpend?: bigint;
  categories?: InstanceCategory[];
  validDays: number;
  /** The business event that grants it, so a retried grant gives one voucher. */
  key: string;
  actorId?: string | null;
}

export class VoucherService {
  constructor(
    private db: Db,
    private ledger: LedgerService,
    private catalogue: CatalogueStore,
    private clock: Clock,
  ) {}

  /**
   * Issues a voucher: its value moves from the platform's promotion account to the user's voucher
   * account, so the ledger knows what the platform owes in vouchers. Replaying the key issues nothing.
   */
  async grant(g: VoucherGrant, tx: Tx): Promise<string | null> {
    const now = this.clock.now();
    const id = randomUUID();
    const posted = await this.ledger.post(
      {
        key: g.key,
        kind: 'voucher_grant',
        memo: g.name,
        actorId: g.actorId ?? null,
        legs: [
          { account: { platform: 'promotion' }, amount: -g.amount },
          { account: { userId: g.userId, kind: 'voucher' }, amount: g.amount },
        ],
      },
      tx,
    );
    if (posted.replayed) return null;
    await tx.insert(vouchers).values({
      id,
      userId: g.userId,
      name: g.name,
      amount: g.amount,
      minSpend: g.minSpend ?? 0n,
      categories: g.categories ?? [],
      validFrom: now,
      expiresAt: new Date(now.getTime() + g.validDays * 86400_000),
      createdAt: now,
    });
    return id;
  }

  /** The new-user voucher of spec §1, as configured (none when the amount is 0). */
  async grantNewUser(userId: string, tx: Tx) {
    const { settings } = this.catalogue.peek();
    if (settings.newUserVoucher <= 0n) return;
    await this.grant(
      { userId, name: '新用户专享代金券', amount: settings.newUserVoucher, validDays: settings.newUserVoucherValidDays, key: `new-user-voucher:${userId}` },
      tx,
    );
  }

  /** A user's vouchers, newest first; `usable` keeps only those that can pay now. */
  async list(userId: string, opts: { usable?: boolean } = {}, exec: Executor = this.db) {
    const rows = await exec
      .select()
      .from(vouchers)
      .where(and(eq(vouchers.userId, userId)))
      .orderBy(desc(vouchers.createdAt));
    const now = this.clock.now();
    const withState = rows.map((v) => ({ ...v, status: v.status === 'Unused' && now >= v.expiresAt ? ('Expired' as const) : v.status }));
    return opts.usable ? withState.filter((v) => v.status === 'Unused' && now >= v.validFrom) : withState;
  }

  /** The voucher, if `userId` may spend it on `category` at `at`; a VOUCHER_UNUSABLE error saying why not otherwise. */
  async usableFor(userId: string, voucherId: string, category: InstanceCategory, at: Date, tx?: Tx): Promise<VoucherRow> {
    // Inside a payment the row is locked, so two orders cannot spend one voucher.
    const [v] = tx
      ? await tx.select().from(vouchers).where(eq(vouchers.id, voucherId)).for('update')
      : await this.db.select().from(vouchers).where(eq(vouchers.id, voucherId));
    // Someone else's voucher is reported exactly like a missing one: ids are not an oracle.
    if (!v || v.userId !== userId) throw new AppError('VOUCHER_UNUSABLE', '代金券不存在或不属于当前账号');
    if (v.status !== 'Unused') throw new AppError('VOUCHER_UNUSABLE', STATUS_TEXT[v.status]);
    if (at < v.validFrom) throw new AppError('VOUCHER_UNUSABLE', '该代金券尚未到可用时间');
    if (at >= v.expiresAt) throw new AppError('VOUCHER_UNUSABLE', STATUS_TEXT.Expired);
    if (v.categories.length > 0 && !v.categories.includes(category)) {
      throw new AppError(
        'VOUCHER_UNUSABLE',
        `该代金券不适用于${InstanceCategory.label(category) ?? (category === ('Ai' as string) ? '模型资源包' : category)}`,
      );
    }
    return v;
  }

  /** Spends a voucher that usableFor has locked in this transaction (the ledger legs are the payer's). */
  async markUsed(tx: Tx, voucherId: string): Promise<void> {
    await tx
      .update(vouchers)
      .set({ status: 'Used' })
      .where(and(eq(vouchers.id, voucherId), eq(vouchers.status, 'Unused')));
  }

  /** A refunded order's voucher, usable again as it was; returns it (its full amount goes back to the voucher account). */
  async restore(tx: Tx, voucherId: string): Promise<VoucherRow> {
    const [v] = await tx.update(vouchers).set({ status: 'Unused' }).where(eq(vouchers.id, voucherId)).returning();
    if (!v) throw new Error(`代金券 ${voucherId} 不存在`);
    return v;
  }

  /** Unused vouchers past their expiry: marked Expired, their value back to the promotion account. */
  async expireDue(limit = 500): Promise<number> {
    const now = this.clock.now();
    const due = await this.db
      .select({ id: vouchers.id })
      .from(vouchers)
      .where(and(eq(vouchers.status, 'Unused'), lte(vouchers.expiresAt, now)))
      .limit(limit);
    for (const { id } of due) {
      await this.db.transaction(async (tx) => {
        const [v] = await tx.select().from(vouchers).where(eq(vouchers.id, id)).for('update');
        if (!v || v.status !== 'Unused') return;
        await this.ledger.post(
          {
            key: `voucher-expire:${v.id}`,
            kind: 'voucher_expire',
            memo: `代金券到期：${v.name}`,
            legs: [
              { account: { userId: v.userId, kind: 'voucher' }, amount: -v.amount },
              { account: { platform: 'promotion' }, amount: v.amount },
            ],
          },
          tx,
        );
        await tx.update(vouchers).set({ status: 'Expired' }).where(eq(vouchers.id, v.id));
      });
    }
    return due.length;
  }
}
