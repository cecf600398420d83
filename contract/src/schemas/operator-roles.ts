/**
 * Operator roles and what each may do, the operator audit trail, and money moves that wait for a
 * second operator (issue 32 "Roles and audit"). One map decides every operator route's permission.
 */
import { z } from 'zod';
import { yuanInputSchema } from './money.js';
import { mobileSchema, moneySchema, numeric, pagingQuerySchema } from './common.js';

export const OPERATOR_ROLES = ['admin', 'finance', 'support', 'ops'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];
export const OPERATOR_ROLE_LABELS: Record<OperatorRole, string> = { admin: '管理员', finance: '财务', support: '客服', ops: '运维' };

/** Every operator permission with what it lets a user see in the operator area. */
export const OPERATOR_PERMISSION_LABELS = {
  'roles.manage': '授予与收回运营角色',
  'audit.read': '查看审计日志',
  'money.credit': '给用户加款 / 扣款（任意金额；超过阈值须另一人审批，管理员除外）',
  'money.creditSmall': '给用户加款 / 扣款（阈值以内；超过阈值须另一人审批）',
  'money.approve': '审批大额资金申请',
  'refunds.manage': '退款（任意金额；超过阈值须另一人审批，管理员除外）',
  'refunds.small': '退款（阈值以内）',
  'invoices.manage': '发票处理',
  'revenue.read': '查看收入与对账',
  'users.read': '查看用户',
  'users.freeze': '冻结与解冻用户',
  'reviews.manage': '企业认证 / 学生认证审核',
  'catalogue.manage': '目录与价格',
  'hosts.manage': '主机与机房',
  'images.manage': '镜像登记',
  'models.manage': '模型与上游渠道',
} as const;
export type OperatorPermission = keyof typeof OPERATOR_PERMISSION_LABELS;
export const OPERATOR_PERMISSIONS = Object.keys(OPERATOR_PERMISSION_LABELS) as OperatorPermission[];

/** The one map role → permissions. 管理员 holds every permission. */
export const ROLE_PERMISSIONS: Record<OperatorRole, readonly OperatorPermission[]> = {
  admin: OPERATOR_PERMISSIONS,
  finance: ['money.credit', 'money.creditSmall', 'money.approve', 'refunds.manage', 'refunds.small', 'invoices.manage', 'revenue.read', 'users.read'],
  support: ['users.read', 'users.freeze', 'reviews.manage', 'money.creditSmall', 'refunds.small'],
  ops: ['catalogue.manage', 'hosts.manage', 'images.manage', 'models.manage'],
};

export function permissionsOf(roles: readonly OperatorRole[]): OperatorPermission[] {
  const held = new Set(roles.flatMap((r) => ROLE_PERMISSIONS[r]));
  return OPERATOR_PERMISSIONS.filter((p) => held.has(p));
}

/** The roles that hold `permission`, in Chinese, for a refusal's detail. */
export function rolesWith(permission: OperatorPermission): string {
  return OPERATOR_ROLES.filter((r) => ROLE_PERMISSIONS[r].includes(permission))
    .map((r) => OPERATOR_ROLE_LABELS[r])
    .join('、');
}

const roleSchema = z.enum(OPERATOR_ROLES, { error: 'role 须为 admin、finance、support 或 ops' });

/** GET /api/v1/operator/me: the caller's roles and permissions (what the operator area shows). */
export const operatorMeSchema = z.object({
  userId: z.string().nullable(),
  roles: z.array(roleSchema),
  permissions: z.array(z.enum(OPERATOR_PERMISSIONS as [OperatorPermission, ...OperatorPermission[]])),
  /** Money moves above this (0.0001 yuan) by a non-管理员 wait for a second operator. */
  approvalThreshold: moneySchema,
});
export type OperatorMe = z.infer<typeof operatorMeSchema>;

export const operatorAccountSchema = z.object({
  userId: z.string(),
  mobile: z.string(),
  roles: z.array(roleSchema),
  /** True where the account is 管理员 by OPERATOR_MOBILES (configuration; not revocable here). */
  byConfiguration: z.boolean(),
  grantedAt: z.string().nullable(),
});
export type OperatorAccount = z.infer<typeof operatorAccountSchema>;
export const operatorAccountListSchema = z.object({ items: z.array(operatorAccountSchema) });
export type OperatorAccountList = z.infer<typeof operatorAccountListSchema>;

