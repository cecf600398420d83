/**
 * Who holds which operator role (管理员, 财务, 客服, 运维), and the one guard every operator route
 * uses: `requirePermission(p)` answers the acting operator or refuses with 401 / 403 (40300002).
 *
 * A user's roles are their operator_roles rows. Two older sources still make a 管理员: OPERATOR_MOBILES
 * (configuration) and the users.is_operator flag without any row (what existed before roles; the
 * migration turned every such flag into a row). The flag is kept as "holds some operator role", which
 * is what the console's menu reads (meInfo.isOperator).
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { and, asc, eq } from 'drizzle-orm';
import { OPERATOR_PERMISSION_LABELS, permissionsOf, rolesWith, type OperatorPermission, type OperatorRole } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { setOperatorRole, userByMobile, type UserService } from '../users/index.js';
import { operatorRoles } from './schema.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function sameSecret(a: string, b: string) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The operator acting on a request: an account, or the local command (`userId` null, every permission). */
export interface OperatorActor {
  userId: string | null;
  /** '' for the local command. */
  mobile: string;
  roles: OperatorRole[];
  permissions: ReadonlySet<OperatorPermission>;
}

export const CLI_ACTOR: OperatorActor = {
  userId: null,
  mobile: '',
  roles: ['admin'],
  permissions: new Set(permissionsOf(['admin'])),
};

export const isAdmin = (actor: OperatorActor) => actor.userId === null || actor.roles.includes('admin');

interface UserLike {
  id: string;
  mobile: string | null;
  isOperator: boolean;
}

export class OperatorRoles {
  constructor(private deps: { db: Db; clock: Clock; operatorMobiles: string[] }) {}

  /** The roles `user` holds (see the file's comment for the older sources of 管理员). */
  async rolesOf(user: UserLike): Promise<OperatorRole[]> {
    const rows = await this.deps.db.select({ role: operatorRoles.role }).from(operatorRoles).where(eq(operatorRoles.userId, user.id));
    const roles = new Set<OperatorRole>(rows.map((r) => r.role));
    if (!!user.mobile && this.deps.operatorMobiles.includes(user.mobile)) roles.add('admin');
    if (user.isOperator && rows.length === 0) roles.add('admin');
    return [...roles];
  }

  /** Gives `role` to the main account with `mobile`; its id, and whether it already held it. */
  async grant(tx: Executor, mobile: string, role: OperatorRole, by: string | null) {
    const user = await mainAccount(tx, mobile);
    const before = await tx.select({ role: operatorRoles.role }).from(operatorRoles).where(eq(operatorRoles.userId, user.id));
    const inserted = await tx
      .insert(operatorRoles)
      .values({ userId: user.id, role, grantedBy: by, grantedAt: this.deps.clock.now() })
      .onConflictDoNothing()
      .returning({ role: operatorRoles.role });
    // A flag without rows reads as 管理员: their first row must not take that away.
    if (user.isOperator && before.length === 0 && role !== 'admin') {
      await tx.insert(operatorRoles).values({ userId: user.id, role: 'admin', grantedBy: null, grantedAt: this.deps.clock.now() }).onConflictDoNothing();
    }
    await setOperatorRole(tx, mobile, true, this.deps.clock.now());
    return { userId: user.id, changed: inserted.length > 0 };
  }

  /** Takes `role` (or every role) from the account with `mobile`; the flag follows whether any is left. */
  async revoke(tx: Executor, mobile: string, role: OperatorRole | 'all') {
    const user = await mainAccount(tx, mobile);
    const before = await tx.select({ role: operatorRoles.role }).from(operatorRoles).where(eq(operatorRoles.userId, user.id));
    const held = before.length === 0 && user.isOperator ? ['admin'] : before.map((r) => r.role);
    const where = role === 'all' ? eq(operatorRoles.userId, user.id) : and(eq(operatorRoles.userId, user.id), eq(operatorRoles.role, role));
    await tx.delete(operatorRoles).where(where);
    const left = role === 'all' ? [] : held.filter((r) => r !== role);
    // Someone who had only the flag and loses a role other than 管理员 keeps 管理员 as a row.
    if (before.length === 0 && left.includes('admin')) {
      await tx.insert(operatorRoles).values({ userId: user.id, role: 'admin', grantedBy: null, grantedAt: this.deps.clock.now() }).onConflictDoNothing();
    }
    await setOperatorRole(tx, mobile, left.length > 0, this.deps.clock.now());
    return { userId: user.id, changed: held.length !== left.length, left };
  }

