import { queryOptions } from '@tanstack/react-query';
import { API, type IdleStop, type IdleStopRequest, type InstanceMetrics, type MetricRange } from '@console/contract';
import { api } from '../../../api/client';

/** How often the 1-hour charts follow new samples (the server samples every 15 s). */
export const LIVE_METRICS_MS = 15_000;

/** The 概览 figures of an instance and its GPU 空闲自动关机 (modules/monitoring on the server). */
export const MONITOR_KEYS = {
  metrics: (instanceId: string, range: MetricRange) => ['instances', 'metrics', instanceId, range] as const,
  idleStop: (instanceId: string) => ['instances', 'idleStop', instanceId] as const,
};

export const monitorApi = {
  /** Silent: the panel shows its own loading, empty and error states. */
  metrics: (id: string, range: MetricRange, signal?: AbortSignal) => api.get<InstanceMetrics>(API.instanceMetrics, { id, range }, { signal, silent: true }),
  idleStop: (id: string, signal?: AbortSignal) => api.get<IdleStop>(API.instanceIdleStop, { id }, { signal, silent: true }),
  setIdleStop: (id: string, body: IdleStopRequest) =>
    api.put<IdleStop>(
      API.instanceIdleStop,
      { id, ...body },
      { successMessage: body.hours === null ? '已关闭 GPU 空闲自动关机' : `已设置：GPU 空闲 ${body.hours} 小时后自动关机` },
    ),
};

export const monitorQueries = {
  metrics: (instanceId: string, range: MetricRange) =>
    queryOptions({
      queryKey: MONITOR_KEYS.metrics(instanceId, range),
      queryFn: ({ signal }) => monitorApi.metrics(instanceId, range, signal),
      // The last hour moves with every sample; the longer ranges by the minute at most.
      refetchInterval: range === '1h' ? LIVE_METRICS_MS : 60_000,
    }),
  idleStop: (instanceId: string) =>
    queryOptions({ queryKey: MONITOR_KEYS.idleStop(instanceId), queryFn: ({ signal }) => monitorApi.idleStop(instanceId, signal), refetchInterval: 60_000 }),
};
