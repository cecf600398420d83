import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type GpuSubscription,
  type GpuSubscriptionList,
  type GpuSubscriptionRequest,
  type NoticeMessage,
  type NoticeMessagePage,
  type NoticePreferences,
  type NoticePreferencesUpdate,
  type NoticeUnread,
} from '@console/contract';
import { api } from './client';

/**
 * Query keys of the notices: the header bell's unread count and the message pages share the
 * `messages` prefix, so marking read refreshes both.
 */
export const NOTICE_KEYS = {
  messages: ['messages'] as const,
  unread: (token: string | null) => ['messages', 'unread', token] as const,
  list: (unread: boolean, page: number, pageSize: number) => ['messages', 'list', unread, page, pageSize] as const,
  preferences: ['noticePreferences'] as const,
  subscriptions: ['gpuSubscriptions'] as const,
};

export const noticesApi = {
  /** The header bell asks quietly: a failure shows no count, not a toast on every page. */
  unread: (signal?: AbortSignal) => api.get<NoticeUnread>(API.messagesUnread, undefined, { signal, silent: true }),
  list: (q: { page: number; pageSize: number; unread?: boolean }, signal?: AbortSignal) =>
    api.get<NoticeMessagePage>(API.messages, { page: q.page, pageSize: q.pageSize, ...(q.unread ? { unread: 'true' } : {}) }, { signal, silent: true }),
  markRead: (id: string) => api.post<NoticeMessage>(API.messageRead, { id }),
  markAllRead: () => api.post<{ count: number }>(API.messagesReadAll, undefined, { successMessage: '已全部标记为已读' }),
  preferences: (signal?: AbortSignal) => api.get<NoticePreferences>(API.noticePreferences, undefined, { signal, silent: true }),
  setPreferences: (body: NoticePreferencesUpdate) => api.put<NoticePreferences>(API.noticePreferences, body, { successMessage: '通知设置已保存' }),
  subscriptions: (signal?: AbortSignal) => api.get<GpuSubscriptionList>(API.gpuSubscriptions, undefined, { signal, silent: true }),
  subscribe: (body: GpuSubscriptionRequest) =>
    api.post<GpuSubscription>(API.gpuSubscriptions, body, { successMessage: '已订阅：有空闲卡时将通过站内信（及您设置的短信 / 邮件）通知您一次' }),
  unsubscribe: (id: string) => api.delete<{ ok: true }>(API.gpuSubscription, { id }, { successMessage: '已取消订阅' }),
};

/** One factory per endpoint read by the pages: key and request travel together. */
export const noticeQueries = {
  unread: (token: string | null) => queryOptions({ queryKey: NOTICE_KEYS.unread(token), queryFn: ({ signal }) => noticesApi.unread(signal) }),
  preferences: () => queryOptions({ queryKey: NOTICE_KEYS.preferences, queryFn: ({ signal }) => noticesApi.preferences(signal) }),
  subscriptions: () => queryOptions({ queryKey: NOTICE_KEYS.subscriptions, queryFn: ({ signal }) => noticesApi.subscriptions(signal) }),
};
