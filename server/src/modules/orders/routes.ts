import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  API,
  ORDER_SEGMENT,
  aiResourceOrderRequestSchema,
  gpuOrderRequestSchema,
  orderListQuerySchema,
  orderPageSchema,
  orderPayStatusSchema,
  orderQrSchema,
  orderSchema,
  orderUidParamsSchema,
  payOrderRequestSchema,
  resourcePackageSchema,
  resourceProductSchema,
  sizeOrderRequestSchema,
  type BillingCycle,
  type OrderKind,
  type PermissionFlag,
} from '@console/contract';
import type { AppContext } from '../../context.js';
import { currentSession, payerOf } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';

const tags = ['订单'];

/** Spec §6: what a child account needs to buy each category (a main account may buy all). */
const BUY_PERMISSION: Record<string, PermissionFlag> = { Gpu: 'createGPUInstance', App: 'createImageAPP', Ai: 'usingLLM' };

/** "RTX 4090 × 1（1 小时）" for a post-paid order is "RTX 4090 × 1 · 按量计费": it runs as long as the instance does. */
function describe(firstLine: string, cycle: BillingCycle): string {
  return isPostpaid(cycle) ? `${firstLine.replace(/（[^（）]*）$/, '')} · 按量计费` : firstLine;
}

function isPostpaid(cycle: BillingCycle): boolean {
  return cycle === 'Usage' || cycle === 'Hour';
}

/**
 * Who may buy this category: a child only with its flag, and only where spec §6 names one (CPU,
 * desktop, e-commerce and game machines are the main account's); anyone only when certified if the
 * operator requires real names for purchases (spec §5's gate, code 40311001).
 */
function assertMayBuy(req: FastifyRequest, category: string, ctx: AppContext) {
  const user = currentSession(req).user;
  const flag = BUY_PERMISSION[category];
  if (user.isChild && (!flag || !user[flag])) throw new AppError('PERMISSION_DENIED', flag ? `需要权限：${flag}` : '子账号不能购买该类产品');
  const certified = user.certStatus === 'Succeed' && user.certType !== 'Uncertified';
  if (category !== 'Ai' && ctx.config.REQUIRE_REALNAME_FOR_PURCHASE && !certified) throw new AppError('CERTIFICATION_REQUIRED');
}

