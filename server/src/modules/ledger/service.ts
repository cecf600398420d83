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
import { and, desc, eq, sql, type Placeholder } from 'drizzle-orm';
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
    const args = postArgs(input, this.clock.now());
    let row: { outcome: string; transferId: string } | undefined;
    try {
      // Outside a transaction the statement is prepared once per connection (parsed and planned once);
      // inside one it must run on the transaction's connection, so it is sent as it is.
      [row] = exec ? await exec.select(POST_COLUMNS).from(postCall(args)) : await this.preparedPost.execute(args);
    } catch (e) {
      const short = insufficientBy(e);
      if (short !== null) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${formatShort(short)} 元`);
      throw e;
    }
    if (row!.outcome === 'replayed') return { transferId: await this.sameAsBefore(exec ?? this.db, input), replayed: true };
    return { transferId: row!.transferId, replayed: false };
  }

  private preparedPostQuery?: ReturnType<typeof preparePost>;
  private get preparedPost() {
    return (this.preparedPostQuery ??= preparePost(this.db));
  }

  /** A replay must be the same event: same legs. Anything else reusing a key is a bug upstream. */
  private async sameAsBefore(tx: Executor, input: TransferInput): Promise<string> {
    const [prior] = await tx.select().from(ledgerTransfers).where(eq(ledgerTransfers.idempotencyKey, input.key));
    const entries = await tx
      .select({ code: ledgerAccounts.code, amount: ledgerEntries.amount })
      .from(ledgerEntries)
      .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerEntries.accountId))
      .where(eq(ledgerEntries.transferId, prior!.id));
    // Shards are left out: a replay after the shard count changed is still the same event.
    const unsharded = (code: string) => code.replace(/^(platform:[^:]+):s\d{2}$/, '$1');
    const before = entries.map((e) => `${unsharded(e.code)}=${e.amount}`).sort().join(';');
    const now = mergeLegs(input.legs).map((l) => `${unsharded(accountCode(l.account))}=${l.amount}`).sort().join(';');
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
export const PLATFORM_SHARDS = 64;
function shardPlatformLeg(leg: Leg, key: string): Leg {
  if (!('platform' in leg.account) || leg.account.name) return leg;
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return { ...leg, account: { ...leg.account, name: `s${String((h >>> 0) % PLATFORM_SHARDS).padStart(2, '0')}` } };
}

/** The arguments of migration 0007's `ledger_post`, arrays as PostgreSQL literals. */
type PostArgs = ReturnType<typeof postArgs>;
function postArgs(input: TransferInput, now: Date) {
  const legs = mergeLegs(input.legs);
  const refs = legs.map((l) => l.account);
  return {
    id: randomUUID(),
    key: input.key,
    kind: input.kind,
    memo: input.memo ?? '',
    actor: input.actorId ?? null,
    order: input.orderId ?? null,
    now: now.toISOString(),
    codes: pgArray(refs.map(accountCode)),
    userIds: pgArray(refs.map((r) => ('userId' in r ? r.userId : null))),
    kinds: pgArray(refs.map((r) => ('userId' in r ? r.kind : r.platform))),
    mayGoNegative: pgArray(refs.map((r) => !('userId' in r))),
    amounts: pgArray(legs.map((l) => l.amount)),
  };
}

function placeholders(): { [K in keyof PostArgs]: Placeholder } {
  const names = ['id', 'key', 'kind', 'memo', 'actor', 'order', 'now', 'codes', 'userIds', 'kinds', 'mayGoNegative', 'amounts'] as const;
  return Object.fromEntries(names.map((n) => [n, sql.placeholder(n)])) as { [K in keyof PostArgs]: Placeholder };
}

function preparePost(db: Db) {
  return db.select(POST_COLUMNS).from(postCall(placeholders())).prepare('ledger_post');
}

const POST_COLUMNS = { outcome: sql<string>`outcome`, transferId: sql<string>`transfer_id` };

function postCall(a: { [K in keyof PostArgs]: unknown }) {
  return sql`ledger_post(${a.id}::uuid, ${a.key}, ${a.kind}, ${a.memo}, ${a.actor}::uuid, ${a.order}, ${a.now}::timestamptz,
    ${a.codes}::text[], ${a.userIds}::uuid[], ${a.kinds}::text[], ${a.mayGoNegative}::boolean[], ${a.amounts}::bigint[])`;
}

/** A PostgreSQL array literal of simple values ("{a,b}", nulls as NULL), sent as one text parameter. */
function pgArray(values: (string | bigint | boolean | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : typeof v === 'string' ? `"${v.replace(/["\\]/g, '\\$&')}"` : String(v))).join(',')}}`;
}

/**
 * How far below zero the refused transfer would have taken a spendable account, or null when `e` is
 * not that refusal. The CHECK ledger_accounts_not_negative names the failing row, whose fifth column
 * is the balance it would have had (column order of migration 0002).
 */
function insufficientBy(e: unknown): bigint | null {
  for (let cur = e as PgError | undefined; cur; cur = cur.cause as PgError | undefined) {
    if (cur.constraint !== 'ledger_accounts_not_negative') continue;
    const balance = /Failing row contains \(([^)]*)\)/.exec(cur.detail ?? '')?.[1]?.split(', ')[4];
    return balance && /^-\d+$/.test(balance) ? -BigInt(balance) : 1n;
  }
  return null;
}
type PgError = { constraint?: string; detail?: string; cause?: unknown };

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
