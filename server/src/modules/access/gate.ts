/**
 * Who may reach into a running instance (web terminal now; SSH, notebook, service port and desktop
 * later), and for how long: the session must be valid and the user must manage the instance (its
 * owner, or a child with the category's permission, spec §6). A connection is admitted once and then
 * watched: logging out, the session being revoked, the child losing the permission or the instance
 * leaving 运行中 closes it: at once on the events every replica hears (`onChange`: logout, a session
 * revoked, rights changed, in whichever replica), and within `RECHECK_MS` for what no event tells
 * (the instance stopped) or an event a replica missed (its bus listener was reconnecting).
 */
import { SESSION_COOKIE, type Instance } from '@console/contract';
import type { FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../../http/errors.js';
import { currentSession } from '../../http/auth.js';
import type { SessionService, UserRow } from '../users/index.js';

const RECHECK_MS = 2000;
/** A revocation inside a transaction is visible after its commit: the second look after an event. */
const AFTER_COMMIT_MS = 300;

/** A connection into an instance, as the gate sees it. */
export interface LiveAccess {
  /** The session token it was admitted with. */
  token: string;
  instanceId: string;
  /** Ends the connection, telling the user why. */
  close(reason: string): void;
  /**
   * Why it may no longer stay open, or null, for a connection admitted by something other than a
   * session (a program's API token): replaces the session's check.
   */
  lapsed?: () => Promise<string | null>;
}

export interface AccessGateDeps {
  sessions: SessionService;
  /** The instance as its user may see it (throws when the user may not). */
  instanceOf(user: UserRow, id: string): Promise<Instance>;
  /**
   * Tells of something that may end connections, in any replica (logout, a session revoked, a child's
   * rights changed, an API token replaced): subscribes, returning the unsubscribe.
   */
  onChange?: (listener: () => void) => () => void;
}

export class AccessGate {
  private readonly live = new Set<LiveAccess>();
  private readonly timer: NodeJS.Timeout;
  private checking: Promise<void> | null = null;
  private again = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: AccessGateDeps) {
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
    this.unsubscribe = deps.onChange?.(() => this.recheckSoon()) ?? (() => {});
  }

  /**
   * The instance a request may reach: 403 for one that is not the caller's (or does not exist: no
   * telling which), 409 when it is not running. Runs after requireAuth.
   */
  async admit(request: FastifyRequest, instanceId: string): Promise<Instance> {
    checkOrigin(request);
    const instance = await this.instanceFor(currentSession(request).user, instanceId);
    if (instance.status !== 'Running') throw new AppError('INSTANCE_NOT_RUNNING');
    return instance;
  }

  /**
   * As `admit`, for pages a browser opens in a tab of their own (the notebook): the session comes
   * from a cookie — the console's (`token` absent) or the one the machine origin sealed it in — never
   * from a header or the page's own `?token=` (the notebook's, not a console session).
   * Returns the token the connection is watched with.
   */
  async admitBrowser(request: FastifyRequest, instanceId: string, token = request.cookies?.[SESSION_COOKIE]): Promise<{ instance: Instance; token: string }> {
    if (!token) throw new AppError('UNAUTHENTICATED', '请先在控制台登录，再从实例的登录信息中打开');
    request.session = await this.deps.sessions.verify(token);
    return { instance: await this.admit(request, instanceId), token };
  }

  /** Watches an admitted connection until `forget`. */
  watch(access: LiveAccess): void {
    this.live.add(access);
  }

  forget(access: LiveAccess): void {
    this.live.delete(access);
  }

  /**
   * Something that may end connections happened (logout, a child's rights changed): look now, and
   * once more shortly after, since the change may still be inside its transaction.
   */
  recheckSoon(): void {
    for (const delay of [0, AFTER_COMMIT_MS]) setTimeout(() => void this.recheck(), delay).unref();
  }

  /** Closes every connection whose session or right has lapsed; a call while a look is under way makes another follow it. */
  async recheck(): Promise<void> {
    if (this.checking) {
      this.again = true; // a look under way may have passed the connection this is about
      return this.checking;
    }
    this.checking = this.checkAll().finally(() => (this.checking = null));
    await this.checking;
    if (this.again) {
      this.again = false;
      await this.recheck();
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe();
    for (const access of this.live) access.close('服务器正在停止');
    this.live.clear();
  }

  private async checkAll() {
    await Promise.all(
      [...this.live].map(async (access) => {
        const reason = await this.lapsed(access);
        if (reason && this.live.delete(access)) access.close(reason);
      }),
    );
  }

  /** Why a connection may no longer stay open, or null when it may. */
  private async lapsed(access: LiveAccess): Promise<string | null> {
    if (access.lapsed) return access.lapsed();
    try {
      const { user } = await this.deps.sessions.verify(access.token);
      const instance = await this.instanceFor(user, access.instanceId);
      return instance.status === 'Running' ? null : '实例已不在运行中，连接已关闭';
    } catch (e) {
      if (isAppError(e, 'PERMISSION_DENIED')) return '已没有访问该实例的权限，连接已关闭';
      if (e instanceof AppError) return `${e.message}，连接已关闭`;
      return null; // a database hiccup is not a reason to cut a user off; the next look decides
    }
  }

  private async instanceFor(user: UserRow, instanceId: string): Promise<Instance> {
    try {
      return await this.deps.instanceOf(user, instanceId);
    } catch (e) {
      if (isAppError(e, 'RECORD_NOT_FOUND') || isAppError(e, 'PERMISSION_DENIED')) {
        throw new AppError('PERMISSION_DENIED', '无权访问该实例：只能打开自己（或主账号授权给你）的实例');
      }
      throw e;
    }
  }
}

/**
 * A WebSocket is not bound by CORS: a page elsewhere could open one with the user's cookie (the
 * cookie is SameSite=Lax, which browsers already withhold there). The Origin a browser sends must be
 * this console's own host.
 */
function checkOrigin(request: FastifyRequest) {
  const origin = request.headers.origin;
  if (!origin) return;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new AppError('PERMISSION_DENIED', '来源无效，已拒绝连接');
  }
  if (host !== request.headers.host) throw new AppError('PERMISSION_DENIED', '跨站连接已拒绝：请在控制台页面中打开');
}
