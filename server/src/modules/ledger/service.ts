/**
 * The double-entry ledger of DESIGN.md "Money". Every change of any balance is one transfer:
 * entries that sum to zero, under an idempotency key that is unique in the database, so the same
 * business event posted twice (a replayed notification, a retried tick) moves money once.
 *
 * Accounts are locked in code order before they change, so two transfers over the same accounts
 * queue instead of deadlocking, and a spendable account is checked after the lock: fifty payments
 * racing for a balance that covers ten end with exactly ten.
 */
import { fenCeilText, type TransferKind } from '@console/contract';
import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, inArray, or, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { ledgerAccounts, ledgerEntries, ledgerTransfers } from './schema.js';
import { AppError } from '../../http/errors.js';
import { pgArray } from '../../db/arrays.js';
import { rowCount, rowsOf } from '../../db/results.js';
import {
  accountCode,
  PLATFORM_KINDS,
  PLATFORM_SHARDS,
  shardPlatformLeg,
  USER_KINDS,
  type AccountRef,
  type Leg,
  type PostedTransfer,
  type TransferInput,
  type UserAccountKind,
} from './accounts.js';
import { Holds } from './holds.js';

/** Accounts locked in a transaction, by code, with their balances as of the lock. */
export type LockedAccounts = Map<string, { id: string; balance: bigint; mayGoNegative: boolean }>;

export class LedgerService {
  /** Hold, settle and release of work priced when it ends (holds.ts). */
  readonly holds = new Holds(this);

  constructor(
    private db: Db,
    private clock: Clock,
  ) {}

