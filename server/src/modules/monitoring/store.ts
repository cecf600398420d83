/**
 * Where the figures live: samples every 15 s, rolled up to minutes and to ten minutes, each step
 * kept as long as the range it draws and a little more (RETENTION), so that an instance's history
 * is bounded (≈ 480 + 2 880 + 1 150 rows) whatever it runs for. Every write is one statement for all
 * instances: the tick's samples in one INSERT, a roll-up as one INSERT … SELECT, pruning as one
 * DELETE per step; writing a roll-up again gives the same rows, so processes may race on it.
 */
import { and, asc, eq, gte, lt, max, sql } from 'drizzle-orm';
import type { MetricPoint, MetricRange } from '@console/contract';
import type { Db } from '../../db/client.js';
import { rowCount } from '../../db/results.js';
import type { MachineSample } from '../../drivers/compute/types.js';
import { instanceMetrics, type GpuCell } from './schema.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** How often machines are sampled: the raw step. */
export const SAMPLE_STEP_SECONDS = 15;

/** Each step and how long its rows are kept. */
export const RETENTION: Readonly<Record<number, number>> = {
  [SAMPLE_STEP_SECONDS]: 2 * HOUR_MS,
  60: 48 * HOUR_MS,
  600: 8 * 24 * HOUR_MS,
};

/** Which step each range is drawn from (the finest kept for all of it), and how long it is. */
export const RANGES: Readonly<Record<MetricRange, { stepSeconds: number; ms: number }>> = {
  '1h': { stepSeconds: SAMPLE_STEP_SECONDS, ms: HOUR_MS },
  '24h': { stepSeconds: 60, ms: 24 * HOUR_MS },
  '7d': { stepSeconds: 600, ms: 7 * 24 * HOUR_MS },
};

/** Each roll-up and the step it is made from. */
const ROLLUPS = [
  { stepSeconds: 60, from: SAMPLE_STEP_SECONDS },
  { stepSeconds: 600, from: 60 },
] as const;

/** A slot closes this long after its end before it is rolled up: a sample taken at its end may still be on its way in. */
const SETTLE_MS = 30_000;

type MetricRow = typeof instanceMetrics.$inferSelect;

/** The slot of step `stepSeconds` that `at` falls in (its start). */
export function slotOf(at: Date, stepSeconds: number): Date {
  const step = stepSeconds * 1000;
  return new Date(Math.floor(at.getTime() / step) * step);
}

/** The busiest card's utilisation in a sample; null when it has no cards (or none were read). */
export function busiestCard(sample: Pick<MachineSample, 'gpus'>): number | null {
  return sample.gpus.length ? Math.max(...sample.gpus.map((g) => g.utilisation)) : null;
}

export class MetricStore {
  constructor(private deps: { db: Db }) {}

  /** One tick's samples, all instances in one INSERT; a slot another process has written already is kept as it is. */
  async insertSamples(at: Date, samples: Map<string, MachineSample>): Promise<number> {
    if (!samples.size) return 0;
    const slot = slotOf(at, SAMPLE_STEP_SECONDS);
    const rows = [...samples].map(([instanceId, s]) => ({
      instanceId,
      stepSeconds: SAMPLE_STEP_SECONDS,
      at: slot,
      cpuPercent: s.cpuPercent,
      memoryUsedBytes: s.memoryUsedBytes,
      memoryLimitBytes: s.memoryLimitBytes,
      dataDiskUsedBytes: s.dataDiskUsedBytes,
      dataDiskSizeBytes: s.dataDiskSizeBytes,
      systemDiskUsedBytes: s.systemDiskUsedBytes,
      systemDiskSizeBytes: s.systemDiskSizeBytes,
      netRxBytesPerSec: s.netRxBytesPerSec,
      netTxBytesPerSec: s.netTxBytesPerSec,
      gpus: s.gpus.map((g): GpuCell => [g.utilisation, g.memoryUsedMb, g.memoryTotalMb]),
      gpuUtilMax: busiestCard(s),
      gpuUnavailable: s.gpuUnavailable,
      simulated: s.simulated,
    }));
    const res = await this.deps.db.insert(instanceMetrics).values(rows).onConflictDoNothing();
    return rowCount(res);
  }

  /** Rolls every closed slot not rolled up yet into minutes, then minutes into ten minutes; returns the rows written. */
  async rollup(now: Date): Promise<number> {
    let written = 0;
    for (const r of ROLLUPS) written += await this.rollupStep(now, r.stepSeconds, r.from);
    return written;
  }

  /** Deletes what each step keeps no longer; returns the rows deleted. */
  async prune(now: Date): Promise<number> {
    let deleted = 0;
    for (const [step, keep] of Object.entries(RETENTION)) {
      const res = await this.deps.db
        .delete(instanceMetrics)
        .where(and(eq(instanceMetrics.stepSeconds, Number(step)), lt(instanceMetrics.at, new Date(now.getTime() - keep))));
      deleted += rowCount(res);
    }
    return deleted;
  }

