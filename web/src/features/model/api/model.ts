/**
 * The model service (issue 14): the model square, API keys, and (added by their pages) the usage
 * stats, the call log and the online experience's conversations. One section per page below; every
 * query key starts with `model` so a section invalidates only its own prefix.
 */
import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  type ApiKey,
  type ApiKeyCreateRequest,
  type ApiKeyCreated,
  type ApiKeyPage,
  type ApiKeyUpdateRequest,
  type Model,
  type ModelPage,
  type ModelType,
} from '@console/contract';
import { api } from '../../../api/client';

// ---------------------------------------------------------------------------------------------
// square and keys

/** Where the OpenAI-compatible gateway answers: this console's own origin under /v1. */
export function gatewayBase(): string {
  return `${window.location.origin}/v1`;
}

/** The square's filters: each one is a filterBy pair (spec §3), the keyword its own parameter. */
export interface ModelFilters {
  keyword?: string;
  provider?: string;
  type?: ModelType;
  tag?: string;
}

/** The largest page the models endpoint serves. */
const MODELS_PAGE_MAX = 100;

export const SQUARE_KEYS = {
  models: ['model', 'models'] as const,
  list: (f: ModelFilters, page: number, pageSize: number) =>
    ['model', 'models', 'list', f.keyword ?? '', f.provider ?? '', f.type ?? '', f.tag ?? '', page, pageSize] as const,
  all: ['model', 'models', 'all'] as const,
};

export const API_KEY_KEYS = {
  keys: ['model', 'keys'] as const,
  list: (page: number, pageSize: number) => ['model', 'keys', 'list', page, pageSize] as const,
};

export const squareApi = {
  /** Silent: the square shows a failure in place of the cards. */
  models: (q: ModelFilters & { page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<ModelPage>(
      API.modelModels,
      {
        page: q.page,
        pageSize: q.pageSize,
        keyword: q.keyword?.trim() || undefined,
        filterBy: formatFilterBy({ provider: q.provider, type: q.type, tag: q.tag }) || undefined,
      },
      { signal, silent: true },
    ),
  /** Every model of the square, page after page (for pickers). Silent: the picker says it failed. */
  all: async (signal?: AbortSignal): Promise<Model[]> => {
    const models: Model[] = [];
    for (let page = 1; ; page += 1) {
      const p = await api.get<ModelPage>(API.modelModels, { page, pageSize: MODELS_PAGE_MAX }, { signal, silent: true });
      models.push(...p.items);
      if (p.items.length === 0 || models.length >= p.total) return models;
    }
  },
};

export const apiKeysApi = {
  /** Silent: the page shows why it has no list (a child account without 大模型 permission gets the server's 403). */
  list: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<ApiKeyPage>(API.modelKeys, q, { signal, silent: true }),
  create: (body: ApiKeyCreateRequest) => api.post<ApiKeyCreated>(API.modelKeys, body),
  update: (id: string, body: ApiKeyUpdateRequest, successMessage?: string) => api.put<ApiKey>(API.modelKey, { id, ...body }, { successMessage }),
  remove: (id: string) => api.delete<{ ok: true }>(API.modelKey, { id }, { successMessage: '密钥已删除，使用它的请求将被拒绝' }),
};

export const squareQueries = {
  all: () => queryOptions({ queryKey: SQUARE_KEYS.all, queryFn: ({ signal }) => squareApi.all(signal) }),
};
