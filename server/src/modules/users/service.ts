/**
 * Accounts: registration, login by password or SMS code, password reset and change, and the
 * profile fields a user edits themselves (mobile, e-mail, logo).
 */
import { randomUUID } from 'node:crypto';
import { and, count, eq, gt, isNull, sql } from 'drizzle-orm';
import { isStrongPassword, type User } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { loginFailures, users } from '../../db/schema.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import type { SessionService, UserRow } from '../sessions/service.js';
import type { VerificationService } from '../verification/service.js';
import { hashPassword, verifyPassword } from './passwords.js';

export const LOGIN_FAILURE_WINDOW_MS = 15 * 60_000;
export const LOGIN_FAILURE_LIMIT = 10;

interface ClientMeta {
  ip: string;
  userAgent: string;
}

export class UserService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      sessions: SessionService;
      codes: VerificationService;
      storage: StorageDriver;
      operatorMobiles: string[];
      /** What other domains do for a new account, inside the registration's transaction (the new-user voucher). */
      onRegistered?: ((userId: string, tx: Tx) => Promise<void>)[];
    },
  ) {}

  /** What the scene of an SMS code requires of the number, checked before anything is sent. */
  async assertSmsSceneAllowed(mobile: string, scene: string) {
    const existing = await this.findByMobile(mobile);
    if ((scene === 'register' || scene === 'mobile') && existing) throw new AppError('MOBILE_TAKEN');
    if ((scene === 'login' || scene === 'reset') && !existing) throw new AppError('MOBILE_NOT_REGISTERED');
  }

  async register(input: { mobile: string; code: string; password: string }, meta: ClientMeta) {
    assertStrong(input.password);
    if (await this.findByMobile(input.mobile)) throw new AppError('MOBILE_TAKEN');
    const passwordHash = await hashPassword(input.password);
    const now = this.deps.clock.now();
    const id = randomUUID();
    const codeId = await this.deps.codes.verify(input.mobile, 'register', input.code);
    const token = await this.deps.db.transaction(async (tx) => {
      await this.deps.codes.consume(codeId, tx);
      const inserted = await tx
        .insert(users)
        .values({ id, mobile: input.mobile, passwordHash, nickname: maskMobile(input.mobile), createdAt: now, updatedAt: now })
        .onConflictDoNothing()
        .returning({ id: users.id });
      // Lost a race with another registration of the same number: the transaction rolls back.
      if (inserted.length === 0) throw new AppError('MOBILE_TAKEN');
      for (const hook of this.deps.onRegistered ?? []) await hook(id, tx);
      return this.deps.sessions.issue(id, meta, tx);
    });
    return { token, user: this.toDto((await this.findById(id))!) };
  }

  async loginByPassword(input: { account: string; password: string }, meta: ClientMeta) {
    const account = input.account.trim().toLowerCase();
    await this.assertNotLockedOut(account);
    const user = account.includes('@') ? await this.findByEmail(account) : await this.findByMobile(account);
    const ok = await verifyPassword(input.password, user?.passwordHash ?? null);
    if (!user || !ok) {
      await this.deps.db.insert(loginFailures).values({ account, ip: meta.ip, createdAt: this.deps.clock.now() });
      throw new AppError('LOGIN_FAILED');
    }
    return this.startSession(user, meta);
  }

  /** A child logs in under its parent's mobile number; failures count against "mobile/name" like any account. */
  async loginChild(input: { parentMobile: string; childName: string; password: string }, meta: ClientMeta) {
    const account = `${input.parentMobile}/${input.childName.toLowerCase()}`;
    await this.assertNotLockedOut(account);
    const parent = await this.findByMobile(input.parentMobile);
    const [child] = parent
      ? await this.deps.db
          .select()
          .from(users)
          .where(and(eq(users.parentId, parent.id), eq(users.isChild, true), isNull(users.deletedAt), sql`lower(${users.childName}) = ${input.childName.toLowerCase()}`))
      : [];
    const ok = await verifyPassword(input.password, child?.passwordHash ?? null);
    if (!child || !ok) {
      await this.deps.db.insert(loginFailures).values({ account, ip: meta.ip, createdAt: this.deps.clock.now() });
      throw new AppError('LOGIN_FAILED', '请核对主账号手机号、子账号名和密码');
    }
    if (parent!.disabled) throw new AppError('ACCOUNT_DISABLED', '主账号已停用');
    return this.startSession(child, meta);
  }

  async loginByCode(input: { mobile: string; code: string }, meta: ClientMeta) {
    const user = await this.findByMobile(input.mobile);
    if (!user) throw new AppError('MOBILE_NOT_REGISTERED');
    const codeId = await this.deps.codes.verify(input.mobile, 'login', input.code);
    if (user.disabled) throw new AppError('ACCOUNT_DISABLED');
    return this.deps.db.transaction(async (tx) => {
      await this.deps.codes.consume(codeId, tx);
      return { token: await this.deps.sessions.issue(user.id, meta, tx), user: this.toDto(user) };
    });
  }

  async resetPassword(input: { mobile: string; code: string; password: string }) {
    assertStrong(input.password);
    const user = await this.findByMobile(input.mobile);
    if (!user) throw new AppError('MOBILE_NOT_REGISTERED');
    const passwordHash = await hashPassword(input.password);
    const codeId = await this.deps.codes.verify(input.mobile, 'reset', input.code);
    await this.deps.db.transaction(async (tx) => {
      await this.deps.codes.consume(codeId, tx);
      await tx.update(users).set({ passwordHash, updatedAt: this.deps.clock.now() }).where(eq(users.id, user.id));
      await this.deps.sessions.revokeAll(user.id, 'password-reset', tx);
    });
  }

  async changePassword(userId: string, sessionId: string, input: { oldPassword: string; password: string }) {
    const user = await this.mustFind(userId);
    if (!(await verifyPassword(input.oldPassword, user.passwordHash))) throw new AppError('OLD_PASSWORD_WRONG');
    assertStrong(input.password);
    const passwordHash = await hashPassword(input.password);
    await this.deps.db.transaction(async (tx) => {
      await tx.update(users).set({ passwordHash, updatedAt: this.deps.clock.now() }).where(eq(users.id, userId));
      await this.deps.sessions.revokeAll(userId, 'password-changed', tx, sessionId);
    });
  }

  async changeMobile(userId: string, input: { mobile: string; code: string }) {
    const user = await this.mustFind(userId);
    if (user.mobile === input.mobile) throw new AppError('SAME_MOBILE');
    if (await this.findByMobile(input.mobile)) throw new AppError('MOBILE_TAKEN');
    const codeId = await this.deps.codes.verify(input.mobile, 'mobile', input.code);
    await this.deps.db.transaction(async (tx) => {
      await this.deps.codes.consume(codeId, tx);
      await tx.update(users).set({ mobile: input.mobile, updatedAt: this.deps.clock.now() }).where(eq(users.id, userId));
    });
    return this.toDto(await this.mustFind(userId));
  }

  async assertEmailFree(email: string, userId?: string) {
    const owner = await this.findByEmail(email);
    if (owner && owner.id !== userId) throw new AppError('EMAIL_TAKEN');
  }

  async changeEmail(userId: string, input: { email: string; code: string }) {
    await this.assertEmailFree(input.email, userId);
    const codeId = await this.deps.codes.verify(input.email, 'email', input.code);
    await this.deps.db.transaction(async (tx) => {
      await this.deps.codes.consume(codeId, tx);
      await tx.update(users).set({ email: input.email, updatedAt: this.deps.clock.now() }).where(eq(users.id, userId));
    });
    return this.toDto(await this.mustFind(userId));
  }

  async setLogo(userId: string, image: { body: Buffer; ext: string; contentType: string }) {
    const user = await this.mustFind(userId);
    const key = `logos/${userId}/${randomUUID()}.${image.ext}`;
    await this.deps.storage.put(key, image.body, image.contentType);
    await this.deps.db.update(users).set({ logo: `/files/${key}`, updatedAt: this.deps.clock.now() }).where(eq(users.id, userId));
    if (user.logo.startsWith('/files/logos/')) await this.deps.storage.delete(user.logo.slice('/files/'.length)).catch(() => {});
    return this.toDto(await this.mustFind(userId));
  }

  async findById(id: string) {
    const [row] = await this.deps.db.select().from(users).where(eq(users.id, id));
    return row;
  }
  async findByMobile(mobile: string) {
    const [row] = await this.deps.db.select().from(users).where(eq(users.mobile, mobile));
    return row;
  }
  async findByEmail(email: string) {
    const [row] = await this.deps.db.select().from(users).where(eq(users.email, email.toLowerCase()));
    return row;
  }
  async mustFind(id: string) {
    const row = await this.findById(id);
    if (!row) throw new AppError('USER_NOT_FOUND');
    return row;
  }

  /** The user object of spec §3. A main account holds every permission; a child only its grants. */
  toDto(row: UserRow): User {
    const all = !row.isChild;
    return {
      id: row.id,
      logo: row.logo,
      certStatus: row.certStatus,
      certType: row.certType,
      accountType: row.accountType,
      createAt: row.createdAt.toISOString(),
      credit: row.credit,
      from: row.from,
      mobile: row.mobile ?? '',
      email: row.email ?? '',
      name: row.name,
      nickname: row.nickname,
      childName: row.childName,
      isStudent: row.isStudent,
      isChild: row.isChild,
      certified: row.certStatus === 'Succeed' && row.certType !== 'Uncertified',
      userVersion: row.userVersion,
      firstVisit: row.firstVisit,
      openModal: row.openModal,
      isOperator: row.isOperator || (!!row.mobile && this.deps.operatorMobiles.includes(row.mobile)),
      createGPUInstance: all || row.createGPUInstance,
      createImageAPP: all || row.createImageAPP,
      openYunBucket: all || row.openYunBucket,
      gpu: all || row.gpu,
      app: all || row.app,
      image: all || row.image,
      usingLLM: all || row.usingLLM,
    };
  }

  private async startSession(user: UserRow, meta: ClientMeta) {
    if (user.disabled) throw new AppError('ACCOUNT_DISABLED');
    const token = await this.deps.sessions.issue(user.id, meta);
    return { token, user: this.toDto(user) };
  }

  private async assertNotLockedOut(account: string) {
    const since = new Date(this.deps.clock.now().getTime() - LOGIN_FAILURE_WINDOW_MS);
    const [row] = await this.deps.db
      .select({ n: count() })
      .from(loginFailures)
      .where(and(eq(loginFailures.account, account), gt(loginFailures.createdAt, since)));
    if ((row?.n ?? 0) >= LOGIN_FAILURE_LIMIT) throw new AppError('LOGIN_TOO_MANY');
  }
}

function assertStrong(password: string) {
  if (!isStrongPassword(password)) throw new AppError('PASSWORD_TOO_WEAK');
}

export function maskMobile(mobile: string) {
  return `${mobile.slice(0, 3)}****${mobile.slice(-4)}`;
}
