/**
 * The model service's usage (issue 14): the stats of a range of Beijing days, the call log and the
 * names the filters offer. The 用量统计 page and the model bill of a day (cost center) read these.
 */
import { useQuery, queryOptions } from '@tanstack/react-query';
import dayjs from 'dayjs';
import { API, formatBeijing, MODEL_DAY_BILL_ID, PAGE, type ApiKeyPage, type ModelCallPage, type ModelPage, type ModelStats } from '@console/contract';
import { usePagedQuery } from '../../../components/PagedTable';
import { api } from '../../../api/client';

/** The online experience's calls are under this key id, in the stats and in the call log. */
export const PLAYGROUND_KEY = 'playground';
export const PLAYGROUND_LABEL = '在线体验';

export interface ModelStatsFilter {
  /** Beijing days `YYYY-MM-DD`, both included. */
  from: string;
  to: string;
  model?: string;
  keyId?: string;
}

export interface ModelCallFilter {
  page: number;
  pageSize: number;
  /** One Beijing day `YYYY-MM-DD`; none: the latest calls. */
  date?: string;
  model?: string;
  keyId?: string;
}

/** A page of the call log, with the sums of every call the filter matches and how long calls are kept. */
export type ModelCallList = ModelCallPage;

/** Query keys: everything of the usage views starts with `modelUsage`, so one invalidation refreshes them all. */
export const MODEL_USAGE_KEYS = {
  all: ['modelUsage'] as const,
  stats: (f: ModelStatsFilter) => ['modelUsage', 'stats', f.from, f.to, f.model ?? '', f.keyId ?? ''] as const,
  calls: (f: ModelCallFilter) => ['modelUsage', 'calls', f.date ?? '', f.model ?? '', f.keyId ?? '', f.page, f.pageSize] as const,
  keyOptions: ['modelUsage', 'keyOptions'] as const,
  modelOptions: ['modelUsage', 'modelOptions'] as const,
};

/** Leaves out the filters that are not set, so the query string carries only what was chosen. */
function defined<T extends object>(q: T): Partial<T> {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== '')) as Partial<T>;
}

export const modelUsageApi = {
  stats: (f: ModelStatsFilter, signal?: AbortSignal) => api.get<ModelStats>(API.modelStats, defined(f), { signal }),
  calls: (f: ModelCallFilter, signal?: AbortSignal) => api.get<ModelCallPage>(API.modelCalls, defined(f), { signal }),
  /** The filters' names: every key of the account (at most API_KEY_LIMIT), silent — the filter then offers what the stats name. */
  keys: (signal?: AbortSignal) => api.get<ApiKeyPage>(API.modelKeys, { page: 1, pageSize: 100 }, { signal, silent: true }),
  models: (signal?: AbortSignal) => api.get<ModelPage>(API.modelModels, { page: 1, pageSize: 100 }, { signal, silent: true }),
};

/** One factory per endpoint read by the pages: key and request travel together. */
export const modelUsageQueries = {
  stats: (f: ModelStatsFilter) => queryOptions({ queryKey: MODEL_USAGE_KEYS.stats(f), queryFn: ({ signal }) => modelUsageApi.stats(f, signal) }),
  keys: () => queryOptions({ queryKey: MODEL_USAGE_KEYS.keyOptions, queryFn: ({ signal }) => modelUsageApi.keys(signal) }),
  models: () => queryOptions({ queryKey: MODEL_USAGE_KEYS.modelOptions, queryFn: ({ signal }) => modelUsageApi.models(signal) }),
};

export function useModelStats(f: ModelStatsFilter, enabled = true) {
  return useQuery({ ...modelUsageQueries.stats(f), enabled });
}

/** The call log, one page at a time; the rows on screen stay until the next page arrives. */
export function useModelCalls(f: ModelCallFilter) {
  return usePagedQuery({ queryKey: MODEL_USAGE_KEYS.calls(f), queryFn: (signal) => modelUsageApi.calls(f, signal) });
}

export interface NamedOption {
  value: string;
  label: string;
}

/** The key filter's options: 在线体验 first, then the account's keys by name. */
export function useModelKeyOptions() {
  return useQuery({
    ...modelUsageQueries.keys(),
    select: (page): NamedOption[] => [{ value: PLAYGROUND_KEY, label: PLAYGROUND_LABEL }, ...page.items.map((k) => ({ value: k.id, label: k.name }))],
    staleTime: 60_000,
  });
}

/** The model filter's options: every model of the square. */
export function useModelOptions() {
  return useQuery({
    ...modelUsageQueries.models(),
    select: (page): NamedOption[] => page.items.map((m) => ({ value: m.id, label: m.name === m.id ? m.id : `${m.name}（${m.id}）` })),
    staleTime: 60_000,
  });
}

// ---------------------------------------------------------------------------------------------
// Beijing days

/** Today as a Beijing calendar day, `YYYY-MM-DD`. */
export function beijingToday(now: Date = new Date()): string {
  return formatBeijing(now).slice(0, 10);
}

/** `day` moved by `days` calendar days. */
export function shiftDay(day: string, days: number): string {
  return dayjs(day).add(days, 'day').format('YYYY-MM-DD');
}

/** The last `days` Beijing days, today included. */
export function lastDays(days: number, now: Date = new Date()): { from: string; to: string } {
  const to = beijingToday(now);
  return { from: shiftDay(to, 1 - days), to };
}

/** The model bill of a Beijing day `2026-11-25`: /console/cost/bill/model-details/20261125. */
export const dayBillPath = (day: string) => PAGE.modelBillDetail.replace(':id', day.replaceAll('-', ''));

/**
 * The day a model bill id names (`20261125` → `2026-11-25`), or null when the id is no day: an order
 * number (a Token 包 order), or eight digits that are no calendar day.
 */
export function dayOfBillId(id: string): string | null {
  const m = MODEL_DAY_BILL_ID.exec(id);
  if (!m) return null;
  const day = `${m[1]}-${m[2]}-${m[3]}`;
  return dayjs(day).format('YYYY-MM-DD') === day ? day : null;
}

/** Whether an id has the form of a day bill (even a day that does not exist). */
export const looksLikeDayBill = (id: string) => MODEL_DAY_BILL_ID.test(id);
