/**
 * Watching an instance (AutoPanel, issue 30 §4): the figures of its 概览 tab (CPU, memory, GPU, disks,
 * network) over a range, and GPU 空闲自动关机 — the instance stops itself after N hours in which
 * every sample saw its GPUs below a threshold, with a notice shortly before.
 */
import { z } from 'zod';

/** The ranges the 概览 charts offer, each drawn from the finest series kept that long. */
export const METRIC_RANGES = ['1h', '24h', '7d'] as const;
export type MetricRange = (typeof METRIC_RANGES)[number];
export const MetricRangeLabel: Record<MetricRange, string> = { '1h': '1 小时', '24h': '24 小时', '7d': '7 天' };

/** GET …/instances/:id/metrics?range=1h */
export const metricsQuerySchema = z.object({
  range: z.enum(METRIC_RANGES, { error: `时间范围须为 ${METRIC_RANGES.join('、')} 之一` }).default('1h'),
});
export type MetricsQuery = z.infer<typeof metricsQuerySchema>;

/** One card at one moment (or its average over the point's step). */
export const gpuPointSchema = z.object({
  /** Busy share of the card, 0–100. */
  utilisation: z.number(),
  memoryUsedMb: z.number(),
  memoryTotalMb: z.number().nullable(),
});

/** A point of the series: a sample, or the average of the samples in its step (maxima for what must not be averaged away). */
export const metricPointSchema = z.object({
  at: z.string(),
  /** Share of the plan's cores in use, 0–100; null where the machine gives no CPU time. */
  cpuPercent: z.number().nullable(),
  memoryUsedBytes: z.number().nullable(),
  memoryLimitBytes: z.number().nullable(),
  dataDiskUsedBytes: z.number().nullable(),
  dataDiskSizeBytes: z.number().nullable(),
  systemDiskUsedBytes: z.number().nullable(),
  systemDiskSizeBytes: z.number().nullable(),
  netRxBytesPerSec: z.number().nullable(),
  netTxBytesPerSec: z.number().nullable(),
  gpus: z.array(gpuPointSchema),
});
export type MetricPoint = z.infer<typeof metricPointSchema>;

export const instanceMetricsSchema = z.object({
  instanceId: z.string(),
  range: z.enum(METRIC_RANGES),
  /** Seconds between points (15, 60 or 600). */
  stepSeconds: z.number().int(),
  from: z.string(),
  to: z.string(),
  /** The figures are the simulated fleet's made-up series, not a real machine's (模拟). */
  simulated: z.boolean(),
  /** Why there are no GPU figures although the instance has cards (null: there are, or it has none). */
  gpuUnavailable: z.string().nullable(),
  points: z.array(metricPointSchema),
});
export type InstanceMetrics = z.infer<typeof instanceMetricsSchema>;

/** The idle windows a user may choose, in hours. */
export const IDLE_STOP_HOURS = [1, 2, 4, 8, 12, 24] as const;
/** A card busy below this share in every sample of the window counts as idle. */
export const IDLE_GPU_THRESHOLD_PERCENT = 5;
/** How long before the stop the notice goes out. */
export const IDLE_STOP_NOTICE_MINUTES = 30;

/** PUT …/instances/:id/idle-stop: `hours` from IDLE_STOP_HOURS, or null to switch it off. */
export const idleStopRequestSchema = z.object({
  hours: z
    .number({ error: '小时数必须是数字' })
    .refine((h) => (IDLE_STOP_HOURS as readonly number[]).includes(h), { error: `空闲时长须为 ${IDLE_STOP_HOURS.join('、')} 小时之一` })
    .nullable()
    .describe('GPU 空闲多少小时后自动关机；null 关闭'),
});
export type IdleStopRequest = z.infer<typeof idleStopRequestSchema>;

export const idleStopSchema = z.object({
  instanceId: z.string(),
  /** null: off. */
  hours: z.number().int().nullable(),
  thresholdPercent: z.number(),
  /** Since when every sample has seen the GPUs idle (null: off, or not idle now). */
  idleSince: z.string().nullable(),
  /** When it will stop the instance if the GPUs stay idle (null: off, or not idle now). */
  stopAt: z.string().nullable(),
});
export type IdleStop = z.infer<typeof idleStopSchema>;
