import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  okSchema,
  operatorCreditResultSchema,
  operatorCreditSchema,
  operatorRoleResultSchema,
  operatorRoleSchema,
  operatorUserQuerySchema,
  operatorUserSchema,
  pageOf,
  pagingQuerySchema,
  reviewDecisionSchema,
  reviewItemSchema,
  reviewLogSchema,
  reviewParamsSchema,
  reviewQuerySchema,
} from '@console/contract';
import { ReviewQueries } from './reviews.js';
import { modelChannelRoutes } from './model-channels.js';
import type { AuthGuards } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import type { CertificationService } from '../certification/index.js';
import type { StudentService } from '../students/index.js';
import type { UserService } from '../users/index.js';
import type { OperatorService } from './service.js';
import type { ModelChannelRoutesDeps } from './model-channels.js';
import { registeredImageRoutes } from './registered-image-routes.js';
import type { RegisteredImages } from './registered-images.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function sameSecret(a: string, b: string) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface OperatorCheckDeps {
  auth: AuthGuards;
  users: Pick<UserService, 'toDto'>;
  /** The token `npm start` sets once the server runs (main.ts), hence read at each request. */
  localOperatorToken: () => string | null;
}

/** Who acts as the operator: the operator's user id, null for the `npm run operator` command. */
export type OperatorCheck = (req: FastifyRequest) => Promise<string | null>;

/**
 * Who may act as the operator: a logged-in operator account, or the `npm run operator` command on
 * this machine, which proves itself with the token the running server wrote into DATA_DIR.
 */
export function operatorCheck(deps: OperatorCheckDeps): OperatorCheck {
  return async (req) => {
    const local = req.headers['x-operator-token'];
    if (typeof local === 'string') {
      const token = deps.localOperatorToken();
      if (token && LOOPBACK.has(req.socket.remoteAddress ?? '') && sameSecret(local, token)) return null;
      throw new AppError('PERMISSION_DENIED', '本机运维令牌无效');
    }
    await deps.auth.requireAuth(req, undefined as never);
    const user = req.session!.user;
    const dto = deps.users.toDto(user);
    if (!dto.isOperator) throw new AppError('PERMISSION_DENIED', '需要运营方权限');
    return user.id;
  };
}

export interface OperatorRoutesDeps extends ModelChannelRoutesDeps {
  operatorOf: OperatorCheck;
  operator: OperatorService;
  users: UserService;
  certification: CertificationService;
  students: StudentService;
  /** OPERATOR_MOBILES: the accounts that are operators by configuration. */
  operatorMobiles: string[];
  /** 镜像登记. */
  registeredImages: RegisteredImages;
}

export async function operatorRoutes(app: FastifyInstance, deps: OperatorRoutesDeps) {
  const { operatorOf } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post(
    API.operatorCredit,
    {
      schema: {
        tags: ['运营'],
        summary: '给用户补偿现金或赠送金（记录操作人与原因）',
        body: operatorCreditSchema,
        response: { 200: operatorCreditResultSchema },
      },
    },
    async (req) => {
      const operatorId = await operatorOf(req);
      const result = await deps.operator.credit(req.body, operatorId);
      req.log.info({ operatorId, mobile: req.body.mobile, amount: req.body.amount, to: req.body.to, reason: req.body.reason }, 'operator credit');
      return result;
    },
  );

  r.post(
    API.operatorRole,
    {
      schema: {
        tags: ['运营'],
        summary: '授予或收回运营权限（仅本机 npm run operator -- grant/revoke）',
        body: operatorRoleSchema,
        response: { 200: operatorRoleResultSchema },
      },
    },
    async (req) => {
      // Who is an operator is decided on the server's machine, not by another operator's session.
      if ((await operatorOf(req)) !== null) throw new AppError('PERMISSION_DENIED', '运营权限只能在服务器上用 npm run operator 授予或收回');
      const result = await deps.users.changeOperatorRole(req.body.mobile, req.body.isOperator);
      req.log.info({ mobile: req.body.mobile, isOperator: req.body.isOperator }, 'operator role');
      return result;
    },
  );

  const reviews = new ReviewQueries({ certification: deps.certification, students: deps.students, users: deps.users });
  const tags = ['运营'];
  /** The review area is for operator accounts only (the local command token does not open it). */
  const asOperator = async (req: FastifyRequest) => {
    if (req.headers['x-operator-token'] !== undefined) throw new AppError('PERMISSION_DENIED', '审核需使用运营账号登录');
    return (await operatorOf(req))!;
  };

  r.get(
    API.operatorReviews,
    { schema: { tags, summary: '待审核与已审核的企业认证 / 学生认证', querystring: reviewQuerySchema, response: { 200: pageOf(reviewItemSchema) } } },
    async (req) => {
      await asOperator(req);
      return reviews.queue(req.query.kind, req.query.status, req.query.page, req.query.pageSize);
    },
  );

  r.post(
    API.operatorReview,
    {
      schema: {
        tags,
        summary: '通过或驳回（驳回须写原因；每次决定都记入审核日志）',
        params: reviewParamsSchema,
        body: reviewDecisionSchema,
        response: { 200: okSchema },
      },
    },
    async (req) => {
      const operatorId = await asOperator(req);
      if (req.params.kind === 'enterprise') {
        await assertEnterprise(deps.certification, req.params.id);
        await deps.certification.decide(req.params.id, req.body, operatorId);
      } else await deps.students.decide(req.params.id, req.body, operatorId);
      req.log.info({ operatorId, kind: req.params.kind, id: req.params.id, decision: req.body.decision }, 'operator review');
      return { ok: true as const };
    },
  );

  r.get(API.operatorReviewImage, { schema: { tags, summary: '营业执照 / 学生证图片', params: reviewParamsSchema } }, async (req, reply) => {
    await asOperator(req);
    const object = req.params.kind === 'enterprise' ? await deps.certification.licence(req.params.id) : await deps.students.image(req.params.id);
    return reply
      .header('content-type', object.contentType)
      .header('cache-control', 'private, no-store')
      .header('x-content-type-options', 'nosniff')
      .send(object.body);
  });

  r.get(
    API.operatorUsers,
    { schema: { tags, summary: '用户与认证状态', querystring: operatorUserQuerySchema, response: { 200: pageOf(operatorUserSchema) } } },
    async (req) => {
      await asOperator(req);
      return reviews.users(req.query.q, req.query.page, req.query.pageSize, deps.operatorMobiles);
    },
  );

  modelChannelRoutes(app, deps, asOperator);
  registeredImageRoutes(app, deps.registeredImages, operatorOf);

  r.get(
    API.operatorReviewLog,
    { schema: { tags, summary: '审核日志（实名核验服务与运营的每次决定）', querystring: pagingQuerySchema, response: { 200: pageOf(reviewLogSchema) } } },
    async (req) => {
      await asOperator(req);
      return reviews.log(req.query.page, req.query.pageSize);
    },
  );
}

/** Only enterprise applications are the operator's to decide; personal ones belong to the verifier. */
async function assertEnterprise(certification: CertificationService, id: string) {
  const type = await certification.typeOf(id);
  if (!type) throw new AppError('RECORD_NOT_FOUND');
  if (type !== 'Enterprise') throw new AppError('PERMISSION_DENIED', '个人认证由实名核验服务判定');
}
