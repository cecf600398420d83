/**
 * The ledger's invariants, checked on a live database (`npm run ledger:check`) and after every money
 * test: the ledger sums to zero, each transfer sums to zero and has entries, every cached balance
 * equals the sum of its entries and the last entry's running balance, and no spendable account is
 * below zero.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';

export interface LedgerReport {
  ok: boolean;
  problems: string[];
  accounts: number;
  transfers: number;
  entries: number;
}

async function rows<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T[]> {
  const res = (await db.execute(query)) as unknown as { rows: T[] };
  return res.rows;
}

export async function checkLedger(db: Executor): Promise<LedgerReport> {
  const problems: string[] = [];
  const [totals] = await rows<{ sum: string; entries: number; transfers: number; accounts: number }>(
    db,
    sql`select coalesce(sum(amount), 0)::text as sum, count(*)::int as entries,
          (select count(*)::int from ledger_transfers) as transfers,
          (select count(*)::int from ledger_accounts) as accounts
        from ledger_entries`,
  );
  if (totals!.sum !== '0') problems.push(`全部分录之和为 ${totals!.sum}，应为 0`);

  for (const t of await rows<{ id: string; key: string; sum: string; n: number }>(
    db,
    sql`select t.id, t.idempotency_key as key, coalesce(sum(e.amount), 0)::text as sum, count(e.id)::int as n
        from ledger_transfers t left join ledger_entries e on e.transfer_id = t.id
        group by t.id having coalesce(sum(e.amount), 0) <> 0 or count(e.id) < 2`,
  )) {
    problems.push(`转账 ${t.key} 不平：${t.n} 条分录，合计 ${t.sum}`);
  }

  for (const a of await rows<{ code: string; balance: string; sum: string; last: string | null }>(
    db,
    sql`select a.code, a.balance::text as balance, coalesce(sum(e.amount), 0)::text as sum,
          (select balance_after::text from ledger_entries l where l.account_id = a.id order by l.id desc limit 1) as last
        from ledger_accounts a left join ledger_entries e on e.account_id = a.id
        group by a.id
        having a.balance <> coalesce(sum(e.amount), 0)
           or a.balance <> coalesce((select balance_after from ledger_entries l where l.account_id = a.id order by l.id desc limit 1), 0)`,
  )) {
    problems.push(`账户 ${a.code} 余额 ${a.balance}，分录合计 ${a.sum}，最后一条分录后余额 ${a.last ?? '无'}`);
  }

  for (const a of await rows<{ code: string; balance: string }>(
    db,
    sql`select code, balance::text as balance from ledger_accounts where not may_go_negative and balance < 0`,
  )) {
    problems.push(`可用账户 ${a.code} 为负：${a.balance}`);
  }

  for (const e of await rows<{ id: string; what: string }>(
    db,
    sql`select e.id::text as id, case when t.id is null then '转账' else '账户' end as what
        from ledger_entries e left join ledger_transfers t on t.id = e.transfer_id left join ledger_accounts a on a.id = e.account_id
        where t.id is null or a.id is null limit 20`,
  )) {
    problems.push(`分录 ${e.id} 找不到所属${e.what}`);
  }

  return { ok: problems.length === 0, problems, accounts: totals!.accounts, transfers: totals!.transfers, entries: totals!.entries };
}
