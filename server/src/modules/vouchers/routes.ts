import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, vouchersQuerySchema, vouchersResponseSchema, voucherSummarySchema, type Voucher } from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import type { VoucherRow, VoucherService } from './service.js';

const tags = ['卡券'];

function view(v: VoucherRow): Voucher {
  return {
    id: v.id,
    name: v.name,
    amount: String(v.amount),
    minSpend: String(v.minSpend),
    categories: v.categories,
    status: v.status,
    validFrom: v.validFrom.toISOString(),
    expiresAt: v.expiresAt.toISOString(),
  };
}

export interface VoucherRoutesDeps {
  auth: AuthGuards;
  vouchers: VoucherService;
}

export async function voucherRoutes(app: FastifyInstance, deps: VoucherRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get(
    API.vouchers,
    {
      schema: { tags, summary: '我的代金券（usable=true 只看当前可用的）', querystring: vouchersQuerySchema, response: { 200: vouchersResponseSchema } },
      onRequest: deps.auth.requireAuth,
    },
    async (req) => {
      const rows = await deps.vouchers.list(payerOf(req), { usable: req.query.usable === 'true' });
      const category = req.query.category;
      return { items: rows.filter((v) => !category || v.categories.length === 0 || v.categories.includes(category)).map(view) };
    },
  );

  r.get(
    API.cashCoupon,
    {
      schema: {
        tags,
        summary: '可用代金券合计',
        response: { 200: voucherSummarySchema },
      },
      onRequest: deps.auth.requireAuth,
    },
    async (req) => {
      const usable = await deps.vouchers.list(payerOf(req), { usable: true });
      return { count: usable.length, total: String(usable.reduce((n, v) => n + v.amount, 0n)) };
    },
  );
}
