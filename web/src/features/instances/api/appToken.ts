import { queryOptions } from '@tanstack/react-query';
import { API, type AppToken } from '@console/contract';
import { api } from '../../../api/client';

/** The API token of a ComfyUI instance: what programs reach its ComfyUI with. */
export const APP_TOKEN_KEYS = {
  one: (instanceId: string) => ['instances', 'appToken', instanceId] as const,
};

export const appTokenApi = {
  get: (id: string, signal?: AbortSignal) => api.get<AppToken>(API.instanceAppToken, { id }, { signal }),
  issue: (id: string, renew: boolean) =>
    api.post<AppToken>(API.instanceAppToken, { id }, { successMessage: renew ? '已生成新令牌，旧令牌已失效' : '已生成 API 令牌' }),
  revoke: (id: string) => api.delete<AppToken>(API.instanceAppToken, { id }, { successMessage: 'API 令牌已吊销' }),
};

export const appTokenQueries = {
  one: (instanceId: string) => queryOptions({ queryKey: APP_TOKEN_KEYS.one(instanceId), queryFn: ({ signal }) => appTokenApi.get(instanceId, signal) }),
};