  /** Every account holding a role (rows, the flag, or OPERATOR_MOBILES). */
  async operators(users: Pick<UserService, 'mobilesOf'>) {
    const flagged = await this.flagged();
    const rows = await this.deps.db.select().from(operatorRoles).orderBy(asc(operatorRoles.grantedAt));
    const byUser = new Map<string, { roles: Set<OperatorRole>; grantedAt: Date | null }>();
    for (const r of rows) {
      const e = byUser.get(r.userId) ?? { roles: new Set<OperatorRole>(), grantedAt: r.grantedAt };
      e.roles.add(r.role);
      byUser.set(r.userId, e);
    }
    for (const u of flagged) if (!byUser.has(u.id)) byUser.set(u.id, { roles: new Set(['admin']), grantedAt: null });
    const mobiles = await users.mobilesOf(byUser.keys());
    return [...byUser].map(([userId, e]) => {
      const mobile = mobiles.get(userId) ?? '';
      const byConfiguration = this.deps.operatorMobiles.includes(mobile);
      if (byConfiguration) e.roles.add('admin');
      return { userId, mobile, roles: [...e.roles], byConfiguration, grantedAt: e.grantedAt?.toISOString() ?? null };
    });
  }

  /**
   * Main accounts that are 管理员 by OPERATOR_MOBILES. (The flag without rows is not listed: the
   * migration turned every flag into a row; the flag alone is set only by older code and tests.)
   */
  private async flagged(): Promise<UserLike[]> {
    const found = await Promise.all(this.deps.operatorMobiles.map((m) => userByMobile(this.deps.db, m)));
    return found.filter((u): u is NonNullable<typeof u> => !!u && !u.isChild);
  }
}

async function mainAccount(tx: Executor, mobile: string) {
  const user = await userByMobile(tx, mobile);
  if (!user || user.isChild) throw new AppError('USER_NOT_FOUND', `手机号 ${mobile} 未注册`);
  return user;
}

export interface OperatorGuardDeps {
  auth: AuthGuards;
  roles: OperatorRoles;
  /** The token `npm start` sets once the server runs (main.ts), hence read at each request. */
  localOperatorToken: () => string | null;
}

/** Refuses unless the caller holds one of `permissions` (any of them); answers who acts. */
export type RequirePermission = (
  permissions: OperatorPermission | readonly OperatorPermission[],
  opts?: { accountOnly?: boolean },
) => (req: FastifyRequest) => Promise<OperatorActor>;

const actors = new WeakMap<FastifyRequest, OperatorActor>();
/** The operator the guard admitted on this request (for the audit trail). */
export const actorOf = (req: FastifyRequest): OperatorActor | undefined => actors.get(req);

/**
 * The one guard of the operator area. The local command (`npm run operator`, proving itself with the
 * token the running server wrote into DATA_DIR, from this machine only) holds every permission — it is
 * the machine's root — except where `accountOnly` asks for a logged-in operator.
 */
export function operatorGuard(deps: OperatorGuardDeps): RequirePermission {
  return (wanted, opts = {}) => {
    const any = typeof wanted === 'string' ? [wanted] : wanted;
    return async (req) => {
      const actor = await whoActs(deps, req, opts.accountOnly ?? false);
      if (!any.some((p) => actor.permissions.has(p))) {
        const what = any.map((p) => `「${OPERATOR_PERMISSION_LABELS[p]}」（${rolesWith(p)}）`).join('或');
        throw new AppError('PERMISSION_DENIED', actor.roles.length ? `需要运营权限${what}` : '需要运营方权限');
      }
      actors.set(req, actor);
      return actor;
    };
  };
}

async function whoActs(deps: OperatorGuardDeps, req: FastifyRequest, accountOnly: boolean): Promise<OperatorActor> {
  const local = req.headers['x-operator-token'];
  if (typeof local === 'string') {
    if (accountOnly) throw new AppError('PERMISSION_DENIED', '此操作需使用运营账号登录');
    const token = deps.localOperatorToken();
    if (token && LOOPBACK.has(req.socket.remoteAddress ?? '') && sameSecret(local, token)) return CLI_ACTOR;
    throw new AppError('PERMISSION_DENIED', '本机运维令牌无效');
  }
  await deps.auth.requireAuth(req, undefined as never);
  const user = req.session!.user;
  const roles = await deps.roles.rolesOf(user);
  return { userId: user.id, mobile: user.mobile ?? '', roles, permissions: new Set(permissionsOf(roles)) };
}
