/**
 * 算力中心 (/compute/center): the work the account's GPU time goes to right now — LoRA jobs and
 * image tasks still running. Silent: the page says itself what it could not load (a toast on top
 * would say it twice), and an account without the AI 绘图 permission is not asked at all.
 */
import { queryOptions } from '@tanstack/react-query';
import { API, type PageOf, type diffusionTaskSchema, type loraJobSchema } from '@console/contract';
import { api } from '../../../api/client';

/** More than an account may run at once (3 jobs, 3 tasks): every active one is on the page. */
const ACTIVE = { status: 'active', page: 1, pageSize: 10 } as const;

export const COMPUTE_KEYS = {
  // Under the training and diffusion lists' own keys, holding pages as those do: whatever refreshes
  // or updates those lists (a job's live progress) reaches these too.
  activeJobs: ['training', 'list', 'compute-center', 'active'] as const,
  activeTasks: ['diffusion', 'tasks', 'active', 'compute-center'] as const,
};

export const computeApi = {
  activeJobs: (signal?: AbortSignal) => api.get<PageOf<typeof loraJobSchema>>(API.sdTrainJobs, { ...ACTIVE }, { signal, silent: true }),
  activeTasks: (signal?: AbortSignal) => api.get<PageOf<typeof diffusionTaskSchema>>(API.sdDiffusionTasks, { ...ACTIVE }, { signal, silent: true }),
};

export const computeQueries = {
  activeJobs: () => queryOptions({ queryKey: COMPUTE_KEYS.activeJobs, queryFn: ({ signal }) => computeApi.activeJobs(signal) }),
  activeTasks: () => queryOptions({ queryKey: COMPUTE_KEYS.activeTasks, queryFn: ({ signal }) => computeApi.activeTasks(signal) }),
};
