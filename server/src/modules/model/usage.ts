/**
 * What the model gateway's calls add up to: the stats page, the call log, the model bill of a day,
 * the hourly rollups and the call log's retention.
 *
 * - `model_calls` holds one row per call for MODEL_CALL_RETENTION_DAYS; `model_usage_hourly` holds
 *   their sums per hour (the hour a call began), payer, key and model, for good.
 * - The rollup job recomputes every hour from SETTLE_MARGIN before its last run on (delete and
 *   insert, under an advisory lock), then records how far it got (`rolled_until`). A call settles at
 *   most about two hours after it began (a stream, then the stale-hold sweeper), so an hour older than
 *   `rolled_until - SETTLE_MARGIN` no longer changes and the stats read it from the rollups; newer
 *   hours are summed from the calls themselves, so the stats are exact up to the last call.
 * - Retention deletes only calls whose hours are already final in the rollups.
 *
 * Who sees what: an account sees the calls it pays for (its children's included); a child account
 * sees its own.
 */
import { sql, type SQL } from 'drizzle-orm';
import {
  beijingDay,
  beijingDayStart,
  MODEL_CALL_STATUSES,
  type ModelCallPage,
  type ModelStats,
  type ModelStatsQuery,
  type ModelUsageSum,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { rowCount, rowsOf } from '../../db/results.js';
import { PLAYGROUND_KEY_NAME } from './keys.js';

const HOUR_MS = 3600_000;
const DAY_MS = 86400_000;
/** How long after it began a call may still change (settle or sweep). */
export const SETTLE_MARGIN_MS = 3 * HOUR_MS;
const DEFAULT_RANGE_DAYS = 7;
const PURGE_BATCH = 5000;

interface Viewer {
  id: string;
  isChild: boolean;
}

interface SumRow {
  requests: string;
  failed: string;
  prompt: string;
  completion: string;
  package: string;
  cost: string;
}

export class ModelUsage {
  constructor(private readonly deps: { db: Db; clock: Clock; retentionDays: number }) {}

  get retentionDays() {
    return this.deps.retentionDays;
  }

  /** The rollup job: recomputes the hours that may still have changed; returns the rows written. */
  async rollup(): Promise<number> {
    const now = this.deps.clock.now().getTime();
    const currentHour = new Date(Math.floor(now / HOUR_MS) * HOUR_MS);
    return this.deps.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('model-usage-rollup', 0))`);
      const rolled = await this.rolledUntil(tx);
      const from = new Date(Math.min(rolled?.getTime() ?? -Infinity, currentHour.getTime()) - SETTLE_MARGIN_MS);
      const since = Number.isFinite(from.getTime()) ? from : new Date(0);
      await tx.execute(sql`delete from model_usage_hourly where hour >= ${since.toISOString()}::timestamptz`);
      const res = await tx.execute(sql`insert into model_usage_hourly
          (hour, payer_id, user_id, key_id, model, requests, failed, prompt_tokens, completion_tokens, package_tokens, cost)
        select ${hourOf(sql`created_at`)}, payer_id, user_id, key_id, model, count(*), count(*) filter (where status = 'error'),
          sum(prompt_tokens), sum(completion_tokens), sum(package_tokens), sum(cost)
        from model_calls where created_at >= ${since.toISOString()}::timestamptz and status <> 'open'
        group by 1, 2, 3, 4, 5`);
      await tx.execute(sql`insert into model_rollup_state (id, rolled_until) values (1, ${currentHour.toISOString()}::timestamptz)
        on conflict (id) do update set rolled_until = excluded.rolled_until`);
      return rowCount(res);
    });
  }

  /** The retention job: deletes calls past their retention whose hours are final in the rollups. */
  async purge(): Promise<number> {
    const rolled = await this.rolledUntil(this.deps.db);
    if (!rolled) return 0;
    const cutoff = Math.min(this.deps.clock.now().getTime() - this.deps.retentionDays * DAY_MS, rolled.getTime() - SETTLE_MARGIN_MS);
    let deleted = 0;
    for (;;) {
      const res = await this.deps.db.execute(sql`delete from model_calls where id in (
        select id from model_calls where created_at < ${new Date(cutoff).toISOString()}::timestamptz and status <> 'open' limit ${PURGE_BATCH})`);
      const n = rowCount(res);
      deleted += n;
      if (n < PURGE_BATCH) return deleted;
    }
  }

  /** Sums per Beijing day, per model and per key over a range of days (default the last 7). */
  async stats(viewer: Viewer, q: ModelStatsQuery): Promise<ModelStats> {
    const today = beijingDay(this.deps.clock.now().getTime());
    const to = q.to ?? today;
    const from = q.from ?? beijingDay(dayStart(to) - (DEFAULT_RANGE_DAYS - 1) * DAY_MS);
    const start = new Date(dayStart(from));
    const end = new Date(dayStart(to) + DAY_MS);
    const filter = this.filter(q, 'u');
    const rows = rowsOf<SumRow & { day: string | null; model: string | null; key_id: string | null; key_name: string | null; grp: number }>(
      await this.deps.db.execute(sql`with u as (${await this.usageRows(viewer, start, end)})
        select to_char((u.hour at time zone 'UTC') + interval '8 hours', 'YYYY-MM-DD') as day, u.model, u.key_id::text as key_id, min(k.name) as key_name, bool_or(k.playground) as playground,
          grouping(to_char((u.hour at time zone 'UTC') + interval '8 hours', 'YYYY-MM-DD'), u.model, u.key_id) as grp, ${sums(sql`u`)}
        from u left join model_api_keys k on k.id = u.key_id
        where ${filter}
        group by grouping sets ((to_char((u.hour at time zone 'UTC') + interval '8 hours', 'YYYY-MM-DD')), (u.model), (u.key_id), ())`),
    );
    const total = rows.find((r) => r.grp === 7);
    const byDay = new Map(rows.filter((r) => r.grp === 3).map((r) => [r.day!, sumOf(r)]));
    const days: ModelStats['days'] = [];
    for (let t = start.getTime(); t < end.getTime(); t += DAY_MS) {
      const date = beijingDay(t);
      days.push({ date, ...(byDay.get(date) ?? emptySum()) });
    }
    const byCost = (a: ModelUsageSum, b: ModelUsageSum) => Number(BigInt(b.cost) - BigInt(a.cost)) || b.requests - a.requests;
    return {
      from,
      to,
      total: total ? sumOf(total) : emptySum(),
      days,
      models: rows
        .filter((r) => r.grp === 5)
        .map((r) => ({ model: r.model!, ...sumOf(r) }))
        .sort(byCost),
      keys: rows
        .filter((r) => r.grp === 6)
        .map((r) => {
          const playground = (r as { playground?: boolean }).playground === true;
          return { keyId: playground ? 'playground' : r.key_id!, keyName: playground ? PLAYGROUND_KEY_NAME : (r.key_name ?? '已删除的密钥'), ...sumOf(r) };
        })
        .sort(byCost),
    };
  }

  /** The call log: one Beijing day (the model bill of that day) or every kept call, newest first. */
  async calls(
    viewer: Viewer,
    q: { page: number; pageSize: number; date?: string | undefined; model?: string | undefined; keyId?: string | undefined },
  ): Promise<ModelCallPage> {
    const scope = this.scope(viewer, sql`c`);
    const day = q.date
      ? sql`and c.created_at >= ${new Date(dayStart(q.date)).toISOString()}::timestamptz and c.created_at < ${new Date(dayStart(q.date) + DAY_MS).toISOString()}::timestamptz`
      : sql``;
    const where = sql`${scope} ${day} and ${this.filter(q, 'c')}`;
    const [items, totals] = await Promise.all([
      this.deps.db
        .execute(sql`select c.id, c.created_at, c.model, c.key_id::text as key_id, k.name as key_name, k.playground, c.prompt_tokens, c.completion_tokens,
          c.package_tokens, c.cost::text as cost, c.latency_ms, c.status, c.error
        from model_calls c left join model_api_keys k on k.id = c.key_id
        where ${where} order by c.created_at desc, c.id desc limit ${q.pageSize} offset ${(q.page - 1) * q.pageSize}`),
      this.deps.db.execute(sql`select count(*) as requests, count(*) filter (where c.status = 'error') as failed, coalesce(sum(c.prompt_tokens), 0) as prompt,
          coalesce(sum(c.completion_tokens), 0) as completion, coalesce(sum(c.package_tokens), 0) as package, coalesce(sum(c.cost), 0) as cost
        from model_calls c left join model_api_keys k on k.id = c.key_id where ${where}`),
    ]);
    const sums = sumOf(rowsOf<SumRow>(totals)[0]!);
    type CallRow = {
      id: string;
      created_at: Date | string;
      model: string;
      key_id: string;
      key_name: string | null;
      playground: boolean | null;
      prompt_tokens: number;
      completion_tokens: number;
      package_tokens: number;
      cost: string;
      latency_ms: number;
      status: (typeof MODEL_CALL_STATUSES)[number];
      error: string | null;
    };
    return {
      items: rowsOf<CallRow>(items).map((r) => ({
        id: r.id,
        createdAt: new Date(r.created_at).toISOString(),
        model: r.model,
        keyId: r.playground ? 'playground' : r.key_id,
        keyName: r.playground ? PLAYGROUND_KEY_NAME : (r.key_name ?? '已删除的密钥'),
        promptTokens: Number(r.prompt_tokens),
        completionTokens: Number(r.completion_tokens),
        packageTokens: Number(r.package_tokens),
        cost: String(r.cost),
        latencyMs: Number(r.latency_ms),
        status: r.status,
        error: r.error,
      })),
      total: sums.requests,
      sums,
      page: q.page,
      pageSize: q.pageSize,
      retentionDays: this.deps.retentionDays,
    };
  }

  /** The usage of a range as hourly rows: the rollups for final hours, the calls themselves after. */
  private async usageRows(viewer: Viewer, start: Date, end: Date): Promise<SQL> {
    const rolled = await this.rolledUntil(this.deps.db);
    const boundary = rolled ? new Date(rolled.getTime() - SETTLE_MARGIN_MS) : new Date(0);
    const liveFrom = new Date(Math.max(start.getTime(), boundary.getTime()));
    return sql`select hour, key_id, model, requests, failed, prompt_tokens, completion_tokens, package_tokens, cost from model_usage_hourly h
        where ${this.scope(viewer, sql`h`)} and hour >= ${start.toISOString()}::timestamptz and hour < ${end.toISOString()}::timestamptz
          and hour < ${boundary.toISOString()}::timestamptz
      union all
      select ${hourOf(sql`created_at`)}, key_id, model, 1, (status = 'error')::int, prompt_tokens, completion_tokens, package_tokens, cost from model_calls c
        where ${this.scope(viewer, sql`c`)} and created_at >= ${liveFrom.toISOString()}::timestamptz and created_at < ${end.toISOString()}::timestamptz
          and status <> 'open'`;
  }

  private scope(viewer: Viewer, table: SQL): SQL {
    return viewer.isChild ? sql`${table}.user_id = ${viewer.id}::uuid` : sql`${table}.payer_id = ${viewer.id}::uuid`;
  }

  /** The model and key filters over rows joined to their key as `k`. */
  private filter(q: { model?: string | undefined; keyId?: string | undefined }, table: 'u' | 'c'): SQL {
    const t = sql.raw(table);
    const parts: SQL[] = [sql`true`];
    if (q.model) parts.push(sql`${t}.model = ${q.model}`);
    if (q.keyId === 'playground') parts.push(sql`k.playground`);
    else if (q.keyId) parts.push(sql`${t}.key_id = ${q.keyId}::uuid`);
    return sql.join(parts, sql` and `);
  }

  private async rolledUntil(db: Pick<Db, 'execute'>): Promise<Date | null> {
    const [row] = rowsOf<{ rolled_until: Date | string }>(await db.execute(sql`select rolled_until from model_rollup_state where id = 1`));
    return row ? new Date(row.rolled_until) : null;
  }
}

/** The hour a timestamp falls in, whatever the session's time zone. */
function hourOf(column: SQL): SQL {
  return sql`to_timestamp(floor(extract(epoch from ${column}) / 3600) * 3600)`;
}

function sums(t: SQL): SQL {
  return sql`coalesce(sum(${t}.requests), 0) as requests, coalesce(sum(${t}.failed), 0) as failed, coalesce(sum(${t}.prompt_tokens), 0) as prompt,
    coalesce(sum(${t}.completion_tokens), 0) as completion, coalesce(sum(${t}.package_tokens), 0) as package, coalesce(sum(${t}.cost), 0) as cost`;
}

function sumOf(r: SumRow): ModelUsageSum {
  return {
    requests: Number(r.requests),
    failed: Number(r.failed),
    promptTokens: Number(r.prompt),
    completionTokens: Number(r.completion),
    packageTokens: Number(r.package),
    cost: String(r.cost),
  };
}

function emptySum(): ModelUsageSum {
  return { requests: 0, failed: 0, promptTokens: 0, completionTokens: 0, packageTokens: 0, cost: '0' };
}

/** The instant a Beijing day begins, in ms. */
function dayStart(day: string): number {
  return beijingDayStart(day).getTime();
}
