/**
 * Who is calling. The token comes from `Authorization: Bearer` (what the console sends), a
 * `?token=` query (embedded pages) or the `jweToken` cookie. A state-changing request that only
 * carries the cookie is refused: a browser attaches cookies to cross-site requests, but never headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PermissionFlag } from '@console/contract';
import { SESSION_COOKIE, payerIdOf, seesPayerFinance } from '@console/contract';
import { AppError } from './errors.js';

/**
 * A request's session. Its type is the users module's, which declares `FastifyRequest.session`
 * (users/sessions.ts): every module's routes use these guards, so they name no module themselves.
 */
type RequestSession = NonNullable<FastifyRequest['session']>;

/** Opens a session token (the users module's SessionService). */
export interface SessionVerifier {
  verify(token: string): Promise<RequestSession>;
}

type TokenSource = 'header' | 'query' | 'cookie';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function findToken(request: FastifyRequest): { token: string; source: TokenSource } | null {
  const header = request.headers.authorization;
  if (header) {
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (m) return { token: m[1]!, source: 'header' };
  }
  // ?token= is how a page opened from elsewhere arrives logged in (spec §4); authenticate() takes it, like the cookie, for reading only.
  const query = (request.query as Record<string, unknown> | undefined)?.token;
  if (typeof query === 'string' && query) return { token: query, source: 'query' };
  const cookie = request.cookies?.[SESSION_COOKIE];
  if (cookie) return { token: cookie, source: 'cookie' };
  return null;
}

export function makeAuthGuards(sessions: SessionVerifier) {
  async function authenticate(request: FastifyRequest, required: boolean) {
    const found = findToken(request);
    if (!found) {
      if (required) throw new AppError('UNAUTHENTICATED');
      return;
    }
    if (found.source !== 'header' && !SAFE_METHODS.has(request.method)) {
      // A cookie or a ?token= never changes anything: only the header proves the console sent it.
      // A visitor-friendly route simply ignores a cookie it may not trust.
      if (required) throw new AppError('CSRF_HEADER_REQUIRED');
      return;
    }
    try {
      request.session = await sessions.verify(found.token);
    } catch (e) {
      if (required) throw e;
    }
  }

  return {
    /** preHandler: the caller must be logged in. */
    requireAuth: async (request: FastifyRequest, _reply: FastifyReply) => authenticate(request, true),
    /** preHandler: use the session when there is a valid one, carry on as a visitor otherwise. */
    optionalAuth: async (request: FastifyRequest, _reply: FastifyReply) => authenticate(request, false),
    /** onRequest: only a main account (a child cannot certify, verify as a student or manage children). */
    requireMainAccount: async (request: FastifyRequest, _reply: FastifyReply) => {
      await authenticate(request, true);
      if (request.session!.user.isChild) throw new AppError('MAIN_ACCOUNT_ONLY');
    },
    /** onRequest: the payer's money (balance, recharges, statement, gift credit): a main account, or a child granted 财务. */
    requireFinance: async (request: FastifyRequest, _reply: FastifyReply) => {
      await authenticate(request, true);
      if (!seesPayerFinance(request.session!.user)) throw new AppError('FINANCE_PERMISSION_REQUIRED');
    },
    /** preHandler factory: a child account needs the flag (spec §6); a main account has them all. */
    requirePermission:
      (...anyOf: PermissionFlag[]) =>
      async (request: FastifyRequest, reply: FastifyReply) => {
        if (!request.session) await authenticate(request, true);
        const user = request.session!.user;
        if (user.isChild && !anyOf.some((flag) => user[flag])) {
          throw new AppError('PERMISSION_DENIED', `需要权限：${anyOf.join(' 或 ')}`);
        }
        void reply;
      },
  };
}

export type AuthGuards = ReturnType<typeof makeAuthGuards>;

/** The logged-in user of a route that ran requireAuth. */
export function currentSession(request: FastifyRequest): RequestSession {
  if (!request.session) throw new AppError('UNAUTHENTICATED');
  return request.session;
}

/** Whose money a request spends: a child account spends its parent's balance (spec §1). */
export function payerOf(request: FastifyRequest): string {
  return payerIdOf(currentSession(request).user);
}

/**
 * Which of the payer's orders a request may see: all of them for a main account or a child granted
 * 财务, else only those the child created itself (`createdBy`).
 */
export function orderScopeOf(request: FastifyRequest): { payerId: string; createdBy?: string } {
  const user = currentSession(request).user;
  return seesPayerFinance(user) ? { payerId: payerIdOf(user) } : { payerId: payerIdOf(user), createdBy: user.id };
}
