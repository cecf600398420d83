/**
 * Where the machines' web services (JupyterLab, 自定义服务) live in the browser: on an origin that is
 * not the console's. Code running in a machine serves those pages; on the console's origin they
 * could read the console's token from its storage and act as the user (a child's machine acting
 * as the main account). So they are served by a listener of their own (MACHINE_PORT), and each
 * instance gets an origin of its own where the host allows it (`{id}.localhost`, `{id}.m.example.com`),
 * so one machine's pages cannot reach another's notebook either.
 *
 * The way in: the console's `/jupyter/<id>/…` and `/service/<id>/…` are doors. The browser arrives
 * there with its console cookie; the door checks the session and the right to the instance and
 * sends the browser to the machine origin with a ticket (sealed, one use, 60 s). The machine origin
 * trades the ticket for a cookie of its own, sealed and bound to that instance, and every request
 * there is checked again with the session inside it — logging out ends it at once.
 */
import { hkdfSync, randomUUID } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';
import { SESSION_TTL_SECONDS } from '@console/contract';
import type { Counters } from '../../drivers/counters/index.js';
import type { Clock } from '../../clock.js';
import { AppError } from '../../http/errors.js';

const TICKET_SECONDS = 60;
/** Where a ticket is traded for the machine origin's cookie. */
export const ENTER_PATH = '/_console/enter';

interface Sealed {
  /** The console session the access rides on (checked on every request). */
  tok: string;
  iid: string;
  /** Ticket only: where to go after entering. */
  to?: string;
  /** Ticket only: its one use. */
  jti?: string;
}

export interface MachineOriginOptions {
  /** MACHINE_BASE_URL (may hold `{id}`), or null to derive from the console's address. */
  baseUrl: string | null;
  publicBaseUrl: string;
  sessionKey: Uint8Array;
  clock: Clock;
  /**
   * Where every replica marks a ticket used (drivers/counters), so a ticket opens once across all of
   * them, not once per replica; without, this process's memory only.
   */
  counters?: Pick<Counters, 'take'>;
}

export class MachineOrigins {
  /** The port the machine listener took (MACHINE_PORT, or the free one it got for 0); 0 until it listens. */
  port = 0;
  private readonly key: Uint8Array;
  /** Tickets used, until they would have expired anyway. */
  private readonly spent = new Map<string, number>();

  constructor(private readonly opts: MachineOriginOptions) {
    this.key = new Uint8Array(hkdfSync('sha256', opts.sessionKey, 'machine-origin', 'ticket-and-cookie', 32));
  }

  /**
   * Whether browsers can be sent to the machines: an origin per instance (`{id}` in MACHINE_BASE_URL,
   * or a console on localhost), or one the operator chose to share (MACHINE_BASE_URL without `{id}`).
   * A console elsewhere with neither has no safe place for them: the links are not offered.
   */
  get configured(): boolean {
    return this.opts.baseUrl !== null || new URL(this.opts.publicBaseUrl).hostname === 'localhost';
  }

  /** Whether the listener is up and the machines can be reached now. */
  get reachable(): boolean {
    return this.configured && (this.port > 0 || this.opts.baseUrl !== null);
  }

  /** The URL template in force: `{id}` in the host gives one origin per instance. */
  get template(): string {
    if (this.opts.baseUrl) return this.opts.baseUrl.replace(/\/$/, '');
    // The listener speaks plain HTTP; a console on localhost reaches it at {id}.localhost.
    return `http://{id}.localhost:${this.port}`;
  }

  /** True when every instance has an origin of its own. */
  get perInstance(): boolean {
    return this.template.includes('{id}');
  }

