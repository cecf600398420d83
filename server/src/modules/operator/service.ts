/**
 * What the operator does to accounts' money by hand: a credit (compensation from the platform's
 * compensation account to a user's cash or gift credit) or a debit (from the user's cash back to
 * it), with the operator and the reason on the ledger transfer and in the audit trail.
 *
 * Above the threshold (OPERATOR_APPROVAL_THRESHOLD_YUAN) a move by an operator who is not 管理员 is
 * only a request: another operator with 「审批」 approves it (never its requester) and only that
 * approval moves the money, once — the request's status changes from pending in the same
 * transaction that posts, so of two approvals at once one posts and the other finds it decided.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq } from 'drizzle-orm';
import { yuanToUnits, type MoneyMove, type MoneyRequest, type OperatorCredit } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { GiftService } from '../gifts/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { UserService } from '../users/index.js';
import type { AuditOrigin, OperatorAudit } from './audit.js';
import { CLI_ACTOR, isAdmin, type OperatorActor } from './roles.js';
import { operatorMoneyRequests } from './schema.js';

type RequestRow = typeof operatorMoneyRequests.$inferSelect;

interface Move {
  direction: 'credit' | 'debit';
  userId: string;
  to: 'cash' | 'gift';
  amount: bigint;
  giftValidDays: number;
  reason: string;
  key: string;
}

export interface OperatorServiceDeps {
  db: Db;
  ledger: LedgerService;
  gifts: GiftService;
  users: Pick<UserService, 'findByMobile' | 'mobilesOf'>;
  clock?: Clock;
  audit?: OperatorAudit;
  /** Above this (0.0001 yuan) a non-管理员's move waits for a second operator. */
  approvalThreshold?: bigint;
}

export class OperatorService {
  constructor(private deps: OperatorServiceDeps) {}

  get approvalThreshold() {
    return this.deps.approvalThreshold ?? yuanToUnits('1000');
  }

  /** The local command's and 管理员's credit (API.operatorCredit): never waits for approval. */
  async credit(req: OperatorCredit, operatorId: string | null, actor: OperatorActor = CLI_ACTOR, origin?: AuditOrigin) {
    const user = await this.mustFindUser(req.mobile);
    const move = this.moveOf({ ...req, direction: 'credit' }, user.id);
    const replayed = await this.deps.db.transaction(async (tx) => {
      const r = await this.post(tx, move, operatorId);
      if (!r && origin) await this.auditMove(tx, actor, origin, move, req.mobile);
      return r;
    });
    const balances = await this.deps.ledger.balances(user.id);
    return { userId: user.id, mobile: req.mobile, to: req.to, amount: String(move.amount), balance: String(balances[req.to]), replayed };
  }

  /** A credit or debit by an operator: done at once, or a pending request above the threshold for a non-管理员. */
  async move(req: MoneyMove, actor: OperatorActor, origin: AuditOrigin) {
    const user = await this.mustFindUser(req.mobile);
    const move = this.moveOf(req, user.id);
    if (!isAdmin(actor) && move.amount > this.approvalThreshold)
      return { state: 'pending' as const, balance: null, request: await this.request(move, actor, origin) };
    await this.deps.db.transaction(async (tx) => {
      const replayed = await this.post(tx, move, actor.userId);
      if (!replayed) await this.auditMove(tx, actor, origin, move, req.mobile);
    });
    const balances = await this.deps.ledger.balances(user.id);
    return { state: 'done' as const, balance: String(balances[req.to]), request: null };
  }

