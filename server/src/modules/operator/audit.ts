/**
 * The operator audit trail: every operator action with who, when, what (action and target), the
 * state before and after, the reason, and the request's id and address. Rows are only ever inserted
 * (the table's trigger refuses UPDATE, DELETE and TRUNCATE); a money move writes its row in the
 * same transaction as the move, so one never exists without the other.
 */
import type { FastifyRequest } from 'fastify';
import { and, count, desc, eq, gte, lte, type SQL } from 'drizzle-orm';
import type { AuditEntry, AuditQuery } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { userByMobile, type UserService } from '../users/index.js';
import type { OperatorActor } from './roles.js';
import { operatorAudit } from './schema.js';

export interface AuditEvent {
  action: string;
  targetType: string;
  targetId: string;
  before?: unknown;
  after?: unknown;
  reason?: string;
}

/** Where an action came from: the request's id and the caller's address. */
export interface AuditOrigin {
  requestId: string;
  ip: string;
}

export const originOf = (req: FastifyRequest): AuditOrigin => ({ requestId: String(req.id), ip: req.ip });

/** JSON for jsonb: bigints as strings, undefined as null, secrets never. */
function plain(value: unknown): unknown {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value, (k, v: unknown) => (k === 'apiKey' ? '（已隐藏）' : typeof v === 'bigint' ? v.toString() : v)));
}

export class OperatorAudit {
  constructor(private deps: { db: Db; clock: Clock; users: Pick<UserService, 'mobilesOf'> }) {}

  async record(actor: OperatorActor, origin: AuditOrigin, event: AuditEvent, tx: Executor = this.deps.db) {
    await tx.insert(operatorAudit).values({
      at: this.deps.clock.now(),
      actorId: actor.userId,
      actorMobile: actor.mobile,
      action: event.action,
      targetType: event.targetType,
      targetId: event.targetId,
      before: plain(event.before),
      after: plain(event.after),
      reason: event.reason ?? '',
      requestId: origin.requestId,
      ip: origin.ip,
    });
  }

  /** Newest first; by operator (a mobile, or 'cli'), action, target id and time. */
  async search(q: AuditQuery): Promise<{ items: AuditEntry[]; total: number; page: number; pageSize: number }> {
    const where = await this.filters(q);
    if (where === null) return { items: [], total: 0, page: q.page, pageSize: q.pageSize };
    const [total] = await this.deps.db.select({ n: count() }).from(operatorAudit).where(where);
    const rows = await this.deps.db
      .select()
      .from(operatorAudit)
      .where(where)
      .orderBy(desc(operatorAudit.at), desc(operatorAudit.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize);
    return { items: rows.map(entryOf), total: total?.n ?? 0, page: q.page, pageSize: q.pageSize };
  }

  /** The conditions of `q`; null when the operator asked for cannot have any row. */
  private async filters(q: AuditQuery): Promise<SQL | undefined | null> {
    const conds: SQL[] = [];
    if (q.actor === 'cli') conds.push(eq(operatorAudit.actorMobile, ''));
    else if (q.actor) {
      const user = await userByMobile(this.deps.db, q.actor);
      if (!user) return null;
      conds.push(eq(operatorAudit.actorId, user.id));
    }
    if (q.action) conds.push(eq(operatorAudit.action, q.action));
    if (q.target) conds.push(eq(operatorAudit.targetId, q.target));
    if (q.from) conds.push(gte(operatorAudit.at, new Date(q.from)));
    if (q.to) conds.push(lte(operatorAudit.at, new Date(q.to)));
    return conds.length ? and(...conds) : undefined;
  }
}

function entryOf(r: typeof operatorAudit.$inferSelect): AuditEntry {
  return {
    id: String(r.id),
    at: r.at.toISOString(),
    actorId: r.actorId,
    actor: r.actorId ? r.actorMobile : '本机命令行',
    action: r.action,
    targetType: r.targetType,
    targetId: r.targetId,
    before: r.before,
    after: r.after,
    reason: r.reason,
    requestId: r.requestId,
    ip: r.ip,
  };
}
