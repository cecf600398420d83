/**
 * The API token of an instance's ComfyUI: how programs (ComfyUI clients, scripts) reach it without a
 * browser cookie. One per instance, made on request from the instance page, shown to whoever may
 * manage the instance (stored sealed like the machine password), replaced or revoked there; a
 * replaced or revoked token is refused from the next request on, and its open websockets are closed.
 *
 * The token names its instance (`cui_<instance id>_<secret>`), so a program can also use it where the
 * instance's own host name does not resolve (`*.localhost` outside browsers): see machine-proxy.ts.
 * Every request is checked again: the token is the instance's current one (compared in constant
 * time), the instance is not released and its account not disabled.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { eq } from 'drizzle-orm';
import { API, appTokenSchema, instanceIdParamsSchema, type AppToken } from '@console/contract';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { UserRow } from '../users/index.js';
import { instances } from './schema.js';
import type { PasswordBox } from './secrets.js';
import { findManaged } from './views.js';

const TOKEN = /^cui_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export interface AppTokenDeps {
  db: Db;
  passwords: PasswordBox;
  /** Where programs reach an instance's app (its own origin), or null where apps are not offered. */
  apiUrlOf: (instanceId: string) => string | null;
  /** Whether the account (the instance's owner) is disabled, or gone. */
  accountDisabled: (userId: string) => Promise<boolean>;
}

/** What a presented token opens: the instance, while it stays the instance's current token. */
export interface AppTokenGrant {
  instanceId: string;
  status: string;
  applicationId: string | null;
}

export class AppTokens {
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly deps: AppTokenDeps) {}

  /** Called after a token was replaced or revoked (the access gate closes what it opened). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async show(user: UserRow, instanceId: string): Promise<AppToken> {
    const row = await findManaged(this.deps.db, user, instanceId);
    return this.view(row.id, row.applicationId, row.appTokenEnc);
  }

  /** A new token for the instance's ComfyUI; the one before stops working at once. */
  async issue(user: UserRow, instanceId: string): Promise<AppToken> {
    const row = await findManaged(this.deps.db, user, instanceId);
    if (row.applicationId !== 'comfyui') throw new AppError('APP_UNAVAILABLE', '只有 ComfyUI 应用实例有 API 令牌');
    const token = `cui_${row.id.replace(/-/g, '')}_${randomBytes(32).toString('base64url')}`;
    const sealed = this.deps.passwords.seal(token);
    await this.deps.db.update(instances).set({ appTokenEnc: sealed }).where(eq(instances.id, row.id));
    this.changed();
    return this.view(row.id, row.applicationId, sealed);
  }

  async revoke(user: UserRow, instanceId: string): Promise<AppToken> {
    const row = await findManaged(this.deps.db, user, instanceId);
    await this.deps.db.update(instances).set({ appTokenEnc: null }).where(eq(instances.id, row.id));
    this.changed();
    return this.view(row.id, row.applicationId, null);
  }

  /**
   * The instance a presented token opens. `hostInstanceId` is the instance whose own origin the
   * request came to (null on a shared host): a token of another instance is refused there.
   * Throws 401 APP_TOKEN_INVALID for a token that is not some instance's current one, 403 when its
   * account is disabled.
   */
  async admit(presented: string, hostInstanceId: string | null): Promise<AppTokenGrant> {
    const m = TOKEN.exec(presented);
    if (!m) throw new AppError('APP_TOKEN_INVALID');
    const hex = m[1]!;
    const instanceId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    if (hostInstanceId !== null && hostInstanceId !== instanceId) throw new AppError('APP_TOKEN_INVALID', '令牌属于另一个实例');
    const [row] = await this.deps.db
      .select({
        enc: instances.appTokenEnc,
        status: instances.status,
        releasedAt: instances.releasedAt,
        applicationId: instances.applicationId,
        userId: instances.userId,
      })
      .from(instances)
      .where(eq(instances.id, instanceId));
    if (!row?.enc || row.releasedAt || !sameSecret(presented, this.deps.passwords.open(row.enc))) throw new AppError('APP_TOKEN_INVALID');
    if (await this.deps.accountDisabled(row.userId)) throw new AppError('ACCOUNT_DISABLED');
    return { instanceId, status: row.status, applicationId: row.applicationId };
  }

  private view(instanceId: string, applicationId: string | null, sealed: string | null): AppToken {
    return {
      token: sealed ? this.deps.passwords.open(sealed) : null,
      apiUrl: applicationId === 'comfyui' ? this.deps.apiUrlOf(instanceId) : null,
    };
  }

  private changed() {
    for (const l of this.listeners) l();
  }
}

/** Equal strings, in time that does not depend on where they differ (digests of equal length). */
function sameSecret(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

export async function appTokenRoutes(app: FastifyInstance, { auth, appTokens }: { auth: AuthGuards; appTokens: AppTokens }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const common = { tags: ['实例'], params: instanceIdParamsSchema, response: { 200: appTokenSchema } };
  const { requireAuth } = auth;
  r.get(API.instanceAppToken, { schema: { ...common, summary: 'ComfyUI 的 API 令牌（供程序访问）' }, onRequest: requireAuth }, async (req) =>
    appTokens.show(currentSession(req).user, req.params.id),
  );
  r.post(API.instanceAppToken, { schema: { ...common, summary: '生成新的 API 令牌（旧令牌立即失效）' }, onRequest: requireAuth }, async (req) =>
    appTokens.issue(currentSession(req).user, req.params.id),
  );
  r.delete(API.instanceAppToken, { schema: { ...common, summary: '吊销 API 令牌（用它打开的连接随即断开）' }, onRequest: requireAuth }, async (req) =>
    appTokens.revoke(currentSession(req).user, req.params.id),
  );
}
