/**
 * The double-entry ledger of DESIGN.md "Money". Every change of any balance is one transfer:
 * entries that sum to zero, under an idempotency key that is unique in the database, so the same
 * business event posted twice (a replayed notification, a retried tick) moves money once.
 *
 * Accounts are locked in code order before they change, so two transfers over the same accounts
 * queue instead of deadlocking, and a spendable account is checked after the lock: fifty payments
 * racing for a balance that covers ten end with exactly ten.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { ledgerAccounts, ledgerEntries, ledgerTransfers } from '../../db/schema.js';
import { AppError } from '../../http/errors.js';

export type AccountKind = (typeof ledgerAccounts.$inferSelect)['kind'];
export const USER_KINDS = ['cash', 'gift', 'voucher', 'deposit', 'resource'] as const satisfies readonly AccountKind[];
export type UserAccountKind = (typeof USER_KINDS)[number];
export type PlatformAccountKind = Exclude<AccountKind, UserAccountKind>;

/** Which account a leg touches: one of a user's, or one of the platform's. */
export type AccountRef = { userId: string; kind: UserAccountKind } | { platform: PlatformAccountKind; name?: string };

export interface Leg {
  account: AccountRef;
  /** Positive credits the account, negative debits it. */
  amount: bigint;
}

export interface TransferInput {
  key: string;
  kind: string;
  memo?: string;
  actorId?: string | null;
  orderId?: string | null;
  legs: Leg[];
}

export interface PostedTransfer {
  transferId: string;
  replayed: boolean;
}

export function accountCode(ref: AccountRef): string {
  return 'userId' in ref ? `user:${ref.userId}:${ref.kind}` : `platform:${ref.platform}${ref.name ? `:${ref.name}` : ''}`;
}

export class LedgerService {
  /** Account codes known to exist (accounts are never deleted). */
  private knownAccounts = new Set<string>();

  constructor(
    private db: Db,
    private clock: Clock,
  ) {}

  /** Posts a transfer, or finds the one already posted under its key. Runs inside `exec` if it is a transaction. */
  async post(input: TransferInput, exec?: Tx): Promise<PostedTransfer> {
    checkLegs(input.legs);
    if (exec) return this.postIn(exec, input);
    return this.db.transaction((tx) => this.postIn(tx, input));
  }

