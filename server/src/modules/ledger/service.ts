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
import { and, desc, eq, sql } from 'drizzle-orm';
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
  constructor(
    private db: Db,
    private clock: Clock,
  ) {}

  /** Posts a transfer, or finds the one already posted under its key. Runs inside `exec` if it is a transaction. */
  async post(raw: TransferInput, exec?: Tx): Promise<PostedTransfer> {
    checkLegs(raw.legs);
    const input = { ...raw, legs: raw.legs.map((l) => shardPlatformLeg(l, raw.key)) };
    // ledger_post is one statement, atomic on its own: no surrounding transaction is needed.
    return this.postIn(exec ?? this.db, input);
  }

  /** The transfer in one round trip: the `ledger_post` function of migration 0006 does the work. */
  private async postIn(tx: Executor, input: TransferInput): Promise<PostedTransfer> {
    const legs = mergeLegs(input.legs);
    const refs = legs.map((l) => l.account);
    const codes = refs.map(accountCode);
    let result;
    try {
      result = await tx.execute(sql`select outcome, transfer_id from ledger_post(
        ${randomUUID()}::uuid, ${input.key}, ${input.kind}, ${input.memo ?? ''}, ${input.actorId ?? null}::uuid, ${input.orderId ?? null}, ${this.clock.now().toISOString()}::timestamptz,
        ${pgArray(codes)}::text[],
        ${pgArray(refs.map((r) => ('userId' in r ? r.userId : null)))}::uuid[],
        ${pgArray(refs.map((r) => ('userId' in r ? r.kind : r.platform)))}::text[],
        ${pgArray(refs.map((r) => !('userId' in r)))}::boolean[],
        ${pgArray(legs.map((l) => l.amount))}::bigint[])`);
    } catch (e) {
      const short = insufficientBy(e);
      if (short !== null) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${formatShort(short)} 元`);
      throw e;
    }
    const row = (result as unknown as { rows: { outcome: string; transfer_id: string }[] }).rows[0]!;
    if (row.outcome === 'replayed') return { transferId: await this.sameAsBefore(tx, input), replayed: true };
    return { transferId: row.transfer_id, replayed: false };
  }

  /** A replay must be the same event: same legs. Anything else reusing a key is a bug upstream. */
  private async sameAsBefore(tx: Executor, input: TransferInput): Promise<string> {
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

/**
 * Every payment credits the platform's revenue (and many debit its promotion account): one row
 * would serialise them all. Platform accounts are spread over shards, chosen by the transfer's key
 * so that a replay lands on the same shard; their totals are the sum over shards.
 */
export const PLATFORM_SHARDS = 16;
function shardPlatformLeg(leg: Leg, key: string): Leg {
  if (!('platform' in leg.account) || leg.account.name) return leg;
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return { ...leg, account: { ...leg.account, name: `s${String((h >>> 0) % PLATFORM_SHARDS).padStart(2, '0')}` } };
}

/** A PostgreSQL array literal of simple values ("{a,b}", nulls as NULL), sent as one text parameter. */
function pgArray(values: (string | bigint | boolean | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : typeof v === 'string' ? `"${v.replace(/["\\]/g, '\\$&')}"` : String(v))).join(',')}}`;
}

/** ledger_post's refusal: 'INSUFFICIENT_BALANCE:<units short>' somewhere in the driver's error chain. */
function insufficientBy(e: unknown): bigint | null {
  for (let cur = e as { message?: string; cause?: unknown } | undefined; cur; cur = cur.cause as typeof cur) {
    const m = /INSUFFICIENT_BALANCE:(\d+)/.exec(cur.message ?? '');
    if (m) return BigInt(m[1]!);
  }
  return null;
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
