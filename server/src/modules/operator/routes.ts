import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, operatorCreditResultSchema, operatorCreditSchema } from '@console/contract';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function sameSecret(a: string, b: string) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Who may act as the operator: a logged-in operator account, or the `npm run operator` command on
 * this machine, which proves itself with the token the running server wrote into DATA_DIR.
 * Returns the operator's user id (null for the command).
 */
async function operatorOf(req: FastifyRequest, ctx: AppContext): Promise<string | null> {
  const local = req.headers['x-operator-token'];
  if (typeof local === 'string') {
    if (ctx.localOperatorToken && LOOPBACK.has(req.socket.remoteAddress ?? '') && sameSecret(local, ctx.localOperatorToken)) return null;
    throw new AppError('PERMISSION_DENIED', '本机运维令牌无效');
  }
  await ctx.auth.requireAuth(req, undefined as never);
  const user = req.session!.user;
  const dto = ctx.users.toDto(user);
  if (!dto.isOperator) throw new AppError('PERMISSION_DENIED', '需要运营方权限');
  return user.id;
}

export async function operatorRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post(
    API.operatorCredit,
    { schema: { tags: ['运营'], summary: '给用户补偿现金或赠送金（记录操作人与原因）', body: operatorCreditSchema, response: { 200: operatorCreditResultSchema } } },
    async (req) => {
      const operatorId = await operatorOf(req, ctx);
      const result = await ctx.operator.credit(req.body, operatorId);
      req.log.info({ operatorId, mobile: req.body.mobile, amount: req.body.amount, to: req.body.to, reason: req.body.reason }, 'operator credit');
      return result;
    },
  );
}