  private async postIn(tx: Tx, input: TransferInput): Promise<PostedTransfer> {
    const now = this.clock.now();
    const transferId = randomUUID();
    const inserted = await tx
      .insert(ledgerTransfers)
      .values({ id: transferId, idempotencyKey: input.key, kind: input.kind, memo: input.memo ?? '', actorId: input.actorId ?? null, orderId: input.orderId ?? null, createdAt: now })
      .onConflictDoNothing({ target: ledgerTransfers.idempotencyKey })
      .returning({ id: ledgerTransfers.id });
    if (inserted.length === 0) return { transferId: await this.sameAsBefore(tx, input), replayed: true };

    const legs = mergeLegs(input.legs);
    const accounts = await this.lockAccounts(tx, legs.map((l) => l.account), now);
    // Check every leg before writing any: the locked balances cannot move under us.
    for (const leg of legs) {
      const account = accounts.get(accountCode(leg.account))!;
      const after = account.balance + leg.amount;
      if (after < 0n && !account.mayGoNegative) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${formatShort(-after)} 元`);
    }
    for (const leg of legs) {
      const account = accounts.get(accountCode(leg.account))!;
      const [row] = await tx
        .update(ledgerAccounts)
        .set({ balance: sql`${ledgerAccounts.balance} + ${leg.amount}` })
        .where(eq(ledgerAccounts.id, account.id))
        .returning({ balance: ledgerAccounts.balance });
      await tx.insert(ledgerEntries).values({ transferId, accountId: account.id, amount: leg.amount, balanceAfter: row!.balance, createdAt: now });
    }
    return { transferId, replayed: false };
  }

  /** A replay must be the same event: same legs. Anything else reusing a key is a bug upstream. */
  private async sameAsBefore(tx: Tx, input: TransferInput): Promise<string> {
    const [prior] = await tx.select().from(ledgerTransfers).where(eq(ledgerTransfers.idempotencyKey, input.key));
    const entries = await tx
      .select({ code: ledgerAccounts.code, amount: ledgerEntries.amount })
      .from(ledgerEntries)
      .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerEntries.accountId))
      .where(eq(ledgerEntries.transferId, prior!.id));
    const before = entries.map((e) => `${e.code}=${e.amount}`).sort().join(';');
    const now = mergeLegs(input.legs).map((l) => `${accountCode(l.account)}=${l.amount}`).sort().join(';');
    if (before !== now || prior!.kind !== input.kind) throw new AppError('IDEMPOTENCY_CONFLICT', input.key);
    return prior!.id;
  }

  /**
   * Locks the accounts in code order. Accounts are created on first use, before any lock is taken
   * (creating one while holding another's lock could deadlock two first payments); accounts are
   * never deleted, so once this process has seen one exist it skips that step.
   */
  private async lockAccounts(tx: Tx, refs: AccountRef[], now: Date) {
    const byCode = new Map(refs.map((r) => [accountCode(r), r]));
    const codes = [...byCode.keys()].sort();
    const unknown = codes.filter((c) => !this.knownAccounts.has(c));
    let createdHere = new Set<string>();
    if (unknown.length) {
      const created = await tx
        .insert(ledgerAccounts)
        .values(
          unknown.map((code) => {
            const ref = byCode.get(code)!;
            const user = 'userId' in ref;
            return { id: randomUUID(), code, userId: user ? ref.userId : null, kind: user ? ref.kind : ref.platform, mayGoNegative: !user, createdAt: now };
          }),
        )
        .onConflictDoNothing({ target: ledgerAccounts.code })
        .returning({ code: ledgerAccounts.code });
      createdHere = new Set(created.map((c) => c.code));
    }
    const rows = await tx.select().from(ledgerAccounts).where(inArray(ledgerAccounts.code, codes)).orderBy(asc(ledgerAccounts.code)).for('update');
    // Only accounts committed by someone else are certain to exist; ours may still roll back.
    for (const r of rows) if (!createdHere.has(r.code)) this.knownAccounts.add(r.code);
    return new Map(rows.map((r) => [r.code, r]));
  }

  /** A user's balances by kind (0 for accounts never used). */
  async balances(userId: string, exec: Executor = this.db): Promise<Record<UserAccountKind, bigint>> {
    const rows = await exec.select({ kind: ledgerAccounts.kind, balance: ledgerAccounts.balance }).from(ledgerAccounts).where(eq(ledgerAccounts.userId, userId));
    const out = Object.fromEntries(USER_KINDS.map((k) => [k, 0n])) as Record<UserAccountKind, bigint>;
    for (const r of rows) out[r.kind as UserAccountKind] = r.balance;
    return out;
  }

  /** The entries of one of a user's accounts, newest first. */
  async statement(userId: string, kind: UserAccountKind, paging: { page: number; pageSize: number }) {
    const code = accountCode({ userId, kind });
    const where = eq(ledgerAccounts.code, code);
    const [{ total } = { total: 0 }] = await this.db
      .select({ total: sql<number>`count(*)::int` })
      .from(ledgerEntries)
      .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerEntries.accountId))
      .where(where);
    const items = await this.db
      .select({
        id: ledgerEntries.id,
        amount: ledgerEntries.amount,
        balanceAfter: ledgerEntries.balanceAfter,
        createdAt: ledgerEntries.createdAt,
        kind: ledgerTransfers.kind,
        memo: ledgerTransfers.memo,
        orderId: ledgerTransfers.orderId,
      })
      .from(ledgerEntries)
      .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerEntries.accountId))
      .innerJoin(ledgerTransfers, eq(ledgerTransfers.id, ledgerEntries.transferId))
      .where(and(where))
      .orderBy(desc(ledgerEntries.id))
      .limit(paging.pageSize)
      .offset((paging.page - 1) * paging.pageSize);
    return { items, total, ...paging };
  }
}

function checkLegs(legs: Leg[]) {
  if (legs.length < 2) throw new Error('ledger: a transfer needs at least two legs');
  if (legs.some((l) => l.amount === 0n)) throw new Error('ledger: a leg of zero');
  const sum = legs.reduce((n, l) => n + l.amount, 0n);
  if (sum !== 0n) throw new Error(`ledger: legs sum to ${sum}, not zero`);
}

/** Two legs on one account become one entry (its net), and zero nets drop out. */
function mergeLegs(legs: Leg[]): Leg[] {
  const net = new Map<string, Leg>();
  for (const l of legs) {
    const code = accountCode(l.account);
    const prior = net.get(code);
    net.set(code, { account: l.account, amount: (prior?.amount ?? 0n) + l.amount });
  }
  return [...net.values()].filter((l) => l.amount !== 0n);
}

function formatShort(units: bigint): string {
  const cents = (units + 99n) / 100n; // what is missing, rounded up to the cent
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}
