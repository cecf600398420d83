/**
 * The ComfyUI area (/comfyui): the account's workflows, a workflow's quote, and its runs. A run is a
 * generation task (kind=workflow): it is listed, cancelled and its pictures served by the generation
 * API (diffusion.ts), and they land in the same gallery.
 */
import { useQuery, useQueryClient, type QueryClient, queryOptions } from '@tanstack/react-query';
import { API, type ComfyGraph, type ComfyQuote, type ComfyWorkflow, type DiffusionTask, type PageOf, type comfyWorkflowSchema } from '@console/contract';
import { usePagedQuery } from '../../../components/PagedTable';
import { BILLING_KEYS } from '../../../api/billing';
import { api } from '../../../api/client';
import { DIFFUSION_KEYS, type DiffusionTaskPage } from '../../diffusion';

export type ComfyWorkflowPage = PageOf<typeof comfyWorkflowSchema>;
export type ComfyRunRequest = { workflowId: string; requestId: string };

export const COMFY_KEYS = {
  all: ['comfyui'] as const,
  workflows: ['comfyui', 'workflows'] as const,
  workflowList: (page: number, pageSize: number) => ['comfyui', 'workflows', 'list', page, pageSize] as const,
  workflow: (id: string) => ['comfyui', 'workflows', 'one', id] as const,
  quote: (graph: ComfyGraph | null) => ['comfyui', 'quote', graph] as const,
  runs: ['comfyui', 'runs'] as const,
  runList: (page: number, pageSize: number) => ['comfyui', 'runs', page, pageSize] as const,
};

export const comfyApi = {
  workflows: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<ComfyWorkflowPage>(API.comfyWorkflows, q, { signal }),
  workflow: (id: string, signal?: AbortSignal) => api.get<ComfyWorkflow>(API.comfyWorkflow, { id }, { signal }),
  create: (body: { name: string; graph: ComfyGraph }) => api.post<ComfyWorkflow>(API.comfyWorkflows, body),
  rename: (id: string, name: string) => api.put<ComfyWorkflow>(API.comfyWorkflow, { id, name }, { successMessage: '已重命名' }),
  saveGraph: (id: string, graph: ComfyGraph) => api.put<ComfyWorkflow>(API.comfyWorkflow, { id, graph }, { successMessage: '工作流已保存' }),
  remove: (id: string) => api.delete<{ ok: true }>(API.comfyWorkflow, { id }, { successMessage: '工作流已删除' }),
  /** Silent: the editor shows why a quote failed where the price would be. */
  quote: (graph: ComfyGraph, signal?: AbortSignal) => api.post<ComfyQuote>(API.comfyQuote, { graph }, { signal, silent: true }),
  /** Silent: the editor answers 余额不足 with a way to recharge and hands the rest to the request layer. */
  run: (body: ComfyRunRequest) => api.post<DiffusionTask>(API.comfyRuns, body, { silent: true }),
  /** The runs are the generation tasks of kind workflow, newest first. */
  runs: (q: { page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<DiffusionTaskPage>(API.sdDiffusionTasks, { ...q, kind: 'workflow' }, { signal }),
};

/** There is no event stream for runs: while one is queued or running the list is asked for this often. */
export const RUN_POLL_MS = 1_500;
const isTaskActive = (status: DiffusionTask['status']) => status === 'queued' || status === 'running';

export const RUN_PAGE_SIZES: readonly number[] = [10, 20, 50];

export function useComfyWorkflow(id: string | null) {
  return useQuery({ ...comfyQueries.workflow(id), enabled: id !== null });
}

/** A saved workflow (new name, new graph): its detail and every list page show it. */
export function storeWorkflow(queryClient: QueryClient, workflow: ComfyWorkflow): void {
  queryClient.setQueryData(COMFY_KEYS.workflow(workflow.id), workflow);
  void queryClient.invalidateQueries({ queryKey: [...COMFY_KEYS.workflows, 'list'] });
}

/** A run that ended or made an image: the gallery shows it; an end settles the money. */
function spreadRunProgress(queryClient: QueryClient, before: DiffusionTaskPage | undefined, fresh: DiffusionTaskPage): void {
  if (!before) return;
  const was = new Map(before.items.map((t) => [t.id, t]));
  const ended = fresh.items.some((t) => !isTaskActive(t.status) && was.has(t.id) && isTaskActive(was.get(t.id)!.status));
  const made = fresh.items.some((t) => t.done > (was.get(t.id)?.done ?? t.done));
  if (ended || made) void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.images });
  if (ended) afterRunEnded(queryClient);
}

/**
 * What the end of a run changes besides the run list (which is being fetched: invalidating it from
 * its own fetch would cancel that fetch and start it again, for ever): 生成队列, the balance, the statements.
 */
function afterRunEnded(queryClient: QueryClient): void {
  void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.tasks });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.statements });
}

/** A run submitted or cancelled: the run list too. */
export function afterRunChanged(queryClient: QueryClient): void {
  void queryClient.invalidateQueries({ queryKey: COMFY_KEYS.runs });
  afterRunEnded(queryClient);
}

/** 运行记录: one page of runs, asked for every 1.5 s while one on it is queued or running (not after a failed refresh). */
export function useComfyRuns(paging: { page: number; pageSize: number }) {
  const queryClient = useQueryClient();
  const key = COMFY_KEYS.runList(paging.page, paging.pageSize);
  return usePagedQuery({
    queryKey: key,
    queryFn: async (signal) => {
      const before = queryClient.getQueryData<DiffusionTaskPage>(key);
      const fresh = await comfyApi.runs(paging, signal);
      spreadRunProgress(queryClient, before, fresh);
      return fresh;
    },
    refetchInterval: (data, failed) => (!failed && data?.items.some((t) => isTaskActive(t.status)) ? RUN_POLL_MS : false),
  });
}

/** One factory per endpoint read by the pages: key and request travel together. */
export const comfyQueries = {
  /** Asked only while `enabled: graph !== null`: the key holds null, the request never does. */
  quote: (graph: ComfyGraph | null) => queryOptions({ queryKey: COMFY_KEYS.quote(graph), queryFn: ({ signal }) => comfyApi.quote(graph!, signal) }),
  /** Asked only while `enabled: id !== null`. */
  workflow: (id: string | null) => queryOptions({ queryKey: COMFY_KEYS.workflow(id ?? ''), queryFn: ({ signal }) => comfyApi.workflow(id!, signal) }),
};
