/**
 * Child accounts (spec §3/§6): created by a main account, logging in with the parent's
 * mobile number and their own name, spending the parent's balance, holding only the permission
 * flags they were granted. A deleted child keeps its row (operation logs still name it) and frees
 * its name; its sessions end at once, as they do when it is disabled or its password changes.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, inArray, isNotNull, isNull, max } from 'drizzle-orm';
import { PERMISSION_FLAGS, isStrongPassword, type Child, type ChildPermissions, type PermissionFlag, type SpendLimit } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { sessions as sessionsTable, users } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { SessionService, UserRow } from './sessions.js';
import { hashPassword } from './passwords.js';

/** What each child spent of its parent's balance this Beijing month and in total (the orders module knows). */
export type ChildSpentLookup = (childIds: string[]) => Promise<Map<string, { month: bigint; total: bigint }>>;

export class ChildService {
  private readonly changeListeners: ((childId: string) => void)[] = [];

  constructor(private deps: { db: Db; clock: Clock; sessions: SessionService; limit: number; spentOf?: ChildSpentLookup }) {}

  /** Told after a child's state (disabled, permissions, removed) changed in this process: caches of it drop it. */
  onChange(listener: (childId: string) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(childId: string) {
    for (const l of this.changeListeners) l(childId);
  }

  async list(parentId: string, page: number, pageSize: number) {
    const live = and(eq(users.parentId, parentId), eq(users.isChild, true), isNull(users.deletedAt));
    const [total] = await this.deps.db.select({ n: count() }).from(users).where(live);
    const rows = await this.deps.db
      .select()
      .from(users)
      .where(live)
      .orderBy(desc(users.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    const logins = rows.length
      ? await this.deps.db
          .select({ userId: sessionsTable.userId, at: max(sessionsTable.createdAt) })
          .from(sessionsTable)
          .where(
            inArray(
              sessionsTable.userId,
              rows.map((r) => r.id),
            ),
          )
          .groupBy(sessionsTable.userId)
      : [];
    const lastLogin = new Map(logins.map((l) => [l.userId, l.at]));
    const spent = await this.spentOf(rows.map((r) => r.id));
    return { items: rows.map((r) => toChild(r, lastLogin.get(r.id) ?? null, spent.get(r.id))), total: total?.n ?? 0, page, pageSize };
  }

  async create(
    parent: UserRow,
    input: { childName: string; password: string; remark?: string; permissions: ChildPermissions; spendLimit?: SpendLimit | null },
  ): Promise<Child> {
    if (!isStrongPassword(input.password)) throw new AppError('PASSWORD_TOO_WEAK');
    const passwordHash = await hashPassword(input.password);
    const id = randomUUID();
    await this.deps.db.transaction(async (tx) => {
      // The parent's row serialises concurrent creations, so the limit holds.
      await tx.select({ id: users.id }).from(users).where(eq(users.id, parent.id)).for('update');
      const [n] = await tx
        .select({ n: count() })
        .from(users)
        .where(and(eq(users.parentId, parent.id), eq(users.isChild, true), isNull(users.deletedAt)));
      if ((n?.n ?? 0) >= this.deps.limit) throw new AppError('CHILD_LIMIT', `最多 ${this.deps.limit} 个`);
      const [taken] = await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.parentId, parent.id), eq(users.childName, input.childName), eq(users.isChild, true), isNull(users.deletedAt)));
      if (taken) throw new AppError('CHILD_NAME_TAKEN');
      const now = this.deps.clock.now();
      await tx.insert(users).values({
        id,
        isChild: true,
        parentId: parent.id,
        childName: input.childName,
        childRemark: input.remark ?? '',
        passwordHash,
        certType: parent.certType,
        certStatus: parent.certStatus,
        accountType: parent.accountType,
        from: 'child',
        ...grants(input.permissions),
        ...limitColumns(input.spendLimit ?? null),
        createdAt: now,
        updatedAt: now,
      });
    });
    return toChild(await this.mustFind(parent.id, id), null);
  }

  async update(
    parentId: string,
    childId: string,
    input: { remark?: string; disabled?: boolean; permissions?: ChildPermissions; spendLimit?: SpendLimit | null },
  ): Promise<Child> {
    const child = await this.mustFind(parentId, childId);
    await this.deps.db.transaction(async (tx) => {
      await tx
        .update(users)
        .set({
          ...(input.remark !== undefined ? { childRemark: input.remark } : {}),
          ...(input.disabled !== undefined ? { disabled: input.disabled } : {}),
          ...(input.permissions ? grants({ ...flagsOf(child), ...input.permissions }) : {}),
          ...(input.spendLimit !== undefined ? limitColumns(input.spendLimit) : {}),
          updatedAt: this.deps.clock.now(),
        })
        .where(eq(users.id, childId));
      if (input.disabled) await this.deps.sessions.revokeAll(childId, 'child-disabled', tx);
    });
    this.changed(childId);
    return toChild(await this.mustFind(parentId, childId), null, (await this.spentOf([childId])).get(childId));
  }

