import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  apiKeyCreateRequestSchema,
  apiKeyCreatedSchema,
  apiKeyIdParamsSchema,
  apiKeyListQuerySchema,
  apiKeyPageSchema,
  apiKeySchema,
  apiKeyUpdateRequestSchema,
  conversationIdParamsSchema,
  conversationListSchema,
  conversationSaveRequestSchema,
  conversationSchema,
  modelCallListQuerySchema,
  modelCallPageSchema,
  modelListQuerySchema,
  modelPageSchema,
  modelStatsQuerySchema,
  modelStatsSchema,
  okSchema,
} from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { ModelCatalogue } from './catalogue.js';
import type { ConversationService } from './conversations.js';
import type { ApiKeyService } from './keys.js';
import type { ModelUsage } from './usage.js';

const tags = ['大模型'];

/**
 * The model service's console API: the model square's data (public, like the other catalogue
 * lists) and the account's API keys. A child account needs usingLLM (spec §6) for every key call.
 */
export interface ModelRoutesDeps {
  auth: AuthGuards;
  models: ModelCatalogue;
  apiKeys: ApiKeyService;
  modelUsage: ModelUsage;
  conversations: ConversationService;
}

export async function modelRoutes(app: FastifyInstance, deps: ModelRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requirePermission('usingLLM');
  const me = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user;

  r.get(
    API.modelModels,
    {
      schema: {
        tags,
        summary: '模型广场：模型、提供方、上下文长度、输入/输出价格（每百万 Token，单位 0.0001 元）；filterBy 可按 provider、type、tag 筛选',
        querystring: modelListQuerySchema,
        response: { 200: modelPageSchema },
      },
    },
    (req) => deps.models.list(req.query),
  );
  r.get(
    API.modelKeys,
    {
      schema: {
        tags,
        summary: 'API 密钥列表（不含密钥原文；含最近使用时间与累计消费）',
        querystring: apiKeyListQuerySchema,
        response: { 200: apiKeyPageSchema },
      },
      onRequest,
    },
    (req) => deps.apiKeys.list(me(req).id, req.query),
  );
  r.post(
    API.modelKeys,
    {
      schema: {
        tags,
        summary: '新建 API 密钥（完整密钥只在此次返回；每个账号最多 50 个）',
        body: apiKeyCreateRequestSchema,
        response: { 200: apiKeyCreatedSchema },
      },
      onRequest,
    },
    (req) => deps.apiKeys.create(me(req), req.body),
  );
  r.put(
    API.modelKey,
    {
      schema: {
        tags,
        summary: '修改 API 密钥：名称、启用/停用、过期时间、消费上限、可用模型、IP 白名单、每分钟请求数与 Token 数上限（不传的项不变，null 为清除）',
        params: apiKeyIdParamsSchema,
        body: apiKeyUpdateRequestSchema,
        response: { 200: apiKeySchema },
      },
      onRequest,
    },
    (req) => deps.apiKeys.update(me(req).id, req.params.id, req.body),
  );
  r.delete(
    API.modelKey,
    { schema: { tags, summary: '删除 API 密钥（立即失效）', params: apiKeyIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await deps.apiKeys.remove(me(req).id, req.params.id);
      return { ok: true as const };
    },
  );

  r.get(
    API.modelStats,
    {
      schema: {
        tags,
        summary: '用量统计：按天（北京时间）、按模型、按密钥汇总请求数、Token、Token 包抵扣与消费金额；主账号含子账号的调用',
        querystring: modelStatsQuerySchema,
        response: { 200: modelStatsSchema },
      },
      onRequest,
    },
    (req) => deps.modelUsage.stats(me(req), req.query),
  );
  r.get(
    API.modelCalls,
    {
      schema: {
        tags,
        summary: '调用明细（模型账单）：可按日期、模型、密钥筛选；保留天数见 retentionDays',
        querystring: modelCallListQuerySchema,
        response: { 200: modelCallPageSchema },
      },
      onRequest,
    },
    (req) => deps.modelUsage.calls(me(req), req.query),
  );
  r.get(
    API.modelConversations,
    { schema: { tags, summary: '在线体验的会话列表（最近更新在前）', response: { 200: conversationListSchema } }, onRequest },
    (req) => deps.conversations.list(me(req).id),
  );
  r.get(
    API.modelConversation,
    { schema: { tags, summary: '一个会话的全部消息与设置', params: conversationIdParamsSchema, response: { 200: conversationSchema } }, onRequest },
    (req) => deps.conversations.get(me(req).id, req.params.id),
  );
  r.put(
    API.modelConversation,
    {
      schema: {
        tags,
        summary: '保存会话（编号由页面生成；新会话计入上限 100 个）',
        params: conversationIdParamsSchema,
        body: conversationSaveRequestSchema,
        response: { 200: conversationSchema },
      },
      onRequest,
    },
    (req) => deps.conversations.save(me(req).id, req.params.id, req.body),
  );
  r.delete(
    API.modelConversation,
    { schema: { tags, summary: '删除会话', params: conversationIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await deps.conversations.remove(me(req).id, req.params.id);
      return { ok: true as const };
    },
  );
}