  /** The instance's points over `range` up to `now`, oldest first. */
  async series(instanceId: string, range: MetricRange, now: Date): Promise<{ stepSeconds: number; from: Date; rows: MetricRow[] }> {
    const { stepSeconds, ms } = RANGES[range];
    const from = new Date(now.getTime() - ms);
    const rows = await this.deps.db
      .select()
      .from(instanceMetrics)
      .where(and(eq(instanceMetrics.instanceId, instanceId), eq(instanceMetrics.stepSeconds, stepSeconds), gte(instanceMetrics.at, from)))
      .orderBy(asc(instanceMetrics.at));
    return { stepSeconds, from, rows };
  }

  /**
   * The slots of `stepSeconds` from the one after the last written (at most as far back as the
   * source is kept) to the last closed one, each the average of its source rows — the highest for
   * sizes and the busiest card, so that a roll-up never hides a full disk or a busy GPU.
   */
  private async rollupStep(now: Date, stepSeconds: number, fromStep: number): Promise<number> {
    const until = slotOf(new Date(now.getTime() - SETTLE_MS), stepSeconds);
    const [last] = await this.deps.db
      .select({ at: max(instanceMetrics.at) })
      .from(instanceMetrics)
      .where(eq(instanceMetrics.stepSeconds, stepSeconds));
    const oldest = now.getTime() - RETENTION[fromStep]!;
    const since = new Date(Math.max(oldest, last?.at ? last.at.getTime() + stepSeconds * 1000 : oldest));
    if (since >= until) return 0;
    const res = await this.deps.db.execute(sql`
      with src as (
        select m.*, to_timestamp(floor(extract(epoch from m.at) / ${stepSeconds}) * ${stepSeconds}) as slot
        from instance_metrics m
        where m.step_seconds = ${fromStep} and m.at >= ${since.toISOString()}::timestamptz and m.at < ${until.toISOString()}::timestamptz
      ),
      cards as (
        select src.instance_id, src.slot, c.ord,
          avg((c.v->>0)::float8) as u, avg((c.v->>1)::float8) as m, max((c.v->>2)::float8) as t
        from src cross join lateral jsonb_array_elements(src.gpus) with ordinality as c(v, ord)
        group by src.instance_id, src.slot, c.ord
      ),
      gpus as (
        select instance_id, slot, jsonb_agg(jsonb_build_array(round(u::numeric, 1), round(m::numeric), t) order by ord) as g
        from cards group by instance_id, slot
      )
      insert into instance_metrics (instance_id, step_seconds, at, cpu_percent, memory_used_bytes, memory_limit_bytes,
        data_disk_used_bytes, data_disk_size_bytes, system_disk_used_bytes, system_disk_size_bytes,
        net_rx_bytes_per_sec, net_tx_bytes_per_sec, gpus, gpu_util_max, gpu_unavailable, simulated)
      select src.instance_id, ${stepSeconds}, src.slot, avg(src.cpu_percent), round(avg(src.memory_used_bytes))::bigint, max(src.memory_limit_bytes),
        max(src.data_disk_used_bytes), max(src.data_disk_size_bytes), max(src.system_disk_used_bytes), max(src.system_disk_size_bytes),
        avg(src.net_rx_bytes_per_sec), avg(src.net_tx_bytes_per_sec), coalesce(gpus.g, '[]'::jsonb), max(src.gpu_util_max),
        max(src.gpu_unavailable), bool_or(src.simulated)
      from src left join gpus on gpus.instance_id = src.instance_id and gpus.slot = src.slot
      group by src.instance_id, src.slot, gpus.g
      on conflict (instance_id, step_seconds, at) do update set
        cpu_percent = excluded.cpu_percent, memory_used_bytes = excluded.memory_used_bytes, memory_limit_bytes = excluded.memory_limit_bytes,
        data_disk_used_bytes = excluded.data_disk_used_bytes, data_disk_size_bytes = excluded.data_disk_size_bytes,
        system_disk_used_bytes = excluded.system_disk_used_bytes, system_disk_size_bytes = excluded.system_disk_size_bytes,
        net_rx_bytes_per_sec = excluded.net_rx_bytes_per_sec, net_tx_bytes_per_sec = excluded.net_tx_bytes_per_sec,
        gpus = excluded.gpus, gpu_util_max = excluded.gpu_util_max, gpu_unavailable = excluded.gpu_unavailable, simulated = excluded.simulated`);
    return rowCount(res);
  }
}

/** A stored row as the API's point. */
export function pointOf(r: MetricRow): MetricPoint {
  return {
    at: r.at.toISOString(),
    cpuPercent: r.cpuPercent,
    memoryUsedBytes: r.memoryUsedBytes,
    memoryLimitBytes: r.memoryLimitBytes,
    dataDiskUsedBytes: r.dataDiskUsedBytes,
    dataDiskSizeBytes: r.dataDiskSizeBytes,
    systemDiskUsedBytes: r.systemDiskUsedBytes,
    systemDiskSizeBytes: r.systemDiskSizeBytes,
    netRxBytesPerSec: r.netRxBytesPerSec,
    netTxBytesPerSec: r.netTxBytesPerSec,
    gpus: r.gpus.map(([utilisation, memoryUsedMb, memoryTotalMb]) => ({ utilisation, memoryUsedMb, memoryTotalMb })),
  };
}
