import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, idleStopRequestSchema, idleStopSchema, instanceIdParamsSchema, instanceMetricsSchema, metricsQuerySchema } from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { IdleStops } from './idle-stop.js';
import type { Monitoring } from './monitoring.js';

const tags = ['实例监控'];

export async function monitoringRoutes(app: FastifyInstance, deps: { auth: AuthGuards; monitoring: Monitoring; idleStops: IdleStops }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = deps.auth;

  r.get(
    API.instanceMetrics,
    {
      schema: {
        tags,
        summary: '实例监控：CPU、内存、GPU 使用率与显存、磁盘、网络（range：1h 每 15 秒、24h 每分钟、7d 每 10 分钟一个点）',
        params: instanceIdParamsSchema,
        querystring: metricsQuerySchema,
        response: { 200: instanceMetricsSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.monitoring.series(currentSession(req).user, req.params.id, req.query),
  );

  r.get(
    API.instanceIdleStop,
    {
      schema: { tags, summary: 'GPU 空闲自动关机的设置与当前空闲状态', params: instanceIdParamsSchema, response: { 200: idleStopSchema } },
      onRequest: requireAuth,
    },
    async (req) => deps.idleStops.get(currentSession(req).user, req.params.id),
  );

  r.put(
    API.instanceIdleStop,
    {
      schema: {
        tags,
        summary: 'GPU 空闲 N 小时后自动关机（hours：1、2、4、8、12、24；null 关闭）：关机前 30 分钟发通知，由系统关机并记入操作日志',
        params: instanceIdParamsSchema,
        body: idleStopRequestSchema,
        response: { 200: idleStopSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.idleStops.set(currentSession(req).user, req.params.id, req.body),
  );
}
