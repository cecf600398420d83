/**
 * Accounts: registration, login by password or SMS code, password reset and change, and the
 * profile fields a user edits themselves (mobile, e-mail, logo).
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, gt, ilike, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import { isCertified, isStrongPassword, type User } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor, Tx } from '../../db/client.js';
import { loginFailures, users } from './schema.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import type { SessionService, UserRow } from './sessions.js';
import type { VerificationService } from '../verification/index.js';
import { assertPasswordCheckPossible, hashPassword, verifyPassword } from './passwords.js';

export const LOGIN_FAILURE_WINDOW_MS = 15 * 60_000;
export const LOGIN_FAILURE_LIMIT = 10;

interface ClientMeta {
  ip: string;
  userAgent: string;
}

export class UserService {
  private readonly loginMemory = new LoginMemory();

  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      sessions: SessionService;
      codes: VerificationService;
      storage: StorageDriver;
      operatorMobiles: string[];
      /** Failed logins from one address, over all accounts, in the login window (a spray over many accounts). */
      loginIpFailureLimit: number;
      /** What other domains do for a new account, inside the registration's transaction (the new-user voucher). */
      onRegistered?: ((userId: string, tx: Tx) => Promise<void>)[];
    },
  ) {}

  /** What the scene of an SMS code requires of the number, checked before anything is sent. */
  async assertSmsSceneAllowed(mobile: string, scene: string) {
    const existing = await this.findByMobile(mobile);
    if ((scene === 'register' || scene === 'mobile') && existing) throw new AppError('MOBILE_TAKEN');
    // A child logs in only through its parent (children.ts): a number on a child's row opens nothing.
    if ((scene === 'login' || scene === 'reset') && !mainAccount(existing)) throw new AppError('MOBILE_NOT_REGISTERED');
  }

  /** A child's mobile, e-mail and password are its parent's to manage: the child changes none of them, nor asks for the codes. */
  assertOwnsCredentials(user: Pick<UserRow, 'isChild'>) {
    if (user.isChild) throw new AppError('CHILD_CREDENTIALS_BY_PARENT');
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
        .values({ id, mobile: input.mobile, passwordHash, nickname: maskMobile(input.mobile), agreedAt: now, createdAt: now, updatedAt: now })
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
    assertPasswordCheckPossible();
    const account = input.account.trim().toLowerCase();
    const user = await this.passwordAttempt(account, meta.ip, new AppError('LOGIN_FAILED'), async () => {
      const found = mainAccount(account.includes('@') ? await this.findByEmail(account) : await this.findByMobile(account));
      return (await verifyPassword(input.password, found?.passwordHash ?? null)) ? found : undefined;
    });
    return this.startSession(user, meta);
  }

  /** A child logs in under its parent's mobile number; failures count against "mobile/name" like any account. */
  async loginChild(input: { parentMobile: string; childName: string; password: string }, meta: ClientMeta) {
    assertPasswordCheckPossible();
    const account = `${input.parentMobile}/${input.childName.toLowerCase()}`;
    const parent = await this.findByMobile(input.parentMobile);
    const child = await this.passwordAttempt(account, meta.ip, new AppError('LOGIN_FAILED', '请核对主账号手机号、子账号名和密码'), async () => {
      const [found] = parent
        ? await this.deps.db
            .select()
            .from(users)
            .where(
              and(
                eq(users.parentId, parent.id),
                eq(users.isChild, true),
                isNull(users.deletedAt),
                sql`lower(${users.childName}) = ${input.childName.toLowerCase()}`,
              ),
            )
        : [];
      return (await verifyPassword(input.password, found?.passwordHash ?? null)) ? found : undefined;
    });
    if (parent!.disabled) throw new AppError('ACCOUNT_DISABLED', '主账号已停用');
    return this.startSession(child, meta);
  }

  async loginByCode(input: { mobile: string; code: string }, meta: ClientMeta) {
    const user = mainAccount(await this.findByMobile(input.mobile));
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
    const user = mainAccount(await this.findByMobile(input.mobile));
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
    this.assertOwnsCredentials(user);
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
    this.assertOwnsCredentials(user);
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
    this.assertOwnsCredentials(await this.mustFind(userId));
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
    await this.deps.db
      .update(users)
      .set({ logo: `/files/${key}`, updatedAt: this.deps.clock.now() })
      .where(eq(users.id, userId));
    if (user.logo.startsWith('/files/logos/')) await this.deps.storage.delete(user.logo.slice('/files/'.length)).catch(() => {});
    return this.toDto(await this.mustFind(userId));
  }

  async findById(id: string) {
    const [row] = await this.deps.db.select().from(users).where(eq(users.id, id));
    return row;
  }
  async findByMobile(mobile: string) {
    return userByMobile(this.deps.db, mobile);
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

  /** The mobile number of each of these accounts (for lists that name their subjects). */
  async mobilesOf(ids: Iterable<string>): Promise<Map<string, string>> {
    const wanted = [...new Set(ids)];
    if (!wanted.length) return new Map();
    const rows = await this.deps.db.select({ id: users.id, mobile: users.mobile }).from(users).where(inArray(users.id, wanted));
    return new Map(rows.map((r) => [r.id, r.mobile ?? '']));
  }

  /** Who each of these accounts is, for lists that name people (masked by the caller as it needs). */
  async contactsOf(ids: Iterable<string>): Promise<Map<string, Pick<UserRow, 'mobile' | 'email' | 'isChild' | 'childName'>>> {
    const wanted = [...new Set(ids)];
    if (!wanted.length) return new Map();
    const rows = await this.deps.db
      .select({ id: users.id, mobile: users.mobile, email: users.email, isChild: users.isChild, childName: users.childName })
      .from(users)
      .where(inArray(users.id, wanted));
    return new Map(rows.map(({ id, ...who }) => [id, who]));
  }

  /** The account's row, locked until the transaction ends: serialises changes that depend on it. */
  async lockForUpdate(tx: Executor, id: string): Promise<UserRow> {
    const [row] = await tx.select().from(users).where(eq(users.id, id)).for('update');
    if (!row) throw new AppError('USER_NOT_FOUND');
    return row;
  }

  /**
   * A main account's certification state (spec §4's certType/certStatus, read by the real-name gate),
   * its name and account type once certified; its children act under its identity, so they follow.
   */
  async setCertification(
    tx: Executor,
    id: string,
    c: { certType: UserRow['certType']; certStatus: UserRow['certStatus']; name: string | null; enterprise: boolean },
  ) {
    const now = this.deps.clock.now();
    await tx
      .update(users)
      .set({
        certType: c.certType,
        certStatus: c.certStatus,
        ...(c.enterprise ? { accountType: 'enterprise' as const } : {}),
        ...(c.name ? { name: c.name } : {}),
        userVersion: sql`${users.userVersion} + 1`,
        updatedAt: now,
      })
      .where(eq(users.id, id));
    await tx.update(users).set({ certType: c.certType, certStatus: c.certStatus, updatedAt: now }).where(eq(users.parentId, id));
  }

  /** An approved student verification: the price function gives the account the student discount. */
  async markStudent(tx: Executor, id: string) {
    await tx
      .update(users)
      .set({ isStudent: true, userVersion: sql`${users.userVersion} + 1`, updatedAt: this.deps.clock.now() })
      .where(eq(users.id, id));
  }

  /**
   * The operator role of the main account with this mobile, through the running server (the role
   * applies to the account's next request: sessions read the user afresh). Answers whether the
   * account is an operator afterwards, which a number in OPERATOR_MOBILES stays.
   */
  async changeOperatorRole(mobile: string, isOperator: boolean) {
    const id = await setOperatorRole(this.deps.db, mobile, isOperator, this.deps.clock.now());
    if (!id) throw new AppError('USER_NOT_FOUND', `手机号 ${mobile} 未注册`);
    return { userId: id, mobile, isOperator: this.toDto(await this.mustFind(id)).isOperator };
  }

  /** Main accounts, newest first, found by mobile, e-mail or name, with how many live children each has. */
  async mainAccounts(q: string | undefined, page: number, pageSize: number) {
    const conds: SQL[] = [eq(users.isChild, false)];
    if (q) conds.push(or(ilike(users.mobile, `%${q}%`), ilike(users.email, `%${q}%`), ilike(users.name, `%${q}%`))!);
    const where = and(...conds);
    const [total] = await this.deps.db.select({ n: count() }).from(users).where(where);
    const rows = await this.deps.db
      .select()
      .from(users)
      .where(where)
      .orderBy(desc(users.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    // Counted apart for the page's accounts: in a correlated subquery of this one-table select,
    // drizzle writes the outer `users.id` unqualified, which then names the inner row (every count 0).
    const counts = rows.length
      ? await this.deps.db
          .select({ parentId: users.parentId, n: count() })
          .from(users)
          .where(
            and(
              inArray(
                users.parentId,
                rows.map((r) => r.id),
              ),
              eq(users.isChild, true),
              isNull(users.deletedAt),
            ),
          )
          .groupBy(users.parentId)
      : [];
    const children = new Map(counts.map((c) => [c.parentId, c.n]));
    return { rows: rows.map((user) => ({ user, children: children.get(user.id) ?? 0 })), total: total?.n ?? 0 };
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
      certified: isCertified(row),
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
      finance: all || row.finance,
    };
  }

  private async startSession(user: UserRow, meta: ClientMeta) {
    if (user.disabled) throw new AppError('ACCOUNT_DISABLED');
    const token = await this.deps.sessions.issue(user.id, meta);
    return { token, user: this.toDto(user) };
  }

  /**
   * Counts a password attempt as a failure before the password is checked (forgetAttempt takes it
   * back when it succeeds), under a per-account and a per-address lock: forty attempts at once are counted one after
   * another, so the eleventh is refused while the first ten are still being hashed. An address
   * that failed too often over any accounts is refused too.
   */
  private async beginAttempt(account: string, ip: string): Promise<Attempt> {
    const now = this.deps.clock.now().getTime();
    const keys = { LOGIN_TOO_MANY: `account:${account}`, LOGIN_IP_TOO_MANY: `ip:${ip}` };
    this.loginMemory.assertNotRefused(keys, now);
    const counted = await this.countAttempt(account, ip, keys, new Date(now - LOGIN_FAILURE_WINDOW_MS));
    if ('refused' in counted) {
      if (counted.settled) this.loginMemory.rememberRefusal(counted.refused, keys, now);
      throw new AppError(counted.refused);
    }
    return { id: counted.id, keys };
  }

  private async countAttempt(account: string, ip: string, keys: AttemptKeys, since: Date): Promise<Counted> {
    let started = false;
    try {
      return await this.deps.db.transaction(async (tx): Promise<Counted> => {
        // Account first, then address, in every attempt: two attempts never wait on each other in a circle.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`login:${account}`}, 0))`);
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`login-ip:${ip}`}, 0))`);
        const [row] = await tx
          .select({
            byAccount: sql<number>`count(*) filter (where ${loginFailures.account} = ${account})`.mapWith(Number),
            byIp: sql<number>`count(*) filter (where ${loginFailures.ip} = ${ip})`.mapWith(Number),
          })
          .from(loginFailures)
          .where(and(or(eq(loginFailures.account, account), eq(loginFailures.ip, ip)), gt(loginFailures.createdAt, since)));
        const counts = { LOGIN_TOO_MANY: row?.byAccount ?? 0, LOGIN_IP_TOO_MANY: row?.byIp ?? 0 };
        const limits = { LOGIN_TOO_MANY: LOGIN_FAILURE_LIMIT, LOGIN_IP_TOO_MANY: this.deps.loginIpFailureLimit };
        for (const refused of REFUSALS) {
          if (counts[refused] < limits[refused]) continue;
          return { refused, settled: counts[refused] - this.loginMemory.inFlight(keys[refused]) >= limits[refused] };
        }
        const [inserted] = await tx.insert(loginFailures).values({ account, ip, createdAt: this.deps.clock.now() }).returning({ id: loginFailures.id });
        // Counted as in flight before the locks are let go, so the next attempt already sees it so.
        this.loginMemory.started(keys);
        started = true;
        return { id: inserted!.id };
      });
    } catch (e) {
      if (started) this.loginMemory.ended(keys);
      throw e;
    }
  }

  /**
   * One password check counted against the account and the address: `check` answers the account when
   * the password is right, undefined when not (the attempt stays a failure and `wrong` is thrown). A
   * check that could not be made (hashing busy, database error) is not a failure and is taken back.
   */
  private async passwordAttempt<T>(account: string, ip: string, wrong: AppError, check: () => Promise<T | undefined>): Promise<T> {
    const attempt = await this.beginAttempt(account, ip);
    try {
      let found: T | undefined;
      try {
        found = await check();
      } catch (e) {
        await this.forgetAttempt(attempt.id);
        throw e;
      }
      if (found === undefined) throw wrong;
      await this.forgetAttempt(attempt.id);
      return found;
    } finally {
      this.loginMemory.ended(attempt.keys);
    }
  }

  private async forgetAttempt(id: number): Promise<void> {
    await this.deps.db.delete(loginFailures).where(eq(loginFailures.id, id));
  }
}

/**
 * What this process knows of login attempts beyond the database: the attempts it is still checking,
 * and the accounts and addresses it refused for too many failures within the last second. A flood
 * of attempts on a locked account (what a password guesser sends) is refused from memory, without a
 * transaction each: fifty connections doing so on one account held the GPU market's p99 at seconds
 * on PGlite. Only a refusal that stands on finished failures is kept: one that counted attempts
 * still being checked (a burst of logins with the right password) may be gone a moment later.
 */
class LoginMemory {
  /** Key → until when it is refused. */
  private readonly refusedUntil = new Map<string, number>();
  /** Key → attempts this process counted and is still checking. */
  private readonly checking = new Map<string, number>();

  /** Throws the refusal of the first key still refused. */
  assertNotRefused(keys: AttemptKeys, now: number) {
    for (const refusal of REFUSALS) {
      const until = this.refusedUntil.get(keys[refusal]);
      if (until === undefined) continue;
      if (until > now) throw new AppError(refusal);
      this.refusedUntil.delete(keys[refusal]);
    }
  }

  rememberRefusal(refusal: Refusal, keys: AttemptKeys, now: number) {
    if (this.refusedUntil.size >= 10_000) this.refusedUntil.clear();
    this.refusedUntil.set(keys[refusal], now + REFUSAL_MEMO_MS);
  }

  inFlight(key: string): number {
    return this.checking.get(key) ?? 0;
  }

  started(keys: AttemptKeys) {
    for (const key of Object.values(keys)) this.checking.set(key, this.inFlight(key) + 1);
  }

  ended(keys: AttemptKeys) {
    for (const key of Object.values(keys)) {
      const left = this.inFlight(key) - 1;
      if (left > 0) this.checking.set(key, left);
      else this.checking.delete(key);
    }
  }
}

const REFUSAL_MEMO_MS = 1_000;
const REFUSALS = ['LOGIN_TOO_MANY', 'LOGIN_IP_TOO_MANY'] as const;
type Refusal = (typeof REFUSALS)[number];
type AttemptKeys = Record<Refusal, string>;
type Attempt = { id: number; keys: AttemptKeys };
type Counted = { id: number } | { refused: Refusal; settled: boolean };

/** The account a mobile or e-mail signs in to by itself: never a child (whose number, if any, is left from before). */
function mainAccount(row: UserRow | undefined): UserRow | undefined {
  return row && !row.isChild ? row : undefined;
}

function assertStrong(password: string) {
  if (!isStrongPassword(password)) throw new AppError('PASSWORD_TOO_WEAK');
}

/** The account registered with this mobile number (also for the operator command, which runs without a server). */
export async function userByMobile(db: Executor, mobile: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.mobile, mobile));
  return row;
}

/** Gives or takes the operator role of the main account with this mobile (npm run operator -- grant/revoke); its id, or null when there is none. */
export async function setOperatorRole(db: Executor, mobile: string, isOperator: boolean, now: Date): Promise<string | null> {
  const rows = await db
    .update(users)
    .set({ isOperator, updatedAt: now })
    .where(and(eq(users.mobile, mobile), eq(users.isChild, false)))
    .returning({ id: users.id });
  return rows[0]?.id ?? null;
}

export function maskMobile(mobile: string) {
  return `${mobile.slice(0, 3)}****${mobile.slice(-4)}`;
}
