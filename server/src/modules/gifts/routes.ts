import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, giftListSchema } from '@console/contract';
import type { AppContext } from '../../context.js';
import { payerOf } from '../../http/auth.js';

export async function giftRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    API.gift,
    { schema: { tags: ['赠送金'], summary: '赠送金明细（按到期时间）', response: { 200: giftListSchema } }, onRequest: ctx.auth.requireAuth },
    async (req) => {
      const grants = await ctx.gifts.list(payerOf(req));
      const now = ctx.clock.now();
      return {
        items: grants.map((g) => ({
          id: g.id,
          source: g.source,
          amount: String(g.amount),
          remain: String(g.remain),
          expireAt: g.expireAt.toISOString(),
          status: g.status === 1 ? (1 as const) : (0 as const),
          createdAt: g.createdAt.toISOString(),
        })),
        remain: String(grants.filter((g) => ctx.gifts.countsTowardRemain(g, now)).reduce((n, g) => n + g.remain, 0n)),
      };
    },
  );
}