  /**
   * Creates every shard of every platform account that does not exist yet (at start). ledger_post
   * creates a missing account itself, but only after locking the ones that exist, so two transfers
   * meeting a brand-new shard could lock in different orders and deadlock; the shared platform
   * accounts therefore never start missing. (A user's own accounts are touched by that user's
   * transfers only, which rarely race on their very first one.)
   */
  async ensurePlatformAccounts(): Promise<void> {
    const now = this.clock.now();
    const rows = PLATFORM_KINDS.flatMap((platform) =>
      Array.from({ length: PLATFORM_SHARDS }, (_, i) => {
        const ref: AccountRef = { platform, name: `s${String(i).padStart(2, '0')}` };
        return accountRow(accountCode(ref), ref, now);
      }),
    );
    await this.db.insert(ledgerAccounts).values(rows).onConflictDoNothing();
  }

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
      if (short !== null) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${fenCeilText(short)} 元`);
      throw e;
    }
    if (row!.outcome === 'replayed') return { transferId: await this.sameAsBefore(exec ?? this.db, input), replayed: true };
    return { transferId: row!.transferId, replayed: false };
  }

  /**
   * Posts a transfer in one statement with `alongside`, a data-modifying statement of the caller's
   * that returns one row when the transfer is due (the row the money is for: inserted, or moved on
   * from an expected state) and none when it is not. One round trip, atomic with that statement, and
   * the accounts stay locked only while it runs (no transaction around it holds them until a
   * commit): the hot path of the model gateway. Null when `alongside` returned no row (nothing
   * posted); a refusal (INSUFFICIENT_BALANCE) undoes `alongside` too.
   */
  async postAlongside(raw: TransferInput, alongside: SQL): Promise<PostedTransfer | null> {
    checkLegs(raw.legs);
    const input = { ...raw, legs: raw.legs.map((l) => shardPlatformLeg(l, raw.key)) };
    let rows: { outcome: string; transfer_id: string }[];
    try {
      const res = await this.db.execute(
        sql`with due as (${alongside}) select p.outcome, p.transfer_id from due cross join lateral ${postCall(postArgs(input, this.clock.now()))} as p`,
      );
      rows = rowsOf<{ outcome: string; transfer_id: string }>(res);
    } catch (e) {
      const short = insufficientBy(e);
      if (short !== null) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${fenCeilText(short)} 元`);
      throw e;
    }
    const [row] = rows;
    if (!row) return null;
    if (row.outcome === 'replayed') return { transferId: await this.sameAsBefore(this.db, input), replayed: true };
    return { transferId: row.transfer_id, replayed: false };
  }

  private preparedPostQuery?: ReturnType<typeof preparePost>;
  private get preparedPost() {
    return (this.preparedPostQuery ??= preparePost(this.db));
  }

  /**
   * Posts many transfers in one transaction with a handful of statements (a billing tick over
   * thousands of instances): the same rules as `post` — legs sum to zero, unique keys, accounts
   * locked in code order, spendable accounts never below zero. The caller must hold what makes the
   * keys new (a row lock on what is being charged): a key already posted fails the whole batch.
   */
  async postMany(tx: Tx, raw: TransferInput[], prelocked?: LockedAccounts): Promise<void> {
    if (!raw.length) return;
    const now = this.clock.now();
    // Each leg's account code is worked out once (a tick posts a hundred thousand transfers).
    const inputs = raw.map((t) => {
      checkLegs(t.legs);
      const legs = mergeCoded(t.legs.map((l) => shardPlatformLeg(l, t.key)));
      return { ...t, id: timeOrderedUuid(now), legs };
    });
    const refs = new Map<string, AccountRef>();
    for (const t of inputs) for (const l of t.legs) if (!refs.has(l.code)) refs.set(l.code, l.account);

    // Arrays through unnest: one short statement per chunk however many rows (and no per-row query building).
    for (const part of chunks(inputs, 5000)) {
      const res = await tx.execute(sql`insert into ledger_transfers (id, idempotency_key, kind, memo, actor_id, order_id, created_at)
        select t.id, t.key, t.kind, t.memo, t.actor, t.ord, ${now.toISOString()}::timestamptz
        from unnest(${pgArray(part.map((t) => t.id))}::uuid[], ${pgArray(part.map((t) => t.key))}::text[], ${pgArray(part.map((t) => t.kind))}::text[],
          ${pgArray(part.map((t) => t.memo ?? ''))}::text[], ${pgArray(part.map((t) => t.actorId ?? null))}::uuid[], ${pgArray(part.map((t) => t.orderId ?? null))}::text[])
          as t(id, key, kind, memo, actor, ord)
        on conflict (idempotency_key) do nothing`);
      if (rowCount(res) !== part.length) throw new AppError('IDEMPOTENCY_CONFLICT', '批量记账中有已记过的业务编号');
    }
    // Accounts the caller locked (lockFor) are not locked again; their balances are as it left them.
    const accounts = new Map(prelocked ? [...prelocked].map(([code, a]) => [code, { ...a }]) : []);
    const rest = new Map([...refs].filter(([code]) => !accounts.has(code)));
    const lockedAt = new Map<string, bigint>();
    if (rest.size) {
      for (const [code, a] of await this.lockCodes(tx, rest, now)) {
        accounts.set(code, a);
        lockedAt.set(code, a.balance);
      }
    }
    const entries: (typeof ledgerEntries.$inferInsert)[] = [];
    for (const t of inputs) {
      for (const l of t.legs) {
        const a = accounts.get(l.code)!;
        a.balance += l.amount;
        if (!a.mayGoNegative && a.balance < 0n) throw new AppError('INSUFFICIENT_BALANCE', `还差 ${fenCeilText(-a.balance)} 元`);
        entries.push({ transferId: t.id, accountId: a.id, amount: l.amount, balanceAfter: a.balance, createdAt: now });
      }
    }
    for (const part of chunks(entries, 10000)) {
      await tx.execute(sql`insert into ledger_entries (transfer_id, account_id, amount, balance_after, created_at)
        select e.t, e.a, e.amount, e.after, ${now.toISOString()}::timestamptz
        from unnest(${pgArray(part.map((e) => e.transferId))}::uuid[], ${pgArray(part.map((e) => e.accountId))}::uuid[],
          ${pgArray(part.map((e) => e.amount))}::bigint[], ${pgArray(part.map((e) => e.balanceAfter))}::bigint[]) with ordinality as e(t, a, amount, after, n)
        order by e.n`);
    }
    // Only accounts whose balance moved are written (a payer's locked but untouched gift account is not).
    const moved = [...accounts].filter(([code, a]) => a.balance !== (prelocked?.get(code)?.balance ?? lockedAt.get(code))).map(([, a]) => a);
    for (const part of chunks(moved, 10000)) {
      await tx.execute(sql`update ledger_accounts a set balance = v.balance
        from unnest(${pgArray(part.map((x) => x.id))}::uuid[], ${pgArray(part.map((x) => x.balance))}::bigint[]) as v(id, balance) where a.id = v.id`);
    }
  }

  /**
   * Locks, in code order (as ledger_post does, so the two never deadlock), the accounts that
   * transfers under these keys will touch, creating missing ones; answers their balances by code.
   * A batch that must read balances before it decides its legs locks them first with this.
   */
  async lockFor(tx: Tx, planned: { key: string; accounts: AccountRef[] }[], opts?: { ifExisting?: AccountRef[] }): Promise<LockedAccounts> {
    const refs = new Map<string, AccountRef>();
    for (const p of planned) {
      for (const a of p.accounts) {
        const sharded = shardPlatformLeg({ account: a, amount: 1n }, p.key).account;
        refs.set(accountCode(sharded), sharded);
      }
    }
    // Accounts only read (a balance to look at, no leg planned): locked in the same code order if they exist, never created.
    const readOnly = new Set<string>();
    for (const a of opts?.ifExisting ?? []) {
      const code = accountCode(a);
      if (!refs.has(code)) readOnly.add(code);
      refs.set(code, a);
    }
    return this.lockCodes(tx, refs, this.clock.now(), readOnly);
  }

  private async lockCodes(tx: Tx, refs: Map<string, AccountRef>, now: Date, readOnly?: Set<string>): Promise<LockedAccounts> {
    const codes = [...refs.keys()].sort();
    const accounts: LockedAccounts = new Map();
    const lock = async (wanted: string[]) => {
      for (const part of chunks(wanted, 10000)) {
        const rows = await tx
          .select({ id: ledgerAccounts.id, code: ledgerAccounts.code, balance: ledgerAccounts.balance, mayGoNegative: ledgerAccounts.mayGoNegative })
          .from(ledgerAccounts)
          .where(sql`${ledgerAccounts.code} = any(${pgArray(part)}::text[])`)
          .orderBy(asc(ledgerAccounts.code))
          .for('update');
        for (const r of rows) accounts.set(r.code, r);
      }
    };
    await lock(codes);
    const missing = codes.filter((c) => !accounts.has(c) && !readOnly?.has(c));
    if (missing.length) {
      // Creating an account takes no lock a transfer could be waiting on; then the new ones are locked too.
      await tx
        .insert(ledgerAccounts)
        .values(missing.map((code) => accountRow(code, refs.get(code)!, now)))
        .onConflictDoNothing();
      await lock(missing);
    }
    return accounts;
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
    const before = entries
      .map((e) => `${unsharded(e.code)}=${e.amount}`)
      .sort()
      .join(';');
    const now = mergeLegs(input.legs)
      .map((l) => `${unsharded(accountCode(l.account))}=${l.amount}`)
      .sort()
      .join(';');
    if (before !== now || prior!.kind !== input.kind) throw new AppError('IDEMPOTENCY_CONFLICT', input.key);
    return prior!.id;
  }

  /** A user's balances by kind (0 for accounts never used). */
  async balances(userId: string, exec: Executor = this.db): Promise<Record<UserAccountKind, bigint>> {
    const rows = await exec
      .select({ kind: ledgerAccounts.kind, balance: ledgerAccounts.balance })
      .from(ledgerAccounts)
      .where(eq(ledgerAccounts.userId, userId));
    const out = Object.fromEntries(USER_KINDS.map((k) => [k, 0n])) as Record<UserAccountKind, bigint>;
    for (const r of rows) out[r.kind as UserAccountKind] = r.balance;
    return out;
  }

  /** Spendable balances (cash, gift) of many users, as the transaction sees them. */
  async spendableMany(exec: Executor, userIds: string[]): Promise<Map<string, { cash: bigint; gift: bigint }>> {
    const out = new Map(userIds.map((id) => [id, { cash: 0n, gift: 0n }]));
    if (!userIds.length) return out;
    const rows = await exec
      .select({ userId: ledgerAccounts.userId, kind: ledgerAccounts.kind, balance: ledgerAccounts.balance })
      .from(ledgerAccounts)
      .where(and(inArray(ledgerAccounts.userId, userIds), inArray(ledgerAccounts.kind, ['cash', 'gift'])));
    for (const r of rows) out.get(r.userId!)![r.kind as 'cash' | 'gift'] = r.balance;
    return out;
  }

  /**
   * What a user's cash account says about money that is the user's own: `paidIn` is what gateways
   * credited (recharges and QR payments of orders, transfers of kind gateway_in), `refunded` what
   * left cash for a platform `refund` account (money sent back out) less what a failed refund put back, `consumed` the cash spent on
   * orders and post-paid charges less the cash refunds gave back (a payment refunded by 退订 or a
   * failed order is not consumed). What may be invoiced is built on these figures.
   */
  async externalCash(userId: string, exec: Executor = this.db): Promise<{ paidIn: bigint; refunded: bigint; consumed: bigint }> {
    const code = accountCode({ userId, kind: 'cash' });
    // Refunds out are rare: start from the platform's refund accounts, not from the user's many debits.
    const res = await exec.execute(sql`with cash as (select id from ledger_accounts where code = ${code})
      select
        (select coalesce(sum(e.amount), 0) from ledger_entries e join ledger_transfers t on t.id = e.transfer_id
          where e.account_id = (select id from cash) and t.kind = 'gateway_in' and e.amount > 0)::text as paid_in,
        (select coalesce(sum(-e.amount), 0) from ledger_entries e
          where e.account_id = (select id from cash) and e.transfer_id in (
            select r.transfer_id from ledger_entries r join ledger_accounts ra on ra.id = r.account_id where ra.kind = 'refund'))::text as refunded,
        (select coalesce(sum(-e.amount), 0) from ledger_entries e join ledger_transfers t on t.id = e.transfer_id
          where e.account_id = (select id from cash) and t.kind in ('order', 'usage', 'refund', 'model_hold', 'model_usage'))::text as consumed`);
    const [row] = rowsOf<{ paid_in: string; refunded: string; consumed: string }>(res);
    return { paidIn: BigInt(row?.paid_in ?? '0'), refunded: BigInt(row?.refunded ?? '0'), consumed: BigInt(row?.consumed ?? '0') };
  }

  /**
   * The statement of one of a user's accounts, newest first: every entry is a row of its own,
   * except post-paid charges (transfers of kind usage), which are rolled up per instance and Beijing
   * hour — a tick a minute would otherwise make sixty rows an hour, most of them under a fen. Paging
   * counts rows as shown (a roll-up is one row); `statementGroup` lists the entries under one.
   */
  async statement(userId: string, kind: UserAccountKind, paging: { page: number; pageSize: number }) {
    const rows = statementRows(accountCode({ userId, kind }));
    return this.statementPage(
      sql`with r as (${rows}) select count(distinct coalesce(grp, id::text))::int as total from r`,
      sql`with r as (${rows})
      select max(id) as id, sum(amount)::text as amount, count(*)::int as entries, grp,
        (array_agg(balance_after order by id desc))[1]::text as balance_after,
        max(created_at) as created_at, min(kind) as kind, max(order_id) as order_id,
        (array_agg(memo order by run desc, id desc))[1] as memo
      from r group by coalesce(grp, id::text), grp
      order by max(id) desc limit ${paging.pageSize} offset ${(paging.page - 1) * paging.pageSize}`,
      paging,
    );
  }

  /** The ledger entries under one roll-up row of `statement` (its `group`), newest first. */
  async statementGroup(userId: string, kind: UserAccountKind, group: string, paging: { page: number; pageSize: number }) {
    const rows = statementRows(accountCode({ userId, kind }));
    return this.statementPage(
      sql`with r as (${rows}) select count(*)::int as total from r where grp = ${group}`,
      sql`with r as (${rows})
      select id, amount::text as amount, 1 as entries, null as grp, balance_after::text as balance_after, created_at, kind, order_id, memo
      from r where grp = ${group}
      order by id desc limit ${paging.pageSize} offset ${(paging.page - 1) * paging.pageSize}`,
      paging,
    );
  }

  /** One page of statement rows (`page`) and how many rows there are in all (`counted`). */
  private async statementPage(counted: SQL, page: SQL, paging: { page: number; pageSize: number }) {
    const [count] = rowsOf<{ total: number }>(await this.db.execute(counted));
    const rows = rowsOf<StatementSqlRow>(await this.db.execute(page));
    return { items: rows.map(statementItem), total: Number(count?.total ?? 0), ...paging };
  }

  /**
   * The transfers of one order of `kind` (usage: its post-paid charges), oldest first, each with
   * what it took from the payer's spendable accounts (gift credit and cash): what its bill is built from.
   */
  async orderCharges(userId: string, orderUid: string, kind: TransferKind, exec: Executor = this.db) {
    const res = await exec.execute(sql`select t.id, t.idempotency_key as key, t.memo, t.created_at, (-sum(e.amount))::text as paid
      from ledger_transfers t
        join ledger_entries e on e.transfer_id = t.id
        join ledger_accounts a on a.id = e.account_id
      where t.order_id = ${orderUid} and t.kind = ${kind} and a.user_id = ${userId} and a.kind in ('cash', 'gift')
      group by t.id, t.idempotency_key, t.memo, t.created_at
      order by t.created_at, t.id`);
    return rowsOf<{ id: string; key: string; memo: string; created_at: string | Date; paid: string }>(res).map((r) => ({
      transferId: r.id,
      key: r.key,
      memo: r.memo,
      createdAt: new Date(r.created_at),
      paid: BigInt(r.paid),
    }));
  }

  /**
   * What a user paid, per transfer, for transfers whose key starts with `prefix` (e.g. `disk:` —
   * the daily data-disk charges): amount is what left the user's spendable accounts.
   */
  async chargesByKeyPrefix(userId: string, prefix: string | string[], paging: { page: number; pageSize: number }) {
    // Several prefixes: a charge under any of them (a child's own instances, `disk:<id>:` each).
    const like = (p: string) => sql`${ledgerTransfers.idempotencyKey} like ${`${p.replace(/[\\%_]/g, '\\$&')}%`}`;
    const prefixes = typeof prefix === 'string' ? [prefix] : prefix;
    const mine = and(eq(ledgerAccounts.userId, userId), inArray(ledgerAccounts.kind, ['cash', 'gift']), or(...prefixes.map(like)) ?? sql`false`);
    const base = this.db
      .select({
        transferId: ledgerTransfers.id,
        key: ledgerTransfers.idempotencyKey,
        memo: ledgerTransfers.memo,
        createdAt: ledgerTransfers.createdAt,
        paid: sql<string>`-sum(${ledgerEntries.amount})`.as('paid'),
      })
      .from(ledgerEntries)
      .innerJoin(ledgerAccounts, eq(ledgerAccounts.id, ledgerEntries.accountId))
      .innerJoin(ledgerTransfers, eq(ledgerTransfers.id, ledgerEntries.transferId))
      .where(mine)
      .groupBy(ledgerTransfers.id)
      .as('charges');
    const [{ total } = { total: 0 }] = await this.db.select({ total: sql<number>`count(*)::int` }).from(base);
    const rows = await this.db
      .select()
      .from(base)
      .orderBy(desc(base.createdAt), desc(base.key))
      .limit(paging.pageSize)
      .offset((paging.page - 1) * paging.pageSize);
    return { items: rows.map((r) => ({ ...r, paid: BigInt(r.paid) })), total, ...paging };
  }
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