  async requests(status: RequestRow['status'] | undefined, page: number, pageSize: number) {
    const where = status ? eq(operatorMoneyRequests.status, status) : undefined;
    const [total] = await this.deps.db.select({ n: count() }).from(operatorMoneyRequests).where(where);
    const rows = await this.deps.db
      .select()
      .from(operatorMoneyRequests)
      .where(where)
      .orderBy(desc(operatorMoneyRequests.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return { items: await this.views(rows), total: total?.n ?? 0, page, pageSize };
  }

  /** Approves a pending request and moves its money, once; never its requester's own. */
  async approve(id: string, actor: OperatorActor, origin: AuditOrigin, reason: string) {
    return this.decide(id, actor, origin, reason, 'approved');
  }

  async reject(id: string, actor: OperatorActor, origin: AuditOrigin, reason: string) {
    return this.decide(id, actor, origin, reason, 'rejected');
  }

  private async decide(id: string, actor: OperatorActor, origin: AuditOrigin, reason: string, status: 'approved' | 'rejected') {
    const [found] = await this.deps.db.select().from(operatorMoneyRequests).where(eq(operatorMoneyRequests.id, id));
    if (!found) throw new AppError('RECORD_NOT_FOUND', '资金申请不存在');
    if (found.requestedBy === actor.userId) throw new AppError('MONEY_REQUEST_SELF_APPROVAL');
    if (found.status !== 'pending') throw new AppError('MONEY_REQUEST_DECIDED');
    const decided = await this.deps.db.transaction(async (tx) => {
      const [row] = await tx
        .update(operatorMoneyRequests)
        .set({ status, decidedBy: actor.userId, decidedAt: this.now(), decisionReason: reason })
        .where(and(eq(operatorMoneyRequests.id, id), eq(operatorMoneyRequests.status, 'pending')))
        .returning();
      // Another approver got there first (the row lock made this one wait and then match nothing).
      if (!row) throw new AppError('MONEY_REQUEST_DECIDED');
      if (status === 'approved') await this.post(tx, moveOfRow(row), row.requestedBy, '（经审批）');
      await this.audit().record(
        actor,
        origin,
        {
          action: status === 'approved' ? 'money.approve' : 'money.reject',
          targetType: 'money-request',
          targetId: row.id,
          before: { status: 'pending' },
          after: { status, direction: row.direction, userId: row.userId, to: row.account, amount: row.amount },
          reason: reason || row.reason,
        },
        tx,
      );
      return row;
    });
    return (await this.views([decided]))[0]!;
  }

  private async request(move: Move, actor: OperatorActor, origin: AuditOrigin): Promise<MoneyRequest> {
    const row = await this.deps.db.transaction(async (tx) => {
      const [created] = await tx
        .insert(operatorMoneyRequests)
        .values({
          id: randomUUID(),
          direction: move.direction,
          userId: move.userId,
          account: move.to,
          amount: move.amount,
          giftValidDays: move.giftValidDays,
          reason: move.reason,
          requestKey: move.key,
          status: 'pending',
          requestedBy: actor.userId!,
          createdAt: this.now(),
        })
        .onConflictDoNothing()
        .returning();
      if (!created) {
        // The same requestId again: the request it already made.
        const [existing] = await tx.select().from(operatorMoneyRequests).where(eq(operatorMoneyRequests.requestKey, move.key));
        return existing!;
      }
      await this.audit().record(
        actor,
        origin,
        {
          action: 'money.request',
          targetType: 'money-request',
          targetId: created.id,
          before: null,
          after: { userId: move.userId, direction: move.direction, to: move.to, amount: move.amount, status: 'pending' },
          reason: move.reason,
        },
        tx,
      );
      return created;
    });
    return (await this.views([row]))[0]!;
  }

  /** Posts the move on the ledger; true when this key had posted before (nothing moved now). */
  private async post(tx: Tx, move: Move, actorId: string | null, note = ''): Promise<boolean> {
    const memo = `${move.direction === 'credit' ? '平台补偿' : '平台扣款'}${note}：${move.reason}`;
    if (move.direction === 'credit' && move.to === 'gift') {
      const id = await this.deps.gifts.grant(tx, {
        userId: move.userId,
        amount: move.amount,
        source: 'compensation',
        validDays: move.giftValidDays,
        key: move.key,
        memo,
        actorId,
      });
      return id === null;
    }
    const sign = move.direction === 'credit' ? 1n : -1n;
    const posted = await this.deps.ledger.post(
      {
        key: move.key,
        kind: 'compensation',
        memo,
        actorId,
        legs: [
          { account: { platform: 'compensation' }, amount: -sign * move.amount },
          { account: { userId: move.userId, kind: 'cash' }, amount: sign * move.amount },
        ],
      },
      tx,
    );
    return posted.replayed;
  }

  private async auditMove(tx: Executor, actor: OperatorActor, origin: AuditOrigin, move: Move, mobile: string) {
    await this.audit().record(
      actor,
      origin,
      {
        action: move.direction === 'credit' ? 'money.credit' : 'money.debit',
        targetType: 'user',
        targetId: move.userId,
        before: null,
        after: { mobile, to: move.to, amount: move.amount, key: move.key },
        reason: move.reason,
      },
      tx,
    );
  }

  private moveOf(req: Omit<MoneyMove, 'direction'> & { direction: 'credit' | 'debit' }, userId: string): Move {
    const amount = yuanToUnits(req.amount);
    if (amount <= 0n) throw new AppError('VALIDATION_FAILED', 'amount：金额须大于 0');
    if (req.direction === 'debit' && req.to === 'gift') throw new AppError('VALIDATION_FAILED', 'to：扣款只能从现金账户扣除');
    return {
      direction: req.direction,
      userId,
      to: req.to,
      amount,
      giftValidDays: req.giftValidDays,
      reason: req.reason,
      key: `operator-credit:${req.requestId}`,
    };
  }

  private async mustFindUser(mobile: string) {
    const user = await this.deps.users.findByMobile(mobile);
    if (!user) throw new AppError('USER_NOT_FOUND', `手机号 ${mobile} 未注册`);
    return user;
  }

  private async views(rows: RequestRow[]): Promise<MoneyRequest[]> {
    const mobiles = await this.deps.users.mobilesOf(rows.flatMap((r) => [r.userId, r.requestedBy, ...(r.decidedBy ? [r.decidedBy] : [])]));
    return rows.map((r) => ({
      id: r.id,
      direction: r.direction,
      userId: r.userId,
      mobile: mobiles.get(r.userId) ?? '',
      to: r.account,
      amount: String(r.amount),
      reason: r.reason,
      status: r.status,
      requestedBy: mobiles.get(r.requestedBy) ?? '',
      requestedById: r.requestedBy,
      decidedBy: r.decidedBy ? (mobiles.get(r.decidedBy) ?? '') : null,
      decisionReason: r.decisionReason,
      createdAt: r.createdAt.toISOString(),
      decidedAt: r.decidedAt?.toISOString() ?? null,
    }));
  }

  private audit() {
    if (!this.deps.audit) throw new Error('OperatorService: no audit trail wired');
    return this.deps.audit;
  }

  private now() {
    return this.deps.clock?.now() ?? new Date();
  }
}

function moveOfRow(r: RequestRow): Move {
  return { direction: r.direction, userId: r.userId, to: r.account, amount: r.amount, giftValidDays: r.giftValidDays, reason: r.reason, key: r.requestKey };
}
