/**
 * The operator area's governance (issue 32 "Roles and audit"): the caller's own roles, operators and
 * their roles (granted and revoked by 管理员), the audit log, and credits / debits with the requests
 * that wait for a second operator.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  OPERATOR_PERMISSIONS,
  auditEntrySchema,
  auditQuerySchema,
  moneyMoveResultSchema,
  moneyMoveSchema,
  moneyRequestDecisionSchema,
  moneyRequestParamsSchema,
  moneyRequestQuerySchema,
  moneyRequestSchema,
  operatorAccountListSchema,
  operatorAccountSchema,
  operatorMeSchema,
  operatorRoleChangeSchema,
  pageOf,
  type OperatorRoleChange,
} from '@console/contract';
import { AppError } from '../../http/errors.js';
import { originOf } from './audit.js';
import type { Db } from '../../db/client.js';
import type { UserService } from '../users/index.js';
import type { OperatorAudit } from './audit.js';
import type { OperatorActor, OperatorRoles, RequirePermission } from './roles.js';
import type { OperatorService } from './service.js';

export interface GovernanceRoutesDeps {
  db: Db;
  users: Pick<UserService, 'findByMobile' | 'mobilesOf'>;
  requirePermission: RequirePermission;
  audit: OperatorAudit;
  roles: OperatorRoles;
  operator: OperatorService;
}

export function governanceRoutes(app: FastifyInstance, deps: GovernanceRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['运营'];
  const { requirePermission: need, audit, roles, operator } = deps;

  r.get(API.operatorMe, { schema: { tags, summary: '当前运营人员的角色与权限', response: { 200: operatorMeSchema } } }, async (req) => {
    const actor = await need(OPERATOR_PERMISSIONS)(req);
    return { userId: actor.userId, roles: actor.roles, permissions: [...actor.permissions], approvalThreshold: String(operator.approvalThreshold) };
  });

  r.get(API.operatorAccounts, { schema: { tags, summary: '运营人员与其角色', response: { 200: operatorAccountListSchema } } }, async (req) => {
    await need('roles.manage')(req);
    return { items: await roles.operators(deps.users) };
  });

  const changeRole = async (actor: OperatorActor, body: OperatorRoleChange, grant: boolean, origin: ReturnType<typeof originOf>) => {
    const user = await deps.users.findByMobile(body.mobile);
    if (!user || user.isChild) throw new AppError('USER_NOT_FOUND', `手机号 ${body.mobile} 未注册`);
    if (!grant && body.role === 'admin' && user.id === actor.userId) throw new AppError('OPERATOR_SELF_REVOKE');
    const before = await roles.rolesOf(user);
    await deps.db.transaction(async (tx) => {
      if (grant) await roles.grant(tx, body.mobile, body.role, actor.userId);
      else await roles.revoke(tx, body.mobile, body.role);
    });
    const after = await roles.rolesOf((await deps.users.findByMobile(body.mobile))!);
    await audit.record(actor, origin, {
      action: grant ? 'role.grant' : 'role.revoke',
      targetType: 'user',
      targetId: user.id,
      before: { mobile: body.mobile, roles: before },
      after: { mobile: body.mobile, roles: after },
      reason: body.reason,
    });
    const list = await roles.operators(deps.users);
    return list.find((o) => o.userId === user.id) ?? { userId: user.id, mobile: body.mobile, roles: [], byConfiguration: false, grantedAt: null };
  };
  for (const [path, grant] of [
    [API.operatorRoleGrant, true],
    [API.operatorRoleRevoke, false],
  ] as const) {
    r.post(
      path,
      {
        schema: {
          tags,
          summary: grant ? '授予运营角色（仅管理员）' : '收回运营角色（仅管理员；不能收回自己的管理员角色）',
          body: operatorRoleChangeSchema,
          response: { 200: operatorAccountSchema },
        },
      },
      async (req) => changeRole(await need('roles.manage')(req), req.body, grant, originOf(req)),
    );
  }

  r.get(
    API.operatorAudit,
    {
      schema: { tags, summary: '审计日志（按操作人、操作、对象、时间筛选，分页）', querystring: auditQuerySchema, response: { 200: pageOf(auditEntrySchema) } },
    },
    async (req) => {
      await need('audit.read')(req);
      return audit.search(req.query);
    },
  );

  r.post(
    API.operatorMoney,
    {
      schema: {
        tags,
        summary: '给用户加款或扣款（记录原因；非管理员超过阈值时生成待审批申请）',
        body: moneyMoveSchema,
        response: { 200: moneyMoveResultSchema },
      },
    },
    async (req) => operator.move(req.body, await need(['money.credit', 'money.creditSmall'])(req), originOf(req)),
  );

  r.get(
    API.operatorMoneyRequests,
    { schema: { tags, summary: '大额资金申请（待审批与已处理）', querystring: moneyRequestQuerySchema, response: { 200: pageOf(moneyRequestSchema) } } },
    async (req) => {
      await need(['money.approve', 'money.credit', 'money.creditSmall'])(req);
      return operator.requests(req.query.status, req.query.page, req.query.pageSize);
    },
  );

  for (const [path, approve] of [
    [API.operatorMoneyRequestApprove, true],
    [API.operatorMoneyRequestReject, false],
  ] as const) {
    r.post(
      path,
      {
        schema: {
          tags,
          summary: approve ? '审批通过（由发起人以外的运营人员；只入账一次）' : '驳回资金申请',
          params: moneyRequestParamsSchema,
          body: moneyRequestDecisionSchema,
          response: { 200: moneyRequestSchema },
        },
      },
      async (req) => {
        const actor = await need('money.approve')(req);
        const decide = approve ? operator.approve.bind(operator) : operator.reject.bind(operator);
        return decide(req.params.id, actor, originOf(req), req.body.reason);
      },
    );
  }
}
