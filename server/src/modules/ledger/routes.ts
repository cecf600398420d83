import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, statementGroupQuerySchema, statementPageSchema, statementQuerySchema, userMoneySchema, payerIdOf } from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import type { LedgerService } from './service.js';

export interface LedgerRoutesDeps {
  auth: AuthGuards;
  ledger: LedgerService;
}

export async function ledgerRoutes(app: FastifyInstance, deps: LedgerRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get(
    API.userMoney,
    {
      schema: { tags: ['费用'], summary: '账户余额（有财务权限的子账号看到主账号的余额）', response: { 200: userMoneySchema } },
      onRequest: deps.auth.requireFinance,
    },
    async (request) => {
      const user = request.session!.user;
      // Child accounts spend their parent's balance (spec §1).
      const b = await deps.ledger.balances(payerIdOf(user));
      return { cash: String(b.cash), gift: String(b.gift), voucher: String(b.voucher), deposit: String(b.deposit), available: String(b.cash + b.gift) };
    },
  );

  r.get(
    API.userStatement,
    {
      schema: {
        tags: ['费用'],
        summary: '收支明细（现金、赠送金、代金券、押金）：按量计费按实例每小时汇总为一行',
        querystring: statementQuerySchema,
        response: { 200: statementPageSchema },
      },
      onRequest: deps.auth.requireFinance,
    },
    async (request) => {
      const { kind, page, pageSize } = request.query;
      return statementView(await deps.ledger.statement(payerOf(request), kind, { page, pageSize }));
    },
  );

  r.get(
    API.userStatementGroup,
    {
      schema: { tags: ['费用'], summary: '收支明细中一行汇总下的逐笔账目', querystring: statementGroupQuerySchema, response: { 200: statementPageSchema } },
      onRequest: deps.auth.requireFinance,
    },
    async (request) => {
      const { kind, group, page, pageSize } = request.query;
      return statementView(await deps.ledger.statementGroup(payerOf(request), kind, group, { page, pageSize }));
    },
  );
}

type StatementPageRows = Awaited<ReturnType<LedgerService['statement']>>;

function statementView(s: StatementPageRows) {
  return {
    ...s,
    items: s.items.map((e) => ({
      ...e,
      amount: String(e.amount),
      balanceAfter: String(e.balanceAfter),
      createdAt: e.createdAt.toISOString(),
      periodStart: e.periodStart?.toISOString() ?? null,
    })),
  };
}