export async function orderRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = ctx.auth;
  const o = ctx.orders;

  r.post(
    API.gpuOrderCreate,
    { schema: { tags, summary: '创建 GPU 实例订单（服务器重新计价）', body: gpuOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => {
      const { voucherId: _v, name, ...asked } = req.body;
      // Post-paid: the order is priced for one hour (what the balance must cover to begin); ticks charge the rest.
      const config = isPostpaid(asked.cycle) ? { ...asked, duration: 1 } : asked;
      const quote = await ctx.catalogue.quoteGpu(config, currentSession(req).user);
      assertMayBuy(req, quote.category, ctx);
      const order = {
        payerId: payerOf(req),
        createdBy: currentSession(req).user.id,
        kind: 'Personal' as const,
        type: 'NewBuy' as const,
        category: quote.category,
        request: { ...config, name: name ?? '', placement: quote.placement },
        quote,
        description: describe(quote.lines[0]!.name, config.cycle),
      };
      return isPostpaid(config.cycle) ? o.createPostpaid(order, BigInt(quote.total)) : o.create(order);
    },
  );

  r.post(
    API.orderCreate,
    { schema: { tags, summary: '创建 CPU/云桌面/跨境电商/云游戏订单', body: sizeOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => {
      const { voucherId: _v, name, ...asked } = req.body;
      const config = isPostpaid(asked.cycle) ? { ...asked, duration: 1 } : asked;
      const quote = await ctx.catalogue.quoteSize(config, currentSession(req).user);
      assertMayBuy(req, quote.category, ctx);
      const order = {
        payerId: payerOf(req),
        createdBy: currentSession(req).user.id,
        kind: 'default' as const,
        type: 'NewBuy' as const,
        category: quote.category,
        request: { ...config, name: name ?? '', placement: quote.placement },
        quote,
        description: describe(quote.lines[0]!.name, config.cycle),
      };
      return isPostpaid(config.cycle) ? o.createPostpaid(order, BigInt(quote.total)) : o.create(order);
    },
  );

  r.post(
    API.aiOrderCreate,
    { schema: { tags, summary: '购买模型资源包', body: aiResourceOrderRequestSchema, response: { 200: orderSchema } }, onRequest: requireAuth },
    async (req) => {
      assertMayBuy(req, 'Ai', ctx);
      const { product, price } = await ctx.resources.price(req.body.productId, req.body.count);
      return o.create({
        payerId: payerOf(req),
        createdBy: currentSession(req).user.id,
        kind: 'Ai',
        type: 'NewBuy',
        category: 'Ai',
        request: req.body,
        quote: price,
        description: ctx.resources.describe(product, req.body.count),
      });
    },
  );

  r.get(API.orderList, { schema: { tags, summary: '我的订单', querystring: orderListQuerySchema, response: { 200: orderPageSchema } }, onRequest: requireAuth }, (req) =>
    o.list(payerOf(req), req.query),
  );

  r.get(
    API.orderListCsv,
    { schema: { tags, summary: '导出账单（CSV，最多 5000 条）', querystring: orderListQuerySchema.omit({ page: true, pageSize: true }) }, onRequest: requireAuth },
    async (req, reply) => {
      const csv = await o.exportCsv(payerOf(req), req.query.filterBy);
      const name = `bills-${ctx.clock.now().toISOString().slice(0, 10)}.csv`;
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`).send(csv);
    },
  );

  for (const [kind, segment] of Object.entries(ORDER_SEGMENT) as [OrderKind, string][]) {
    const base = `/order/api/v2.1/${segment}/:order_uid`;
    const params = orderUidParamsSchema;
    r.get(base, { schema: { tags, summary: `订单详情（${kind}）`, params, response: { 200: orderSchema } }, onRequest: requireAuth }, (req) =>
      o.get(payerOf(req), kind, req.params.order_uid),
    );
    r.post(
      `${base}/pay`,
      { schema: { tags, summary: `支付订单（${kind}）：余额，或支付宝/微信扫码`, params, body: payOrderRequestSchema, response: { 200: orderPayStatusSchema } }, onRequest: requireAuth },
      (req) => o.pay(payerOf(req), kind, req.params.order_uid, req.body),
    );
    r.get(
      `${base}/pay`,
      { schema: { tags, summary: `支付状态（${kind}）`, params, response: { 200: orderPayStatusSchema } }, onRequest: requireAuth },
      (req) => o.status(payerOf(req), kind, req.params.order_uid),
    );
    r.get(
      `${base}/qrcode/:method`,
      {
        schema: { tags, summary: `支付二维码（${kind}）`, params: params.extend({ method: z.enum(['alipay', 'wechat'], { error: '只支持 alipay 或 wechat' }) }), response: { 200: orderQrSchema } },
        onRequest: requireAuth,
      },
      (req) => o.qrcode(payerOf(req), kind, req.params.order_uid, req.params.method === 'alipay' ? 'Alipay' : 'Wechat'),
    );
    r.post(
      `${base}/cancel`,
      { schema: { tags, summary: `取消未支付订单（${kind}）`, params, response: { 200: orderSchema } }, onRequest: requireAuth },
      (req) => o.cancel(payerOf(req), kind, req.params.order_uid),
    );
  }

  r.get(API.resourceProducts, { schema: { tags, summary: '可购买的资源包', response: { 200: z.object({ items: z.array(resourceProductSchema) }) } } }, async () => ({
    items: await ctx.resources.products(),
  }));
  r.get(
    API.resourcePackages,
    { schema: { tags, summary: '我的资源包', response: { 200: z.object({ items: z.array(resourcePackageSchema) }) } }, onRequest: requireAuth },
    async (req) => ({ items: await ctx.resources.list(payerOf(req)) }),
  );
}