/** POST /api/v1/operator/roles/grant|revoke (管理员), and `npm run operator -- role grant|revoke`. */
export const operatorRoleChangeSchema = z.object({
  mobile: mobileSchema,
  role: roleSchema,
  reason: z.string().trim().max(200, { error: '原因最多 200 字' }).default(''),
});
export type OperatorRoleChange = z.infer<typeof operatorRoleChangeSchema>;

export const auditEntrySchema = z.object({
  id: z.string(),
  at: z.string(),
  actorId: z.string().nullable(),
  actor: z.string().describe('运营人员手机号，或“本机命令行”'),
  action: z.string(),
  targetType: z.string(),
  targetId: z.string(),
  before: z.unknown(),
  after: z.unknown(),
  reason: z.string(),
  requestId: z.string(),
  ip: z.string(),
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;

const isoSchema = z.iso.datetime({ offset: true, error: '时间须为 ISO 8601 格式' });
export const auditQuerySchema = pagingQuerySchema.extend({
  /** The operator's mobile, or 'cli' for the local command. */
  actor: z.string().trim().max(20).optional(),
  action: z.string().trim().max(60).optional(),
  target: z.string().trim().max(100).optional(),
  from: isoSchema.optional(),
  to: isoSchema.optional(),
});
export type AuditQuery = z.infer<typeof auditQuerySchema>;

export const AUDIT_ACTION_LABELS: Record<string, string> = {
  'money.credit': '加款',
  'money.debit': '扣款',
  'money.request': '发起大额资金申请',
  'money.approve': '审批通过资金申请',
  'money.reject': '驳回资金申请',
  'role.grant': '授予角色',
  'role.revoke': '收回角色',
  'review.decide': '认证审核',
  'invoice.issue': '开具发票',
  'invoice.reject': '驳回发票',
  'modelChannel.save': '保存模型渠道',
  'modelChannel.delete': '删除模型渠道',
  'model.update': '修改模型',
  'image.register': '登记镜像',
  'image.remove': '移除镜像登记',
};

/** A credit (to the user) or debit (from the user's cash), as the operator area and the CLI send it. */
export const moneyMoveSchema = z.object({
  mobile: mobileSchema,
  direction: z.enum(['credit', 'debit'], { error: 'direction 须为 credit 或 debit' }).default('credit'),
  amount: yuanInputSchema,
  reason: z.string({ error: '请填写原因' }).trim().min(2, { error: '原因至少 2 个字' }).max(200, { error: '原因最多 200 字' }),
  to: z.enum(['cash', 'gift']).default('cash'),
  giftValidDays: numeric(z.number().int().min(1).max(3650)).default(365),
  requestId: z.uuid({ error: 'requestId 须为 UUID' }),
});
export type MoneyMove = z.infer<typeof moneyMoveSchema>;

export const MoneyRequestStatus = ['pending', 'approved', 'rejected'] as const;
export const moneyRequestSchema = z.object({
  id: z.string(),
  direction: z.enum(['credit', 'debit']),
  userId: z.string(),
  mobile: z.string(),
  to: z.enum(['cash', 'gift']),
  amount: moneySchema,
  reason: z.string(),
  status: z.enum(MoneyRequestStatus),
  requestedBy: z.string().describe('发起人手机号'),
  requestedById: z.string(),
  decidedBy: z.string().nullable(),
  decisionReason: z.string(),
  createdAt: z.string(),
  decidedAt: z.string().nullable(),
});
export type MoneyRequest = z.infer<typeof moneyRequestSchema>;
export const moneyMoveResultSchema = z.object({
  /** 'done': the money moved; 'pending': a second operator must approve (the request is `request`). */
  state: z.enum(['done', 'pending']),
  balance: moneySchema.nullable(),
  request: moneyRequestSchema.nullable(),
});
export type MoneyMoveResult = z.infer<typeof moneyMoveResultSchema>;
export const moneyRequestQuerySchema = pagingQuerySchema.extend({ status: z.enum(MoneyRequestStatus).optional() });
export const moneyRequestParamsSchema = z.object({ id: z.uuid({ error: '申请编号格式不正确' }) });
export const moneyRequestDecisionSchema = z.object({ reason: z.string().trim().max(200, { error: '原因最多 200 字' }).default('') });
