/**
 * Sessions of DESIGN.md: a JWE (dir + A256GCM) carrying the session id, backed by a row so that
 * logout and password changes revoke it before the token itself expires.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, isNull, ne } from 'drizzle-orm';
import { EncryptJWT, jwtDecrypt } from 'jose';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { sessions, users } from '../../db/schema.js';
import { AppError } from '../../http/errors.js';

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;
export const SESSION_COOKIE = 'jweToken';

export type UserRow = typeof users.$inferSelect;
export interface ActiveSession {
  sessionId: string;
  user: UserRow;
}

export class SessionService {
  constructor(
    private db: Db,
    private key: Uint8Array,
    private clock: Clock,
  ) {}

  async issue(userId: string, meta: { ip: string; userAgent: string }, exec: Executor = this.db): Promise<string> {
    const now = this.clock.now();
    const id = randomUUID();
    const expiresAt = new Date(now.getTime() + SESSION_TTL_SECONDS * 1000);
    await exec.insert(sessions).values({ id, userId, createdAt: now, expiresAt, ip: meta.ip, userAgent: meta.userAgent.slice(0, 500) });
    return new EncryptJWT({ sid: id })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt(Math.floor(now.getTime() / 1000))
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .encrypt(this.key);
  }

  /** Resolves a token to its live session and user, or throws the 401/403 code that says why not. */
  async verify(token: string): Promise<ActiveSession> {
    const now = this.clock.now();
    let sid: unknown;
    try {
      const { payload } = await jwtDecrypt(token, this.key, { currentDate: now, keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
      sid = payload.sid;
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_JWT_EXPIRED') throw new AppError('SESSION_EXPIRED');
      throw new AppError('TOKEN_INVALID');
    }
    if (typeof sid !== 'string') throw new AppError('TOKEN_INVALID');
    const [row] = await this.db
      .select({ session: sessions, user: users })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(eq(sessions.id, sid));
    if (!row) throw new AppError('TOKEN_INVALID');
    if (row.session.revokedAt) throw new AppError('SESSION_REVOKED');
    if (row.session.expiresAt <= now) throw new AppError('SESSION_EXPIRED');
    if (row.user.disabled) throw new AppError('ACCOUNT_DISABLED');
    return { sessionId: sid, user: row.user };
  }

  async revoke(sessionId: string, reason: string, exec: Executor = this.db) {
    await exec
      .update(sessions)
      .set({ revokedAt: this.clock.now(), revokedReason: reason })
      .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
  }

  /** Ends every session of a user, optionally keeping the one making the change. */
  async revokeAll(userId: string, reason: string, exec: Executor = this.db, exceptSessionId?: string) {
    const conditions = [eq(sessions.userId, userId), isNull(sessions.revokedAt)];
    if (exceptSessionId) conditions.push(ne(sessions.id, exceptSessionId));
    await exec.update(sessions).set({ revokedAt: this.clock.now(), revokedReason: reason }).where(and(...conditions));
  }
}
