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
import { AppError } from '../../http/errors.js';
import type { CertificationService } from '../certification/index.js';
import type { StudentService } from '../students/index.js';
import type { UserService } from '../users/index.js';
import type { OperatorService } from './service.js';
import type { ModelChannelRoutesDeps } from './model-channels.js';
import { registeredImageRoutes } from './registered-image-routes.js';
import { originOf, type OperatorAudit } from './audit.js';
import { isAdmin, type OperatorRoles, type RequirePermission } from './roles.js';
import { governanceRoutes } from './governance-routes.js';
import type { RegisteredImages } from './registered-images.js';

/** Who acts as the operator: the operator's user id, null for the `npm run operator` command (for other modules' routes). */
export type OperatorCheck = (req: FastifyRequest) => Promise<string | null>;

export interface OperatorRoutesDeps extends ModelChannelRoutesDeps {
  requirePermission: RequirePermission;
  audit: OperatorAudit;
  roles: OperatorRoles;
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
  const { requirePermission, audit } = deps;
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
      const actor = await requirePermission('money.credit')(req);
      // Moves that may need a second operator go through API.operatorMoney; this one never waits.
      if (!isAdmin(actor)) throw new AppError('PERMISSION_DENIED', '请在运营管理中加款（超过阈值须另一位运营人员审批）');
      const operatorId = actor.userId;
      const result = await deps.operator.credit(req.body, operatorId, actor, originOf(req));
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
      const actor = await requirePermission('roles.manage')(req);
      if (actor.userId !== null) throw new AppError('PERMISSION_DENIED', '此接口只供本机 npm run operator 使用；账号授予角色请用「角色与权限」');
      const { mobile, isOperator } = req.body;
      const user = await deps.users.findByMobile(mobile);
      if (!user || user.isChild) throw new AppError('USER_NOT_FOUND', `手机号 ${mobile} 未注册`);
      const before = await deps.roles.rolesOf(user);
      await deps.db.transaction((tx) => (isOperator ? deps.roles.grant(tx, mobile, 'admin', null) : deps.roles.revoke(tx, mobile, 'all')));
      const result = await deps.users.changeOperatorRole(mobile, isOperator);
      const after = await deps.roles.rolesOf((await deps.users.findByMobile(mobile))!);
      await audit.record(actor, originOf(req), {
        action: isOperator ? 'role.grant' : 'role.revoke',
        targetType: 'user',
        targetId: result.userId,
        before: { roles: before },
        after: { roles: after },
      });
      req.log.info({ mobile: req.body.mobile, isOperator: req.body.isOperator }, 'operator role');
      return result;
    },
  );

  const reviews = new ReviewQueries({ certification: deps.certification, students: deps.students, users: deps.users });
  const tags = ['运营'];
  /** The review area is for operator accounts only (the local command token does not open it). */
  const reviewer = requirePermission('reviews.manage', { accountOnly: true });

  r.get(
    API.operatorReviews,
    { schema: { tags, summary: '待审核与已审核的企业认证 / 学生认证', querystring: reviewQuerySchema, response: { 200: pageOf(reviewItemSchema) } } },
    async (req) => {
      await reviewer(req);
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
      const actor = await reviewer(req);
      const operatorId = actor.userId!;
      if (req.params.kind === 'enterprise') {
        await assertEnterprise(deps.certification, req.params.id);
        await deps.certification.decide(req.params.id, req.body, operatorId);
      } else await deps.students.decide(req.params.id, req.body, operatorId);
      await audit.record(actor, originOf(req), {
        action: 'review.decide',
        targetType: req.params.kind === 'enterprise' ? 'enterprise-certification' : 'student-verification',
        targetId: req.params.id,
        before: { status: 'Pending' },
        after: { decision: req.body.decision },
        reason: req.body.decision === 'reject' ? req.body.reason : '',
      });
      req.log.info({ operatorId, kind: req.params.kind, id: req.params.id, decision: req.body.decision }, 'operator review');
      return { ok: true as const };
    },
  );

  r.get(API.operatorReviewImage, { schema: { tags, summary: '营业执照 / 学生证图片', params: reviewParamsSchema } }, async (req, reply) => {
    await reviewer(req);
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
      await requirePermission('users.read', { accountOnly: true })(req);
      return reviews.users(req.query.q, req.query.page, req.query.pageSize, deps.operatorMobiles);
    },
  );

  modelChannelRoutes(app, deps, requirePermission('models.manage', { accountOnly: true }), audit);
  registeredImageRoutes(app, deps.registeredImages, requirePermission('images.manage'), audit);
  governanceRoutes(app, deps);

  r.get(
    API.operatorReviewLog,
    { schema: { tags, summary: '审核日志（实名核验服务与运营的每次决定）', querystring: pagingQuerySchema, response: { 200: pageOf(reviewLogSchema) } } },
    async (req) => {
      await reviewer(req);
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
