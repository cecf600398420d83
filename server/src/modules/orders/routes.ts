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
  resourcePackageListSchema,
  resourceProductListSchema,
  resourcePackageParamsSchema,
  resourceUsageSchema,
  pageOf,
  pagingQuerySchema,
  sizeOrderRequestSchema,
  type OrderKind,
} from '@console/contract';
import type { AppContext } from '../../context.js';
import type { Buyer } from './checkout.js';
import { currentSession, orderScopeOf, payerOf } from '../../http/auth.js';

const tags = ['订单'];

export async function orderRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = ctx.auth;
  const o = ctx.orders;
  const checkout = ctx.checkout;
  // A child without the 财务 permission sees and acts on only the orders it created itself.
  const buyerOf = (req: FastifyRequest): Buyer => ({
    ...orderScopeOf(req),
    assertMayActOn: (order) => ctx.purchase.assertMayActOn(currentSession(req).user, order),
  });

  r.post(
    API.gpuOrderCreate,
    { schema: { tags, summary: '创建 GPU 实例订单（服务器重新计价）', body: gpuOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => ctx.purchase.buyGpu(currentSession(req).user, req.body),
  );

  r.post(
    API.orderCreate,
    { schema: { tags, summary: '创建 CPU/云桌面/跨境电商/云游戏订单', body: sizeOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => ctx.purchase.buySize(currentSession(req).user, req.body),
  );

  r.post(
    API.aiOrderCreate,
    { schema: { tags, summary: '购买模型资源包', body: aiResourceOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => ctx.purchase.buyResource(currentSession(req).user, req.body),
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
      const name = `bills-${ctx.clock.now().toISOString().slice(0, 10)}.csv`;
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

  r.get(API.resourceProducts, { schema: { tags, summary: '可购买的资源包', response: { 200: resourceProductListSchema } } }, async () => ({
    items: await ctx.resources.products(async (gpuTypeId) => (await ctx.catalogue.gpuHourlyRate(gpuTypeId))?.ratePerHour ?? null),
  }));
  r.get(
    API.resourcePackageUsages,
    {
      schema: {
        tags,
        summary: '资源包抵扣明细',
        params: resourcePackageParamsSchema,
        querystring: pagingQuerySchema,
        response: { 200: pageOf(resourceUsageSchema) },
      },
      onRequest: requireAuth,
    },
    async (req) => ctx.resources.usages(payerOf(req), req.params.id, req.query),
  );
  r.get(
    API.resourcePackages,
    { schema: { tags, summary: '我的资源包', response: { 200: resourcePackageListSchema } }, onRequest: requireAuth },
    async (req) => ({ items: await ctx.resources.list(payerOf(req)) }),
  );
}
