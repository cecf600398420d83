import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  pagingQuerySchema,
  rechargeIdParamsSchema,
  rechargeOptionsSchema,
  rechargePageSchema,
  rechargeRequestSchema,
  rechargeSchema,
} from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import type { RechargeService } from './service.js';

const tags = ['充值'];

export interface RechargeRoutesDeps {
  auth: AuthGuards;
  recharge: RechargeService;
}

export async function rechargeRoutes(app: FastifyInstance, deps: RechargeRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Recharges move and show the payer's money: a main account's, or a child's granted 财务.
  const { requireFinance } = deps.auth;

  r.get(API.rechargeOptions, { schema: { tags, summary: '充值金额范围、预设与赠送比例', response: { 200: rechargeOptionsSchema } } }, () =>
    deps.recharge.options(),
  );

  r.post(
    API.recharge,
    // A child with 财务 may top up too: the money lands in its parent's balance, the one it spends.
    { schema: { tags, summary: '发起充值（返回支付二维码内容）', body: rechargeRequestSchema, response: { 200: rechargeSchema } }, onRequest: requireFinance },
    (req) => deps.recharge.create(payerOf(req), req.body),
  );
  r.get(
    API.recharge,
    { schema: { tags, summary: '充值记录', querystring: pagingQuerySchema, response: { 200: rechargePageSchema } }, onRequest: requireFinance },
    (req) => deps.recharge.list(payerOf(req), req.query),
  );
  r.get(
    API.rechargeOne,
    {
      schema: { tags, summary: '充值状态（轮询；通知迟到时向支付渠道查询）', params: rechargeIdParamsSchema, response: { 200: rechargeSchema } },
      onRequest: requireFinance,
    },
    (req) => deps.recharge.get(payerOf(req), req.params.id),
  );
  r.post(
    API.rechargeCancel,
    { schema: { tags, summary: '取消未支付的充值', params: rechargeIdParamsSchema, response: { 200: rechargeSchema } }, onRequest: requireFinance },
    (req) => deps.recharge.cancel(payerOf(req), req.params.id),
  );
}
