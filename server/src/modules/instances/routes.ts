import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  instanceActionParamsSchema,
  instanceIdParamsSchema,
  instanceListQuerySchema,
  instanceOperationPageSchema,
  instancePageSchema,
  instanceSchema,
  operationLogQuerySchema,
  orderSchema,
  quoteSchema,
  renameInstanceRequestSchema,
  renewInstanceRequestSchema,
} from '@console/contract';
import type { AppContext } from '../../context.js';
import { currentSession } from '../../http/auth.js';

const tags = ['实例'];

export async function instanceRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = ctx.auth;
  const s = ctx.instances;

  r.get(
    API.instances,
    { schema: { tags, summary: '实例列表（filterBy：category、status、region；search：名称或 ID）', querystring: instanceListQuerySchema, response: { 200: instancePageSchema } }, onRequest: requireAuth },
    async (req) => s.list(currentSession(req).user, req.query),
  );

  r.get(
    API.instance,
    { schema: { tags, summary: '实例详情（含登录信息）', params: instanceIdParamsSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => s.get(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceAction,
    {
      schema: { tags, summary: '开机、无卡模式开机、关机、重启、释放（异步，状态随后更新）', params: instanceActionParamsSchema, response: { 200: instanceSchema } },
      onRequest: requireAuth,
    },
    async (req) => s.act(currentSession(req).user, req.params.id, req.params.action),
  );

  r.post(
    API.instanceRenewPrice,
    { schema: { tags, summary: '续费报价（与购买同一计价）', params: instanceIdParamsSchema, body: renewInstanceRequestSchema, response: { 200: quoteSchema } }, onRequest: requireAuth },
    async (req) => s.renewQuote(currentSession(req).user, req.params.id, req.body),
  );

  r.post(
    API.instanceRenew,
    { schema: { tags, summary: '续费：创建续费订单（支付后延长到期时间）', params: instanceIdParamsSchema, body: renewInstanceRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => s.renew(currentSession(req).user, req.params.id, req.body),
  );

  r.put(
    API.instanceName,
    { schema: { tags, summary: '修改实例名称', params: instanceIdParamsSchema, body: renameInstanceRequestSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => s.rename(currentSession(req).user, req.params.id, req.body.name),
  );

  r.put(
    API.instancePassword,
    { schema: { tags, summary: '重置 root 密码', params: instanceIdParamsSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => s.resetPassword(currentSession(req).user, req.params.id),
  );

  r.get(
    API.operationLogs,
    { schema: { tags, summary: '操作日志（filterBy：instance、actor、category）', querystring: operationLogQuerySchema, response: { 200: instanceOperationPageSchema } }, onRequest: requireAuth },
    async (req) => s.operations(currentSession(req).user, req.query),
  );
}
