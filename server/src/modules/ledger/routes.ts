import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, statementPageSchema, statementQuerySchema, userMoneySchema, payerIdOf } from '@console/contract';
import { payerOf } from '../../http/auth.js';
import type { AppContext } from '../../context.js';

export async function ledgerRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get(
    API.userMoney,
    { schema: { tags: ['费用'], summary: '账户余额（子账号看到主账号的余额）', response: { 200: userMoneySchema } }, onRequest: ctx.auth.requireAuth },
    async (request) => {
      const user = request.session!.user;
      // Child accounts spend their parent's balance (spec §1).
      const b = await ctx.ledger.balances(payerIdOf(user));
      return { cash: String(b.cash), gift: String(b.gift), voucher: String(b.voucher), deposit: String(b.deposit), available: String(b.cash + b.gift) };
    },
  );

  r.get(
    API.userStatement,
    {
      schema: { tags: ['费用'], summary: '收支明细（现金、赠送金、代金券、押金）', querystring: statementQuerySchema, response: { 200: statementPageSchema } },
      onRequest: ctx.auth.requireAuth,
    },
    async (request) => {
      const { kind, page, pageSize } = request.query;
      const s = await ctx.ledger.statement(payerOf(request), kind, { page, pageSize });
      return {
        ...s,
        items: s.items.map((e) => ({ ...e, amount: String(e.amount), balanceAfter: String(e.balanceAfter), createdAt: e.createdAt.toISOString() })),
      };
    },
  );
}
