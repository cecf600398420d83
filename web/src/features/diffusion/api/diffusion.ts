/** LoRA 生图 (/sd/diffusion): the LoRAs a task may use, the quote, the tasks (polled while they run) and the gallery. */
import { useQuery, useQueryClient, type QueryClient, queryOptions } from '@tanstack/react-query';
import {
  API,
  type DiffusionParams,
  type DiffusionQuote,
  type DiffusionQuoteRequest,
  type DiffusionTask,
  type LoraOption,
  type PageOf,
  type SdBaseModelId,
  type diffusionImageSchema,
  type diffusionTaskSchema,
} from '@console/contract';
import { BASES } from '../../../api/bases';
import { BILLING_KEYS } from '../../../api/billing';
import { api } from '../../../api/client';

export type DiffusionTaskFilter = 'active' | 'done';
export type DiffusionTaskPage = PageOf<typeof diffusionTaskSchema>;
export type DiffusionImagePage = PageOf<typeof diffusionImageSchema>;
export type DiffusionSubmit = DiffusionParams & { requestId: string };

export const DIFFUSION_KEYS = {
  all: ['diffusion'] as const,
  loras: ['diffusion', 'loras'] as const,
  quote: (priced: DiffusionQuoteRequest | null) => ['diffusion', 'quote', priced] as const,
  tasks: ['diffusion', 'tasks'] as const,
  taskFilter: (status: DiffusionTaskFilter) => ['diffusion', 'tasks', status] as const,
  taskList: (status: DiffusionTaskFilter, page: number, pageSize: number) => ['diffusion', 'tasks', status, page, pageSize] as const,
  images: ['diffusion', 'images'] as const,
  imageList: (page: number, pageSize: number) => ['diffusion', 'images', page, pageSize] as const,
};

const fill = (path: string, id: string) => path.replace(':id', encodeURIComponent(id));

export const diffusionApi = {
  loras: (signal?: AbortSignal) => api.get<{ items: LoraOption[] }>(API.sdLoras, undefined, { signal }),
  /** Silent: the form shows why a quote failed where the price would be. */
  /** The price depends on the model, size, steps and count only: the same quote whatever the prompt says. */
  quote: (body: DiffusionQuoteRequest, signal?: AbortSignal) => api.post<DiffusionQuote>(API.sdDiffusionQuote, body, { signal, silent: true }),
  tasks: (q: { page: number; pageSize: number; status?: DiffusionTaskFilter; kind?: DiffusionTask['kind'] }, signal?: AbortSignal) =>
    api.get<DiffusionTaskPage>(API.sdDiffusionTasks, q, { signal }),
  /** Silent: the form answers 余额不足 with a way to recharge and hands the rest to the request layer. */
  submit: (body: DiffusionSubmit) => api.post<DiffusionTask>(API.sdDiffusionTasks, body, { silent: true }),
  get: (id: string, signal?: AbortSignal) => api.get<DiffusionTask>(API.sdDiffusionTask, { id }, { signal }),
  cancel: (id: string) => api.post<DiffusionTask>(API.sdDiffusionTaskCancel, { id }, { successMessage: '任务已取消，未生成部分的预扣金额已退回' }),
  images: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<DiffusionImagePage>(API.sdDiffusionImages, q, { signal }),
  removeImage: (id: string) => api.delete<{ ok: true }>(API.sdDiffusionImage, { id }, { successMessage: '图片已删除' }),
  /** Plain links: the session cookie authenticates reading. */
  imageUrl: (id: string) => BASES.main.url + fill(API.sdDiffusionImageFile, id),
  /** The grid's small WebP (the preview opens the full picture). */
  thumbUrl: (id: string) => `${BASES.main.url}${fill(API.sdDiffusionImageFile, id)}?thumb=1`,
  downloadUrl: (id: string) => `${BASES.main.url}${fill(API.sdDiffusionImageFile, id)}?download=1`,
};

/** The LoRAs the form offers: the account's trained ones (each saved epoch, newest first), then the public ones. */
export function useLoraOptions() {
  return useQuery(diffusionQueries.loras());
}