  /** The instance whose own origin a request came to (per-instance origins only). */
  instanceOfHost(host: string | undefined): string | null {
    if (!this.perInstance || !host) return null;
    const [before, after] = new URL(this.template.replace('{id}', 'x0instance0x')).host.split('x0instance0x');
    const h = host.toLowerCase();
    if (!h.startsWith(before!) || !h.endsWith(after!)) return null;
    const id = h.slice(before!.length, h.length - after!.length);
    return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id) ? id : null;
  }

  originOf(instanceId: string): string {
    return this.template.replace('{id}', instanceId);
  }

  /**
   * Whether a request came to the instance's own origin. Per instance, a ticket or a cookie of one
   * instance must never be used under another's host: a page there would run beside its notebook.
   */
  isOriginOf(host: string | undefined, instanceId: string): boolean {
    if (!this.perInstance) return true;
    return (host ?? '').toLowerCase() === new URL(this.originOf(instanceId)).host;
  }

  /**
   * The machine origin's cookie for one instance (per instance, so a shared origin holds several).
   * Over https the `__Host-` prefix: no sibling host can plant one with a `Domain`.
   */
  cookieName(instanceId: string): string {
    return `${this.secure ? '__Host-' : ''}machine-${instanceId}`;
  }

  get secure(): boolean {
    return this.template.startsWith('https:');
  }

  /** Where the door sends an admitted browser: `to` on the instance's origin, through a ticket. */
  async entryUrl(token: string, instanceId: string, to: string): Promise<string> {
    const ticket = await this.seal({ tok: token, iid: instanceId, to, jti: randomUUID() }, TICKET_SECONDS);
    return `${this.originOf(instanceId)}${ENTER_PATH}?ticket=${encodeURIComponent(ticket)}`;
  }

  /** A ticket's content, once: a second use, an expired or a forged ticket is refused. */
  async redeem(ticket: string): Promise<{ token: string; instanceId: string; to: string; cookie: string }> {
    const t = await this.open(ticket);
    if (!t.jti || !t.to || this.spent.has(t.jti)) throw new AppError('UNAUTHENTICATED', '链接已使用或已过期：请回到控制台重新打开');
    const now = this.opts.clock.now().getTime();
    this.forgetSpent();
    this.spent.set(t.jti, now + TICKET_SECONDS * 1000);
    if (this.opts.counters) {
      // Used once across the replicas: counted for longer than the ticket lives.
      const used = await this.opts.counters
        .take([{ key: `machine-ticket:${t.jti}`, limit: 1, amount: 1, windowMs: (TICKET_SECONDS + 1) * 1000 }], now)
        .catch(() => null);
      if (!used) throw new AppError('UNAUTHENTICATED', '暂时无法核验链接：请稍后回到控制台重新打开');
      if (!used.ok) throw new AppError('UNAUTHENTICATED', '链接已使用或已过期：请回到控制台重新打开');
    }
    const cookie = await this.seal({ tok: t.tok, iid: t.iid }, SESSION_TTL_SECONDS);
    return { token: t.tok, instanceId: t.iid, to: t.to, cookie };
  }

  /** The console session behind a machine cookie, which must be the given instance's. */
  async sessionOf(cookie: string | undefined, instanceId: string): Promise<string> {
    if (!cookie) throw new AppError('UNAUTHENTICATED', '请从控制台实例的登录信息中打开');
    const c = await this.open(cookie);
    if (c.iid !== instanceId || c.to) throw new AppError('UNAUTHENTICATED', '请从控制台实例的登录信息中打开');
    return c.tok;
  }

  private async seal(content: Sealed, seconds: number): Promise<string> {
    const now = Math.floor(this.opts.clock.now().getTime() / 1000);
    return new EncryptJWT({ ...content })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt(now)
      .setExpirationTime(now + seconds)
      .encrypt(this.key);
  }

  private async open(sealed: string): Promise<Sealed> {
    try {
      const { payload } = await jwtDecrypt(sealed, this.key, {
        currentDate: this.opts.clock.now(),
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      if (typeof payload.tok !== 'string' || typeof payload.iid !== 'string') throw new Error('shape');
      return payload as unknown as Sealed;
    } catch {
      throw new AppError('UNAUTHENTICATED', '登录已失效或链接已过期：请回到控制台重新打开');
    }
  }

  private forgetSpent() {
    const now = this.opts.clock.now().getTime();
    for (const [jti, until] of this.spent) if (until <= now) this.spent.delete(jti);
  }
}
