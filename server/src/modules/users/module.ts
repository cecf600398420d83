/** The users module's wiring: accounts, child accounts, balance floors and the session cookie, with their routes. */
import type { FastifyReply } from 'fastify';
import { SESSION_COOKIE, SESSION_TTL_SECONDS } from '@console/contract';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { BalanceFloors } from './balance-floor.js';
import { childRoutes } from './children-routes.js';
import { ChildService } from './children.js';
import { userRoutes, type PayerMoneyFields, type SessionCookies } from './routes.js';
import { UserService } from './service.js';

type UserServiceDeps = ConstructorParameters<typeof UserService>[0];
type ChildServiceDeps = ConstructorParameters<typeof ChildService>[0];

export interface UsersModuleDeps extends UserServiceDeps {
  auth: AuthGuards;
  /** The user object's money fields (the gifts module's). */
  gifts: PayerMoneyFields;
  /** CHILD_ACCOUNT_LIMIT. */
  childLimit: number;
  /** What each child account spent against its limits (the orders module's). */
  spentOf: ChildServiceDeps['spentOf'];
  /** COOKIE_SECURE and COOKIE_DOMAIN: how the session cookie is set. */
  cookieSecure: boolean;
  cookieDomain: string | undefined;
  /** UPLOAD_MAX_BYTES: the largest logo. */
  uploadMaxBytes: number;
}

export function usersModule(deps: UsersModuleDeps) {
  const { auth, gifts, childLimit, spentOf, cookieSecure, cookieDomain, uploadMaxBytes, ...userDeps } = deps;
  const { db, clock, sessions, codes, storage } = deps;
  const users = new UserService(userDeps);
  const balanceFloors = new BalanceFloors({ db, clock });
  const children = new ChildService({ db, clock, sessions, limit: childLimit, spentOf });
  const cookies = sessionCookies(cookieSecure, cookieDomain);
  const routes: RoutesPlugin = async (app) => {
    await app.register(async (scope) => userRoutes(scope, { auth, users, sessions, codes, gifts, balanceFloors, storage, cookies, uploadMaxBytes }));
    await app.register(async (scope) => childRoutes(scope, { auth, children }));
  };
  return { users, balanceFloors, children, cookies, routes };
}

function sessionCookies(secure: boolean, domain: string | undefined): SessionCookies {
  const options = { httpOnly: true, sameSite: 'lax' as const, path: '/', secure, ...(domain ? { domain } : {}) };
  return {
    set: (reply: FastifyReply, token: string) => void reply.setCookie(SESSION_COOKIE, token, { ...options, maxAge: SESSION_TTL_SECONDS }),
    clear: (reply: FastifyReply) => void reply.clearCookie(SESSION_COOKIE, options),
  };
}