/** mergeLegs, each leg with its account code. */
function mergeCoded(legs: Leg[]): (Leg & { code: string })[] {
  const net = new Map<string, Leg & { code: string }>();
  for (const l of legs) {
    const code = accountCode(l.account);
    const prior = net.get(code);
    if (prior) prior.amount += l.amount;
    else net.set(code, { account: l.account, amount: l.amount, code });
  }
  return [...net.values()].filter((l) => l.amount !== 0n);
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

/**
 * A version 7 UUID (RFC 9562): the time in milliseconds first, then random bits. Transfers posted
 * together get ids that sort together, so a batch's rows go to the right-hand edge of the
 * transfer-id indexes (ledger_transfers' key, ledger_entries' transfer_id) instead of all over them.
 */
export function timeOrderedUuid(at: Date): string {
  const ms = at.getTime().toString(16).padStart(12, '0');
  const r = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: keep its random bits and variant
  return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${r.slice(15)}`;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A new account as ledger_post would create it: platform accounts may go negative, users' may not. */
function accountRow(code: string, ref: AccountRef, now: Date): typeof ledgerAccounts.$inferInsert {
  const user = 'userId' in ref;
  return { id: randomUUID(), code, userId: user ? ref.userId : null, kind: user ? ref.kind : ref.platform, mayGoNegative: !user, balance: 0n, createdAt: now };
}

/**
 * The entries of one account with the transfer each belongs to and, for post-paid charges, the
 * roll-up it falls in: the instance (the uuid in the charge's key: usage:, disk:, arrears:,
 * disk-resize:…) and the Beijing hour, `<instance>@YYYYMMDDHH`. Other entries have none.
 */
function statementRows(code: string) {
  return sql`select e.id, e.amount, e.balance_after, e.created_at, t.kind, t.memo, t.order_id,
      t.idempotency_key like 'usage:%' as run,
      case when t.kind = 'usage' then
        coalesce(substring(t.idempotency_key from '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'), t.id::text)
        || '@' || to_char((e.created_at at time zone 'UTC') + interval '8 hours', 'YYYYMMDDHH24')
      end as grp
    from ledger_entries e join ledger_transfers t on t.id = e.transfer_id
    where e.account_id = (select id from ledger_accounts where code = ${code})`;
}

interface StatementSqlRow {
  id: string | number;
  amount: string;
  entries: number;
  grp: string | null;
  balance_after: string;
  created_at: string | Date;
  kind: string;
  order_id: string | null;
  memo: string;
}

/** A statement row as the routes show it; a roll-up's period is its Beijing hour. */
function statementItem(r: StatementSqlRow) {
  const hour = r.grp ? /@(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(r.grp) : null;
  const periodStart = hour ? new Date(Date.UTC(+hour[1]!, +hour[2]! - 1, +hour[3]!, +hour[4]!) - 8 * 3_600_000) : null;
  return {
    id: Number(r.id),
    amount: BigInt(r.amount),
    balanceAfter: BigInt(r.balance_after),
    createdAt: new Date(r.created_at),
    kind: r.kind,
    memo: r.memo,
    orderId: r.order_id,
    group: r.grp,
    entries: Number(r.entries),
    periodStart,
  };
}
