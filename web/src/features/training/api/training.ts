/** LoRA training (/sd/train): a quote before start, the jobs, their live progress and files. */
import { useEffect, useState } from 'react';
import { useQuery, useQueryClient, type QueryClient, queryOptions } from '@tanstack/react-query';
import { API, isLoraJobActive, type LoraJob, type LoraParams, type LoraQuote, type PageOf, type SdBaseModelId, type loraJobSchema } from '@console/contract';
import { BASES } from '../../../api/bases';
import { BILLING_KEYS } from '../../../api/billing';
import { api } from '../../../api/client';

export type LoraJobFilter = 'active' | 'done';
export type LoraJobPage = PageOf<typeof loraJobSchema>;

export const TRAIN_KEYS = {
  all: ['training'] as const,
  lists: ['training', 'list'] as const,
  list: (page: number, pageSize: number, status?: LoraJobFilter) => ['training', 'list', page, pageSize, status ?? 'all'] as const,
  one: (id: string) => ['training', 'one', id] as const,
  quote: (request: LoraQuoteRequest | null) => ['training', 'quote', request] as const,
};

export type LoraQuoteRequest = { datasetId: string; baseModel: SdBaseModelId; params: LoraParams };
export type LoraJobStart = LoraQuoteRequest & { name: string; requestId: string };

const fill = (path: string, id: string, epoch?: number) => path.replace(':id', encodeURIComponent(id)).replace(':epoch', String(epoch ?? ''));

export const trainApi = {
  /** Silent: the form shows why a quote failed next to where the price would be. */
  quote: (body: LoraQuoteRequest, signal?: AbortSignal) => api.post<LoraQuote>(API.sdTrainQuote, body, { signal, silent: true }),
  list: (q: { page: number; pageSize: number; status?: LoraJobFilter }, signal?: AbortSignal) => api.get<LoraJobPage>(API.sdTrainJobs, q, { signal }),
  /** Silent: the confirmation dialog answers 余额不足 with a way to recharge and hands the rest to the request layer. */
  start: (body: LoraJobStart) => api.post<LoraJob>(API.sdTrainJobs, body, { silent: true }),
  get: (id: string, signal?: AbortSignal) => api.get<LoraJob>(API.sdTrainJob, { id }, { signal }),
  cancel: (id: string) => api.post<LoraJob>(API.sdTrainJobCancel, { id }, { successMessage: '任务已取消，未完成轮次的预扣金额已退回' }),
  remove: (id: string) => api.delete<{ ok: true }>(API.sdTrainJob, { id }, { successMessage: '任务已删除' }),
  /** Plain links: the session cookie authenticates reading. */
  eventsUrl: (id: string) => BASES.main.url + fill(API.sdTrainJobEvents, id),
  loraUrl: (id: string, epoch: number) => BASES.main.url + fill(API.sdTrainJobLora, id, epoch),
  sampleUrl: (id: string, epoch: number) => BASES.main.url + fill(API.sdTrainJobSample, id, epoch),
};

/** How often the job is asked for when its event stream is not available. */
export const LIVE_POLL_MS = 3_000;

/**
 * After a fresher copy of a job arrived: its row in any list page on screen follows (so the list's
 * progress moves with the detail). A new status moves the job between the 进行中 / 已结束 lists and
 * settles or returns money: those lists and the balance are fetched again.
 */
function spreadLoraJob(queryClient: QueryClient, before: LoraJob | undefined, job: LoraJob): void {
  queryClient.setQueriesData<LoraJobPage>({ queryKey: TRAIN_KEYS.lists }, (page) =>
    page ? { ...page, items: page.items.map((j) => (j.id === job.id ? job : j)) } : page,
  );
  if (before && before.status !== job.status) {
    void queryClient.invalidateQueries({ queryKey: TRAIN_KEYS.lists });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.statements });
  }
}

/** Writes a job the server pushed into the cache, where the detail and the list read it. */
export function storeLoraJob(queryClient: QueryClient, job: LoraJob): void {
  const before = queryClient.getQueryData<LoraJob>(TRAIN_KEYS.one(job.id));
  queryClient.setQueryData(TRAIN_KEYS.one(job.id), job);
  spreadLoraJob(queryClient, before, job);
}

/** One event's job, or null for a line that is not one (a comment, a keep-alive, a broken proxy). */
function parseJob(data: unknown): LoraJob | null {
  if (typeof data !== 'string') return null;
  try {
    const job = JSON.parse(data) as Partial<LoraJob> | null;
    return typeof job?.id === 'string' && typeof job.status === 'string' ? (job as LoraJob) : null;
  } catch {
    return null;
  }
}

/**
 * Follows the job's event stream (each event the whole job) into the cache while `follow`. The stream
 * ends with the job; we close it on the last status ourselves, because EventSource would otherwise
 * reconnect to a finished job forever. A failed stream is reported, and the caller polls instead.
 */
function useLoraJobEvents(id: string | null, follow: boolean, onFailed: (id: string) => void): void {
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!id || !follow) return;
    const source = new EventSource(trainApi.eventsUrl(id), { withCredentials: true });
    source.onmessage = (e: MessageEvent) => {
      const job = parseJob(e.data);
      if (!job || job.id !== id) return;
      storeLoraJob(queryClient, job);
      if (!isLoraJobActive(job.status)) source.close();
    };
    source.onerror = () => {
      source.close();
      onFailed(id);
    };
    return () => source.close();
  }, [id, follow, onFailed, queryClient]);
}

/** One job, kept current while it runs: by its event stream, or every 3 s when the stream is unavailable. */
export function useLoraJobLive(id: string | null) {
  const queryClient = useQueryClient();
  const [streamFailedFor, setStreamFailedFor] = useState<string | null>(null);
  const polling = !!id && (streamFailedFor === id || typeof EventSource === 'undefined');
  const job = useQuery({
    queryKey: TRAIN_KEYS.one(id ?? ''),
    queryFn: async ({ signal }) => {
      const before = queryClient.getQueryData<LoraJob>(TRAIN_KEYS.one(id!));
      const fresh = await trainApi.get(id!, signal);
      spreadLoraJob(queryClient, before, fresh);
      return fresh;
    },
    enabled: !!id,
    // Not after a failed refresh: the user retries (a toast every 3 s helps nobody).
    refetchInterval: (q) => (polling && q.state.status !== 'error' && q.state.data && isLoraJobActive(q.state.data.status) ? LIVE_POLL_MS : false),
  });
  const active = !!job.data && isLoraJobActive(job.data.status);
  useLoraJobEvents(id, active && !polling, setStreamFailedFor);
  return job;
}

export const trainQueries = {
  /** Asked only while `enabled: request !== null`: the key holds null, the request never does. */
  quote: (request: LoraQuoteRequest | null) => queryOptions({ queryKey: TRAIN_KEYS.quote(request), queryFn: ({ signal }) => trainApi.quote(request!, signal) }),
};