export const loraOptionsFor = (options: readonly LoraOption[], baseModel: SdBaseModelId) => options.filter((o) => o.baseModel === baseModel);

/** There is no event stream for tasks: the running ones are asked for this often. */
export const TASK_POLL_MS = 1_000;
/** More than the tasks an account may run at once, so every active one is on the page. */
export const ACTIVE_PAGE_SIZE = 10;
/** The recently finished tasks the queue shows under the running ones. */
export const RECENT_PAGE_SIZE = 5;

/** A task ended or an image was made: the gallery shows it; an end settles the money and moves the task to the finished list. */
function spreadProgress(queryClient: QueryClient, before: DiffusionTaskPage | undefined, fresh: DiffusionTaskPage): void {
  if (!before) return;
  const now = new Map(fresh.items.map((t) => [t.id, t]));
  const ended = before.items.some((t) => !now.has(t.id));
  const made = before.items.some((t) => (now.get(t.id)?.done ?? 0) > t.done);
  if (ended || made) void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.images });
  if (ended) afterTaskEnded(queryClient);
}

/** What a finished (or cancelled) task changes besides itself: the finished list, the balance and the statements. */
export function afterTaskEnded(queryClient: QueryClient): void {
  void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.taskFilter('done') });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.statements });
}

/** A task just submitted joins the active list at once, so its end is noticed even if it finishes before the next poll. */
export function storeSubmittedTask(queryClient: QueryClient, task: DiffusionTask): void {
  const key = DIFFUSION_KEYS.taskList('active', 1, ACTIVE_PAGE_SIZE);
  queryClient.setQueryData<DiffusionTaskPage>(key, (page) =>
    page && !page.items.some((t) => t.id === task.id) ? { ...page, items: [task, ...page.items], total: page.total + 1 } : page,
  );
  void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.tasks });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.statements });
}

/**
 * The queue: the running and queued txt2img tasks (workflow runs are followed on /comfyui), asked for every second while there are any (not after a
 * failed refresh: the user retries), and the last few finished ones.
 */
export function useDiffusionTasks() {
  const queryClient = useQueryClient();
  const activeKey = DIFFUSION_KEYS.taskList('active', 1, ACTIVE_PAGE_SIZE);
  const active = useQuery({
    queryKey: activeKey,
    queryFn: async ({ signal }) => {
      const before = queryClient.getQueryData<DiffusionTaskPage>(activeKey);
      const fresh = await diffusionApi.tasks({ page: 1, pageSize: ACTIVE_PAGE_SIZE, status: 'active', kind: 'txt2img' }, signal);
      spreadProgress(queryClient, before, fresh);
      return fresh;
    },
    refetchInterval: (q) => (q.state.status !== 'error' && q.state.data?.items.length ? TASK_POLL_MS : false),
  });
  const recent = useQuery({
    queryKey: DIFFUSION_KEYS.taskList('done', 1, RECENT_PAGE_SIZE),
    queryFn: ({ signal }) => diffusionApi.tasks({ page: 1, pageSize: RECENT_PAGE_SIZE, status: 'done', kind: 'txt2img' }, signal),
  });
  return { active, recent };
}

/** One factory per endpoint read by the pages: key and request travel together. */
export const diffusionQueries = {
  /** Asked only while `enabled: priced !== null`: the key holds null, the request never does. */
  quote: (priced: DiffusionQuoteRequest | null) =>
    queryOptions({ queryKey: DIFFUSION_KEYS.quote(priced), queryFn: ({ signal }) => diffusionApi.quote(priced!, signal) }),
  images: (page: number, pageSize: number) =>
    queryOptions({ queryKey: DIFFUSION_KEYS.imageList(page, pageSize), queryFn: ({ signal }) => diffusionApi.images({ page, pageSize }, signal) }),
  loras: () => queryOptions({ queryKey: DIFFUSION_KEYS.loras, queryFn: ({ signal }) => diffusionApi.loras(signal) }),
};
