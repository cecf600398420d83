import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  type BandwidthQuote,
  type ChangeBandwidthResponse,
  type ConversionQuote,
  type TransferToLongRequest,
  type Instance,
  type InstanceAction,
  type InstanceCategory,
  type InstanceStatus,
  type MigrationTarget,
  type Order,
  type PrepaidRefundQuote,
  type PrepaidRefundResult,
  type Quote,
  type RenewInstanceRequest,
  type ScheduledStopRequest,
  type InstanceOperationPage,
  type InstancePage,
} from '@console/contract';
import { api } from '../../../api/client';

/** What an instance list is narrowed by: category and status travel in `filterBy`, the search on its own. */
export interface InstanceFilter {
  category?: InstanceCategory;
  /** Instances of these applications (the compute center's AI drawing instances). */
  applications?: readonly string[];
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
  refundPrice: (id: string) => ['instances', 'refundPrice', id] as const,
  dayToMonthPrice: (id: string) => ['instances', 'dayToMonthPrice', id] as const,
  transferPrice: (id: string, cycle: string, duration: number) => ['instances', 'transferPrice', id, cycle, duration] as const,
  bandwidthPrice: (id: string, mbps: number) => ['instances', 'bandwidthPrice', id, mbps] as const,
  migrateTargets: (id: string) => ['instances', 'migrateTargets', id] as const,
};

