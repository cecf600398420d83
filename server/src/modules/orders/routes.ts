import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  ORDER_SEGMENT,
  aiResourceOrderRequestSchema,
  gpuOrderRequestSchema,
  orderListQuerySchema,
  orderPageSchema,
  orderPayStatusSchema,
  orderQrParamsSchema,
  orderQrSchema,
  orderSchema,
  orderUidParamsSchema,
  orderVoucherRequestSchema,
  payOrderRequestSchema,
  usageBillSchema,
  sizeOrderRequestSchema,
  type OrderKind,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { AuthGuards } from '../../http/auth.js';
import type { Buyer, Checkout } from './checkout.js';
import type { PurchaseService } from './purchase.js';
import type { OrderService } from './service.js';
import { currentSession, orderScopeOf } from '../../http/auth.js';

const tags = ['订单'];

export interface OrderRoutesDeps {
  auth: AuthGuards;
  clock: Clock;
  orders: OrderService;
  purchase: PurchaseService;
  checkout: Checkout;
}

export async function orderRoutes(app: FastifyInstance, { auth, clock, orders: o, purchase, checkout }: OrderRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = auth;
  // A child without the 财务 permission sees and acts on only the orders it created itself.
  const buyerOf = (req: FastifyRequest): Buyer => ({
    ...orderScopeOf(req),
    assertMayActOn: (order) => purchase.assertMayActOn(currentSession(req).user, order),
  });

  r.post(
    API.gpuOrderCreate,
    { schema: { tags, summary: '创建 GPU 实例订单（服务器重新计价）', body: gpuOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => purchase.buyGpu(currentSession(req).user, req.body),
  );

  r.post(
    API.orderCreate,
    { schema: { tags, summary: '创建 CPU/云桌面/跨境电商/云游戏订单', body: sizeOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => purchase.buySize(currentSession(req).user, req.body),
  );

  r.post(
    API.aiOrderCreate,
    { schema: { tags, summary: '购买模型资源包', body: aiResourceOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => purchase.buyResource(currentSession(req).user, req.body),
  );

  r.get(
    API.orderList,
    { schema: { tags, summary: '我的订单', querystring: orderListQuerySchema, response: { 200: orderPageSchema } }, onRequest: requireAuth },
    (req) => o.list(orderScopeOf(req), req.query),
  );

  r.get(
    API.orderListCsv,
    {
      schema: { tags, summary: '导出账单（CSV，最多 5000 条）', querystring: orderListQuerySchema.omit({ page: true, pageSize: true }) },
      onRequest: requireAuth,
    },
    async (req, reply) => {
      const csv = await o.exportCsv(orderScopeOf(req), req.query.filterBy);
      const name = `bills-${clock.now().toISOString().slice(0, 10)}.csv`;
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`).send(csv);
    },
  );

  for (const [kind, segment] of Object.entries(ORDER_SEGMENT) as [OrderKind, string][]) {
    const base = `/order/api/v2.1/${segment}/:order_uid`;
    const params = orderUidParamsSchema;
    r.get(base, { schema: { tags, summary: `订单详情（${kind}）`, params, response: { 200: orderSchema } }, onRequest: requireAuth }, (req) =>
      o.get(orderScopeOf(req), kind, req.params.order_uid),
    );
    r.get(
      `${base}/usage`,
      {
        schema: { tags, summary: `按量计费订单的费用明细（${kind}）：逐段运行、数据盘、欠费结清`, params, response: { 200: usageBillSchema } },
        onRequest: requireAuth,
      },
      (req) => o.usageBill(orderScopeOf(req), kind, req.params.order_uid),
    );
    r.put(
      `${base}/voucher`,
      {
        schema: {
          tags,
          summary: `为未支付订单选择代金券（${kind}）：保存在订单上，null 为不使用`,
          params,
          body: orderVoucherRequestSchema,
          response: { 200: orderSchema },
        },
        onRequest: requireAuth,
      },
      (req) => checkout.chooseVoucher(buyerOf(req), kind, req.params.order_uid, req.body.voucherId),
    );
    r.post(
      `${base}/pay`,
      {
        schema: { tags, summary: `支付订单（${kind}）：余额，或支付宝/微信扫码`, params, body: payOrderRequestSchema, response: { 200: orderPayStatusSchema } },
        onRequest: requireAuth,
      },
      (req) => checkout.pay(buyerOf(req), kind, req.params.order_uid, req.body),
    );
    r.get(`${base}/pay`, { schema: { tags, summary: `支付状态（${kind}）`, params, response: { 200: orderPayStatusSchema } }, onRequest: requireAuth }, (req) =>
      checkout.status(orderScopeOf(req), kind, req.params.order_uid),
    );
    r.get(
      `${base}/qrcode/:method`,
      {
        schema: {
          tags,
          summary: `支付二维码（${kind}）`,
          params: orderQrParamsSchema,
          response: { 200: orderQrSchema },
        },
        onRequest: requireAuth,
      },
      (req) => checkout.qrcode(buyerOf(req), kind, req.params.order_uid, req.params.method === 'alipay' ? 'Alipay' : 'Wechat'),
    );
    r.post(
      `${base}/cancel`,
      { schema: { tags, summary: `取消未支付订单（${kind}）`, params, response: { 200: orderSchema } }, onRequest: requireAuth },
      (req) => checkout.cancel(buyerOf(req), kind, req.params.order_uid),
    );
  }
}
