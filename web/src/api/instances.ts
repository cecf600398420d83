import {
  API,
  formatFilterBy,
  type Instance,
  type InstanceAction,
  type InstanceCategory,
  type InstanceOperation,
  type InstanceStatus,
  type Order,
  type Quote,
  type RenewInstanceRequest,
  type instanceOperationPageSchema,
  type instancePageSchema,
} from '@console/contract';
// Type-only: the contract exports these schemas but not their inferred types.
import type { z } from 'zod';
import { api } from './client';

export type { Instance, InstanceAction, InstanceOperation };
export type InstancePage = z.infer<typeof instancePageSchema>;
export type OperationPage = z.infer<typeof instanceOperationPageSchema>;

/** What an instance list is narrowed by: category and status travel in `filterBy`, the search on its own. */
export interface InstanceFilter {
  category: InstanceCategory;
  status?: InstanceStatus;
  search?: string;
}

/** What the operation log is narrowed by (one `filterBy` string). */
export interface OperationFilter {
  instance?: string;
  actor?: string;
  category?: InstanceCategory;
}

/**
 * Query keys. An action changes the instance, every list it appears in and the operation log, so
 * `all` and `logsAll` are what a mutation invalidates.
 */
export const INSTANCE_KEYS = {
  all: ['instances'] as const,
  list: (filter: InstanceFilter, page: number, pageSize: number) => ['instances', 'list', filter, page, pageSize] as const,
  one: (id: string) => ['instances', 'one', id] as const,
  logsAll: ['operationLogs'] as const,
  logs: (filter: OperationFilter, page: number, pageSize: number) => ['operationLogs', filter, page, pageSize] as const,
  renewPrice: (id: string, duration: number) => ['instances', 'renewPrice', id, duration] as const,
};

/** `filterBy` in a fixed key order (category, status) so equal filters give equal requests. */
export function instanceFilterBy(filter: InstanceFilter): string {
  return formatFilterBy({ category: filter.category, status: filter.status });
}

export function operationFilterBy(filter: OperationFilter): string {
  return formatFilterBy({ instance: filter.instance, actor: filter.actor, category: filter.category });
}

export const instancesApi = {
  list: (q: { filter: InstanceFilter; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<InstancePage>(
      API.instances,
      { filterBy: instanceFilterBy(q.filter) || undefined, search: q.filter.search || undefined, page: q.page, pageSize: q.pageSize },
      { signal },
    ),
  /** Silent: the detail page shows "not found" and load errors itself. */
  get: (id: string, signal?: AbortSignal) => api.get<Instance>(API.instance, { id }, { signal, silent: true }),
  /**
   * Silent on failure: the caller decides how to show it (INSTANCE_GPU_BUSY offers no-card mode),
   * and hands everything else back to the request layer's reactions.
   */
  act: (id: string, action: InstanceAction) => api.post<Instance>(API.instanceAction, { id, action }, { silent: true, successMessage: true }),
  rename: (id: string, name: string) => api.put<Instance>(API.instanceName, { id, name }, { successMessage: '实例名称已修改' }),
  /** Answers the instance with the new password in `access`. */
  resetPassword: (id: string) => api.put<Instance>(API.instancePassword, { id }),
  /** Silent: the renewal dialog shows why it has no quote. */
  renewPrice: (id: string, body: RenewInstanceRequest, signal?: AbortSignal) =>
    api.post<Quote>(API.instanceRenewPrice, { id, ...body }, { signal, silent: true }),
  /** Answers an Unpaid Renew order, paid in the pay dialog. */
  renew: (id: string, duration: number) => api.post<Order>(API.instanceRenew, { id, duration }),
  logs: (q: { filter: OperationFilter; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<OperationPage>(API.operationLogs, { filterBy: operationFilterBy(q.filter) || undefined, page: q.page, pageSize: q.pageSize }, { signal }),
};
