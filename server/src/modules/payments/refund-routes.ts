import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, pagingQuerySchema, refundListQuerySchema, refundPageSchema, refundRequestSchema, refundResultSchema } from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import type { RefundService } from './refunds.js';

/** The operator check of modules/operator (passed in: importing it would make a cycle through orders). */
export type OperatorCheck = (req: FastifyRequest) => Promise<string | null>;

export interface RefundRoutesDeps {
  auth: AuthGuards;
  refunds: RefundService;
  /** Who acts as the operator (modules/operator): throws for anyone else. */
  operatorOf: OperatorCheck;
}

/** The operator asks for refunds; the account holder sees them in the bill. JSON routes (the notification is in routes.ts). */
export async function refundRoutes(app: FastifyInstance, deps: RefundRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post(
    API.operatorRefunds,
    {
      schema: {
        tags: ['运营'],
        summary: '退款到原支付渠道（可部分退款，合计不超过该笔支付；按比例收回充值赠送金）',
        body: refundRequestSchema,
        response: { 200: refundResultSchema },
      },
    },
    async (req) => {
      const operatorId = await deps.operatorOf(req);
      const { refund, replayed } = await deps.refunds.request(req.body, operatorId);
      req.log.info({ operatorId, outTradeNo: req.body.outTradeNo, amount: req.body.amount, reason: req.body.reason, refundId: refund.id }, 'operator refund');
      return { ...refund, replayed };
    },
  );

  r.get(
    API.operatorRefunds,
    { schema: { tags: ['运营'], summary: '退款记录（可按交易号筛选）', querystring: refundListQuerySchema, response: { 200: refundPageSchema } } },
    async (req) => {
      await deps.operatorOf(req);
      const { outTradeNo, page, pageSize } = req.query;
      return deps.refunds.listAll({ outTradeNo }, { page, pageSize });
    },
  );

  r.get(
    API.userRefunds,
    {
      schema: { tags: ['费用'], summary: '我的退款（退款中 / 已退款 / 退款失败）', querystring: pagingQuerySchema, response: { 200: refundPageSchema } },
      onRequest: deps.auth.requireFinance,
    },
    (req) => deps.refunds.listForUser(payerOf(req), req.query),
  );
}
