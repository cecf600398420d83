import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  gpuSubscriptionIdParamsSchema,
  gpuSubscriptionListSchema,
  gpuSubscriptionRequestSchema,
  gpuSubscriptionSchema,
  noticeMessageIdParamsSchema,
  noticeMessageListQuerySchema,
  noticeMessagePageSchema,
  noticeMessageSchema,
  noticePreferencesSchema,
  noticePreferencesUpdateSchema,
  noticeReadAllSchema,
  noticeUnreadSchema,
  okSchema,
} from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { NoticeService } from './service.js';
import type { GpuSubscriptionService } from './subscriptions.js';

const tags = ['消息通知'];

export interface NoticeRoutesDeps {
  auth: AuthGuards;
  notices: NoticeService;
  gpuSubscriptions: GpuSubscriptionService;
}

/** The message center, delivery preferences and "有卡时通知我": each account's own (a child account's too). */
export async function noticeRoutes(app: FastifyInstance, deps: NoticeRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requireAuth;
  const me = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user.id;

  r.get(
    API.messages,
    {
      schema: {
        tags,
        summary: '站内信（最新在前；unread=true 只看未读）',
        querystring: noticeMessageListQuerySchema,
        response: { 200: noticeMessagePageSchema },
      },
      onRequest,
    },
    (req) => deps.notices.list(me(req), req.query),
  );
  r.get(API.messagesUnread, { schema: { tags, summary: '未读站内信数', response: { 200: noticeUnreadSchema } }, onRequest }, async (req) => ({
    count: await deps.notices.unreadCount(me(req)),
  }));
  r.post(
    API.messageRead,
    { schema: { tags, summary: '标记一条站内信已读', params: noticeMessageIdParamsSchema, response: { 200: noticeMessageSchema } }, onRequest },
    (req) => deps.notices.markRead(me(req), req.params.id),
  );
  r.post(API.messagesReadAll, { schema: { tags, summary: '全部标记已读', response: { 200: noticeReadAllSchema } }, onRequest }, async (req) => ({
    count: await deps.notices.markAllRead(me(req)),
  }));
  r.get(
    API.noticePreferences,
    { schema: { tags, summary: '各类通知的接收方式（站内信始终接收；短信、邮件可选）', response: { 200: noticePreferencesSchema } }, onRequest },
    (req) => deps.notices.preferences(me(req)),
  );
  r.put(
    API.noticePreferences,
    { schema: { tags, summary: '修改通知接收方式', body: noticePreferencesUpdateSchema, response: { 200: noticePreferencesSchema } }, onRequest },
    (req) => deps.notices.setPreferences(me(req), req.body),
  );
  r.get(
    API.gpuSubscriptions,
    { schema: { tags, summary: '「有卡时通知我」订阅（等待中的在前）', response: { 200: gpuSubscriptionListSchema } }, onRequest },
    (req) => deps.gpuSubscriptions.list(me(req)),
  );
  r.post(
    API.gpuSubscriptions,
    {
      schema: {
        tags,
        summary: '有卡时通知我：某地区某 GPU 型号单机有空闲卡时通知一次（最多 20 个等待中）',
        body: gpuSubscriptionRequestSchema,
        response: { 200: gpuSubscriptionSchema },
      },
      onRequest,
    },
    (req) => deps.gpuSubscriptions.subscribe(me(req), req.body),
  );
  r.delete(
    API.gpuSubscription,
    { schema: { tags, summary: '取消订阅', params: gpuSubscriptionIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await deps.gpuSubscriptions.cancel(me(req), req.params.id);
      return { ok: true as const };
    },
  );
}