  private async spentOf(ids: string[]) {
    return ids.length && this.deps.spentOf ? this.deps.spentOf(ids) : new Map<string, { month: bigint; total: bigint }>();
  }

  async setPassword(parentId: string, childId: string, password: string) {
    if (!isStrongPassword(password)) throw new AppError('PASSWORD_TOO_WEAK');
    await this.mustFind(parentId, childId);
    const passwordHash = await hashPassword(password);
    await this.deps.db.transaction(async (tx) => {
      await tx.update(users).set({ passwordHash, updatedAt: this.deps.clock.now() }).where(eq(users.id, childId));
      await this.deps.sessions.revokeAll(childId, 'child-password', tx);
    });
  }

  async remove(parentId: string, childId: string) {
    await this.mustFind(parentId, childId);
    await this.deps.db.transaction(async (tx) => {
      // The row stays (logs name it) but frees any mobile or e-mail on it for another account.
      await tx
        .update(users)
        .set({ deletedAt: this.deps.clock.now(), disabled: true, mobile: null, email: null, updatedAt: this.deps.clock.now() })
        .where(eq(users.id, childId));
      await this.deps.sessions.revokeAll(childId, 'child-deleted', tx);
    });
    this.changed(childId);
  }

  /** The live child of this parent (a 404 for anyone else's): for other modules acting on a parent's behalf. */
  child(parentId: string, childId: string): Promise<UserRow> {
    return this.mustFind(parentId, childId);
  }

  /** The live child of this parent, or the same 404 whether it belongs to someone else or never existed. */
  private async mustFind(parentId: string, childId: string): Promise<UserRow> {
    const [row] = await this.deps.db
      .select()
      .from(users)
      .where(and(eq(users.id, childId), eq(users.parentId, parentId), eq(users.isChild, true), isNull(users.deletedAt)));
    if (!row) throw new AppError('RECORD_NOT_FOUND', '子账号不存在');
    return row;
  }
}

function flagsOf(row: UserRow): Record<PermissionFlag, boolean> {
  return Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, row[f]])) as Record<PermissionFlag, boolean>;
}

function grants(p: ChildPermissions): Record<PermissionFlag, boolean> {
  return Object.fromEntries(PERMISSION_FLAGS.map((f) => [f, p[f] === true])) as Record<PermissionFlag, boolean>;
}

function limitColumns(limit: SpendLimit | null): Pick<UserRow, 'spendLimit' | 'spendLimitPeriod'> {
  return limit ? { spendLimit: BigInt(limit.amount), spendLimitPeriod: limit.period } : { spendLimit: null, spendLimitPeriod: null };
}

/**
 * The spending limits of those of `userIds` that are child accounts with one (orders/spending.ts
 * enforces them; a deleted child's instances keep its limit). Read through `exec`, so a payment's
 * transaction sees the limit it is checked against.
 */
export async function spendLimitsOf(exec: Executor, userIds: string[]): Promise<Map<string, { childName: string; amount: bigint; period: 'Month' | 'Total' }>> {
  if (!userIds.length) return new Map();
  const rows = await exec
    .select({ id: users.id, childName: users.childName, amount: users.spendLimit, period: users.spendLimitPeriod })
    .from(users)
    .where(and(inArray(users.id, userIds), eq(users.isChild, true), isNotNull(users.spendLimit), isNotNull(users.spendLimitPeriod)));
  return new Map(rows.map((r) => [r.id, { childName: r.childName, amount: r.amount!, period: r.period! }]));
}

function toChild(row: UserRow, lastLoginAt: Date | null, spent?: { month: bigint; total: bigint }): Child {
  return {
    id: row.id,
    childName: row.childName,
    remark: row.childRemark,
    disabled: row.disabled,
    permissions: flagsOf(row),
    createdAt: row.createdAt.toISOString(),
    lastLoginAt: lastLoginAt?.toISOString() ?? null,
    spendLimit: row.spendLimit !== null && row.spendLimitPeriod ? { amount: String(row.spendLimit), period: row.spendLimitPeriod } : null,
    spent: { month: String(spent?.month ?? 0n), total: String(spent?.total ?? 0n) },
  };
}
