/**
 * Sessions of DESIGN.md: a JWE (dir + A256GCM) carrying the session id, backed by a row so that
 * logout and password changes revoke it before the token itself expires.
 */
import { SESSION_TTL_SECONDS } from '@console/contract';
import { randomUUID } from 'node:crypto';
import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { EncryptJWT, jwtDecrypt } from 'jose';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { pgArray } from '../../db/arrays.js';
import { FreshReads } from '../../db/fresh-reads.js';
import { sessions, users } from './schema.js';
import { AppError } from '../../http/errors.js';

export type UserRow = typeof users.$inferSelect;
export interface ActiveSession {
  sessionId: string;
  user: UserRow;
}

// Every request carries its session (app.ts decorates it, http/auth.ts sets it): declared here, where
// sessions are, so that the guards every module's routes use import no module.
declare module 'fastify' {
  interface FastifyRequest {
    session: ActiveSession | null;
  }
}

interface OpenedToken {
  sid: string;
  /** Expiry, seconds since the epoch (the token's `exp`). */
  exp: number;
}
interface SessionRow {
  session: typeof sessions.$inferSelect;
  user: UserRow;
  parentDisabled: boolean | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Decrypted tokens remembered per process (about 300 bytes each); the oldest make room. */
const OPENED_TOKENS_KEPT = 10_000;

/** Sessions by id with their user and whether that user's parent is disabled, built once (PostgreSQL keeps its plan). */
function sessionRowsQuery(db: Db) {
  const parent = alias(users, 'parent');
  return db
    .select({ session: sessions, user: users, parentDisabled: parent.disabled })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(parent, eq(parent.id, users.parentId))
    .where(sql`${sessions.id} = any(${sql.placeholder('ids')}::uuid[])`)
    .prepare('session_rows');
}

export class SessionService {
  private opened = new Map<string, OpenedToken>();
  private rows = new FreshReads((ids: string[]) => this.loadRows(ids));
  private rowsQuery: ReturnType<typeof sessionRowsQuery>;
  private readonly revokeListeners: (() => void)[] = [];

  constructor(
    private db: Db,
    private key: Uint8Array,
    private clock: Clock,
  ) {
    this.rowsQuery = sessionRowsQuery(db);
  }

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

  /**
   * Resolves a token to its live session and user, or throws the 401/403 code that says why not.
   *
   * Every call reads the session, its user and the parent of a child from the database, through
   * {@link FreshReads}: concurrent calls share one statement, but each is answered by a statement
   * that started after it was made. So whatever a writer changed and committed before this request
   * arrived — a logout, a password change, a disabled account or parent, a child's permissions, a
   * certification, in this process or any other on the same database — is what this request sees;
   * no writer has to remember to invalidate anything. Only the decryption is remembered, since a
   * token's content never changes.
   *
   * Why not a cache of sessions invalidated by LISTEN/NOTIFY: a revocation commits and answers its
   * caller before another process has necessarily received the notification, so that process's
   * next request could still be admitted. Closing that gap takes one statement per request that
   * starts after the request arrived — and that statement may as well read the row itself.
   */
  async verify(token: string): Promise<ActiveSession> {
    const now = this.clock.now();
    const sid = (await this.open(token, now)).sid;
    const row = await this.rows.load(sid);
    if (!row) throw new AppError('TOKEN_INVALID');
    if (row.session.revokedAt) throw new AppError('SESSION_REVOKED');
    if (row.session.expiresAt <= now) throw new AppError('SESSION_EXPIRED');
    if (row.user.disabled) throw new AppError('ACCOUNT_DISABLED');
    if (row.parentDisabled) throw new AppError('ACCOUNT_DISABLED', '主账号已停用');
    return { sessionId: sid, user: row.user };
  }

  /** The session id inside a token; a token seen before skips the AES-GCM work, never the expiry. */
  private async open(token: string, now: Date): Promise<OpenedToken> {
    const known = this.opened.get(token);
    if (known) {
      if (known.exp <= Math.floor(now.getTime() / 1000)) {
        this.opened.delete(token);
        throw new AppError('SESSION_EXPIRED');
      }
      return known;
    }
    let payload: { sid?: unknown; exp?: unknown };
    try {
      ({ payload } = await jwtDecrypt(token, this.key, { currentDate: now, keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] }));
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_JWT_EXPIRED') throw new AppError('SESSION_EXPIRED');
      throw new AppError('TOKEN_INVALID');
    }
    // Only ids this server wrote get here (the token is authenticated); the shape check keeps one odd value from failing a whole batch.
    if (typeof payload.sid !== 'string' || !UUID.test(payload.sid) || typeof payload.exp !== 'number') throw new AppError('TOKEN_INVALID');
    const opened = { sid: payload.sid, exp: payload.exp };
    if (this.opened.size >= OPENED_TOKENS_KEPT) this.opened.delete(this.opened.keys().next().value!);
    this.opened.set(token, opened);
    return opened;
  }

  private async loadRows(ids: string[]): Promise<Map<string, SessionRow>> {
    const rows = await this.rowsQuery.execute({ ids: pgArray(ids) });
    return new Map(rows.map((r) => [r.session.id, r]));
  }

  /** Told after this process revoked sessions (the revocation may still be inside its transaction). */
  onRevoke(listener: () => void): void {
    this.revokeListeners.push(listener);
  }

  private revoked() {
    for (const l of this.revokeListeners) l();
  }

  async revoke(sessionId: string, reason: string, exec: Executor = this.db) {
    await exec
      .update(sessions)
      .set({ revokedAt: this.clock.now(), revokedReason: reason })
      .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
    this.revoked();
  }

  /** Ends every session of a user, optionally keeping the one making the change. */
  async revokeAll(userId: string, reason: string, exec: Executor = this.db, exceptSessionId?: string) {
    const conditions = [eq(sessions.userId, userId), isNull(sessions.revokedAt)];
    if (exceptSessionId) conditions.push(ne(sessions.id, exceptSessionId));
    await exec
      .update(sessions)
      .set({ revokedAt: this.clock.now(), revokedReason: reason })
      .where(and(...conditions));
    this.revoked();
  }
}