/** `filterBy` in a fixed key order (category, status) so equal filters give equal requests. */
export function instanceFilterBy(filter: InstanceFilter): string {
  return formatFilterBy({ category: filter.category, status: filter.status, application: filter.applications?.join('|') });
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
  /** Moves a stopped instance to another host (free of charge); the server picks one unless `hostId` is given. */
  migrate: (id: string, hostId?: string) =>
    api.post<Instance>(
      API.instanceMigrate,
      { id, ...(hostId ? { hostId } : {}) },
      { successMessage: '已开始迁移，几分钟后完成；完成后实例为已关机，可直接开机' },
    ),
  /** The hosts a stopped GPU instance may move to, with their free cards now. */
  migrateTargets: (id: string, signal?: AbortSignal) => api.get<MigrationTarget[]>(API.instanceMigrateTargets, { id }, { signal }),
  rename: (id: string, name: string) => api.put<Instance>(API.instanceName, { id, name }, { successMessage: '实例名称已修改' }),
  /** Hands the instance to a child of the main account (null: back to the main account). */
  hand: (id: string, childId: string | null) =>
    api.put<Instance>(API.instanceHolder, { id, childId }, { successMessage: childId ? '实例已交给子账号管理' : '实例已收回到主账号' }),
  /** Answers the instance with the new password in `access`. */
  resetPassword: (id: string) => api.put<Instance>(API.instancePassword, { id }),
  /** Silent: the renewal dialog shows why it has no quote. */
  renewPrice: (id: string, body: RenewInstanceRequest, signal?: AbortSignal) =>
    api.post<Quote>(API.instanceRenewPrice, { id, ...body }, { signal, silent: true }),
  /** Answers an Unpaid Renew order, paid in the pay dialog. */
  renew: (id: string, duration: number) => api.post<Order>(API.instanceRenew, { id, duration }),
  /** The auto-renew switch of a prepaid instance. */
  setAutoRenew: (id: string, autoRenew: boolean) =>
    api.put<Instance>(API.instanceAutoRenew, { id, autoRenew }, { successMessage: autoRenew ? '已开启自动续费' : '已关闭自动续费' }),
  /** 定时关机: stop at a time or after some hours (replaces a pending one). */
  scheduleStop: (id: string, body: ScheduledStopRequest) => api.put<Instance>(API.instanceScheduledStop, { id, ...body }, { successMessage: '定时关机已设置' }),
  /** Cancels the pending scheduled stop. */
  cancelScheduledStop: (id: string) => api.delete<Instance>(API.instanceScheduledStop, { id }, { successMessage: '已取消定时关机' }),
  /** Silent: the 退订 dialog shows why there is no quote. */
  refundPrice: (id: string, signal?: AbortSignal) => api.get<PrepaidRefundQuote>(API.instanceRefundPrice, { id }, { signal, silent: true }),
  /** Refunds the unused time and releases the instance. */
  refund: (id: string) => api.post<PrepaidRefundResult>(API.instanceRefund, { id }),
  /** Silent: the day-to-month dialog shows why there is no quote. */
  dayToMonthPrice: (id: string, signal?: AbortSignal) => api.get<ConversionQuote>(API.instanceDayToMonthPrice, { id }, { signal, silent: true }),
  /** Answers an Unpaid DayToMonth order, paid in the pay dialog. */
  dayToMonth: (id: string) => api.post<Order>(API.instanceDayToMonth, { id }),
  /** Silent: the transfer dialog shows why there is no quote. */
  transferPrice: (id: string, body: TransferToLongRequest, signal?: AbortSignal) =>
    api.post<ConversionQuote>(API.instanceTransferToLongPrice, { id, ...body }, { signal, silent: true }),
  /** Settles the current run, then answers an Unpaid TransferToLong order. */
  transfer: (id: string, body: TransferToLongRequest) => api.post<Order>(API.instanceTransferToLong, { id, ...body }),
  /** Silent: the bandwidth dialog shows why there is no quote. */
  bandwidthPrice: (id: string, bandwidthMbps: number, signal?: AbortSignal) =>
    api.post<BandwidthQuote>(API.instanceBandwidthPrice, { id, bandwidthMbps }, { signal, silent: true }),
  /** A prepaid upgrade answers an Unpaid TrafficUpgrade order; anything else is under way already (order null). */
  changeBandwidth: (id: string, bandwidthMbps: number) => api.post<ChangeBandwidthResponse>(API.instanceBandwidth, { id, bandwidthMbps }),
  logs: (q: { filter: OperationFilter; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<InstanceOperationPage>(API.operationLogs, { filterBy: operationFilterBy(q.filter) || undefined, page: q.page, pageSize: q.pageSize }, { signal }),
};

/**
 * One factory per endpoint the pages and dialogs read: key and request travel together, so a
 * mutation invalidating by INSTANCE_KEYS reaches exactly what these load.
 */
export const instanceQueries = {
  list: (filter: InstanceFilter, page: number, pageSize: number) =>
    queryOptions({ queryKey: INSTANCE_KEYS.list(filter, page, pageSize), queryFn: ({ signal }) => instancesApi.list({ filter, page, pageSize }, signal) }),
  one: (id: string) => queryOptions({ queryKey: INSTANCE_KEYS.one(id), queryFn: ({ signal }) => instancesApi.get(id, signal) }),
  renewPrice: (id: string, duration: number) =>
    queryOptions({ queryKey: INSTANCE_KEYS.renewPrice(id, duration), queryFn: ({ signal }) => instancesApi.renewPrice(id, { duration }, signal) }),
  refundPrice: (id: string) => queryOptions({ queryKey: INSTANCE_KEYS.refundPrice(id), queryFn: ({ signal }) => instancesApi.refundPrice(id, signal) }),
  /** 日转月 (no transfer) or 转长期租用: one query for the dialog, its key following the choice. */
  conversionPrice: (id: string, transfer: TransferToLongRequest | null) =>
    queryOptions<ConversionQuote>({
      queryKey: transfer ? INSTANCE_KEYS.transferPrice(id, transfer.cycle, transfer.duration) : INSTANCE_KEYS.dayToMonthPrice(id),
      queryFn: ({ signal }) => (transfer ? instancesApi.transferPrice(id, transfer, signal) : instancesApi.dayToMonthPrice(id, signal)),
    }),
  bandwidthPrice: (id: string, mbps: number) =>
    queryOptions({ queryKey: INSTANCE_KEYS.bandwidthPrice(id, mbps), queryFn: ({ signal }) => instancesApi.bandwidthPrice(id, mbps, signal) }),
  migrateTargets: (id: string) =>
    queryOptions({ queryKey: INSTANCE_KEYS.migrateTargets(id), queryFn: ({ signal }) => instancesApi.migrateTargets(id, signal) }),
};
