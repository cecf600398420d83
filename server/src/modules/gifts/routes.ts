import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API, giftEligibilitySchema, giftIdParamsSchema, giftListSchema } from '@console/contract';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import { giftItemView, type GiftService } from './service.js';

const tags = ['赠送金'];

export interface GiftRoutesDeps {
  auth: AuthGuards;
  gifts: GiftService;
}

export async function giftRoutes(app: FastifyInstance, deps: GiftRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = deps.auth;
  // The payer's gift credit is its money: a child sees it only with 财务.
  const requireFinance = deps.auth.requireFinance;

  const list = async (userId: string) => {
    const s = await deps.gifts.summary(userId);
    return {
      items: s.grants.map(giftItemView),
      remain: String(s.remain),
      obtained: s.obtained,
      recharged: String(s.recharged),
      renewStatus: s.renewStatus,
      expireAt: s.expireAt?.toISOString() ?? null,
    };
  };

  r.get(API.gift, { schema: { tags, summary: '赠送金明细与汇总（按到期时间）', response: { 200: giftListSchema } }, onRequest: requireFinance }, (req) =>
    list(payerOf(req)),
  );
  r.get(API.giftEligibility, { schema: { tags, summary: '能否领取新人赠送金', response: { 200: giftEligibilitySchema } }, onRequest: requireAuth }, (req) =>
    deps.gifts.eligibility(currentSession(req).user),
  );
  r.post(API.giftObtain, { schema: { tags, summary: '领取新人赠送金', response: { 200: giftListSchema } }, onRequest: requireFinance }, async (req) => {
    await deps.gifts.obtain(currentSession(req).user);
    return list(payerOf(req));
  });
  r.post(
    API.giftEffect,
    { schema: { tags, summary: '让一笔待续期的赠送金重新生效', params: giftIdParamsSchema, response: { 200: giftListSchema } }, onRequest: requireFinance },
    async (req) => {
      await deps.gifts.renew(payerOf(req), req.params.id);
      return list(payerOf(req));
    },
  );
  r.post(
    API.giftRenew,
    { schema: { tags, summary: '续期全部待续期的赠送金', response: { 200: giftListSchema.extend({ renewed: z.number().int() }) } }, onRequest: requireFinance },
    async (req) => {
      const renewed = await deps.gifts.renew(payerOf(req));
      return { ...(await list(payerOf(req))), renewed };
    },
  );
}
