/**
 * Real-name certification (spec §4/§5). Personal: the name and resident ID are checked
 * here (GB 11643, in the contract's schema), then by the real-name verifier on confirm. Enterprise:
 * company details and a business-licence image, decided by an operator. Each application follows
 * the contract's CERT_TRANSITIONS; the user's certType/certStatus are derived from both applications
 * in the same transaction, and every decision is written to account_reviews.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, ne } from 'drizzle-orm';
import { canCert, isCertified, type CertAction, type CertifyInfo, type EnterpriseCertify, type PersonalCertify, type ReviewDecision } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { accountReviews, certifications } from './schema.js';
import type { UserService } from '../users/index.js';
import type { RealNameDriver } from '../../drivers/realname/types.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import { PRIVATE_FILES, type UploadedImage } from '../../http/upload.js';
import type { PasswordBox } from '../instances/index.js';
import { maskMobile } from '../users/index.js';

export type CertRow = typeof certifications.$inferSelect;
export type ReviewRow = typeof accountReviews.$inferSelect;
type CertKind = 'Personal' | 'Enterprise';

export class CertificationService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      verifier: RealNameDriver;
      storage: StorageDriver;
      box: PasswordBox;
      /** Keeps the account's certType/certStatus in step with its applications. */
      users: Pick<UserService, 'findById' | 'lockForUpdate' | 'setCertification'>;
      log: { warn(obj: object, msg: string): void };
    },
  ) {}

  async info(userId: string): Promise<CertifyInfo> {
    const user = await this.deps.users.findById(userId);
    const rows = await this.rows(this.deps.db, userId);
    const p = rows.Personal;
    const e = rows.Enterprise;
    const iso = (d: Date | null) => d?.toISOString() ?? null;
    const base = (r: CertRow) => ({ status: r.status, reason: r.reason, submittedAt: iso(r.submittedAt), decidedAt: iso(r.decidedAt) });
    return {
      certType: user!.certType,
      certStatus: user!.certStatus,
      certified: isCertified(user!),
      personal: p ? { ...base(p), name: maskName(p.realName), idNumber: p.idNumberMasked } : null,
      enterprise: e
        ? {
            ...base(e),
            companyName: e.companyName,
            creditCode: e.creditCode,
            legalPerson: maskName(e.legalPerson),
            contactName: e.contactName,
            contactMobile: maskMobile(e.contactMobile),
            licenceUploaded: !!e.licenceKey,
          }
        : null,
    };
  }

  async submitPersonal(userId: string, input: PersonalCertify): Promise<CertifyInfo> {
    await this.deps.db.transaction(async (tx) => {
      const rows = await this.lockRows(tx, userId);
      this.assertMaySubmit(rows, 'Personal');
      await this.upsert(tx, userId, 'Personal', rows.Personal, {
        realName: input.name,
        idNumberSealed: this.deps.box.seal(input.idNumber),
        idNumberMasked: maskId(input.idNumber),
      });
      await this.syncUser(tx, userId);
    });
    return this.info(userId);
  }

  /**
   * Sends the submitted identity to the verifier. The application is Pending while it is asked (a
   * second confirm meanwhile gets CERT_PENDING); if the verifier cannot answer, it goes back to Init
   * so the user can simply confirm again.
   */
  async confirmPersonal(userId: string): Promise<CertifyInfo> {
    const row = await this.deps.db.transaction(async (tx) => {
      const rows = await this.lockRows(tx, userId);
      const p = this.mustMove(rows.Personal, 'confirm');
      await tx.update(certifications).set({ status: 'Pending', submittedAt: this.now(), updatedAt: this.now() }).where(eq(certifications.id, p.id));
      await this.syncUser(tx, userId);
      return p;
    });
    let verdict;
    try {
      verdict = await this.deps.verifier.verify({ name: row.realName, idNumber: this.deps.box.open(row.idNumberSealed) });
    } catch (e) {
      this.deps.log.warn({ err: e, certification: row.id }, 'real-name verifier failed');
      await this.deps.db.transaction(async (tx) => {
        await tx.update(certifications).set({ status: 'Init', updatedAt: this.now() }).where(eq(certifications.id, row.id));
        await this.syncUser(tx, userId);
      });
      throw new AppError('UPSTREAM_FAILED', '实名核验服务暂时不可用，请稍后再点确认认证');
    }
    await this.decide(row.id, verdict.outcome === 'match' ? { decision: 'approve' } : { decision: 'reject', reason: verdict.reason }, null, verdict.ref);
    return this.info(userId);
  }

  async submitEnterprise(userId: string, input: EnterpriseCertify): Promise<CertifyInfo> {
    await this.deps.db.transaction(async (tx) => {
      const rows = await this.lockRows(tx, userId);
      this.assertMaySubmit(rows, 'Enterprise');
      await this.upsert(tx, userId, 'Enterprise', rows.Enterprise, input);
      await this.syncUser(tx, userId);
    });
    return this.info(userId);
  }

  async uploadLicence(userId: string, image: UploadedImage): Promise<CertifyInfo> {
    const key = `${PRIVATE_FILES}licences/${userId}/${randomUUID()}.${image.ext}`;
    const before = await this.deps.db.transaction(async (tx) => {
      const rows = await this.lockRows(tx, userId);
      const e = this.mustMove(rows.Enterprise, 'upload');
      await this.deps.storage.put(key, image.body, image.contentType);
      await tx.update(certifications).set({ licenceKey: key, updatedAt: this.now() }).where(eq(certifications.id, e.id));
      return e.licenceKey;
    });
    if (before) await this.deps.storage.delete(before).catch(() => {});
    return this.info(userId);
  }

  async confirmEnterprise(userId: string): Promise<CertifyInfo> {
    await this.deps.db.transaction(async (tx) => {
      const rows = await this.lockRows(tx, userId);
      const e = this.mustMove(rows.Enterprise, 'confirm');
      if (!e.licenceKey) throw new AppError('CERT_LICENCE_MISSING');
      await tx.update(certifications).set({ status: 'Pending', reason: '', submittedAt: this.now(), updatedAt: this.now() }).where(eq(certifications.id, e.id));
      await this.syncUser(tx, userId);
    });
    return this.info(userId);
  }

  /** Writes one decision to the review log (account_reviews): this module's and the student verification's. */
  async recordReview(tx: Executor, r: Omit<ReviewRow, 'id' | 'createdAt'>): Promise<void> {
    await tx.insert(accountReviews).values({ ...r, id: randomUUID(), createdAt: this.now() });
  }

  /** Which kind of application this is, or null when there is none by that id. */
  async typeOf(certId: string): Promise<CertKind | null> {
    const [row] = await this.deps.db.select({ type: certifications.type }).from(certifications).where(eq(certifications.id, certId));
    return row?.type ?? null;
  }

  /** The operator's queue: enterprise applications, last submitted first (Init ones are still being filled in). */
  async enterpriseApplications(status: CertRow['status'] | undefined, page: number, pageSize: number): Promise<{ rows: CertRow[]; total: number }> {
    const where = and(eq(certifications.type, 'Enterprise'), status ? eq(certifications.status, status) : ne(certifications.status, 'Init'));
    const [total] = await this.deps.db.select({ n: count() }).from(certifications).where(where);
    const rows = await this.deps.db
      .select()
      .from(certifications)
      .where(where)
      .orderBy(desc(certifications.submittedAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return { rows, total: total?.n ?? 0 };
  }

  /** Every decision on a certification or student application, newest first. */
  async reviewLog(page: number, pageSize: number): Promise<{ rows: ReviewRow[]; total: number }> {
    const [total] = await this.deps.db.select({ n: count() }).from(accountReviews);
    const rows = await this.deps.db
      .select()
      .from(accountReviews)
      .orderBy(desc(accountReviews.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return { rows, total: total?.n ?? 0 };
  }

  /** Approve or reject a Pending application: the verifier (actor null) or an operator. */
  async decide(certId: string, decision: ReviewDecision, actorId: string | null, providerRef?: string): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const [row] = await tx.select().from(certifications).where(eq(certifications.id, certId)).for('update');
      if (!row) throw new AppError('RECORD_NOT_FOUND');
      if (actorId !== null && row.userId === actorId) throw new AppError('OWN_APPLICATION');
      if (!canCert(decision.decision, row.status)) throw new AppError('REVIEW_DONE');
      const reason = decision.decision === 'reject' ? decision.reason : '';
      await tx
        .update(certifications)
        .set({
          status: decision.decision === 'approve' ? 'Succeed' : 'Failed',
          reason,
          decidedAt: this.now(),
          updatedAt: this.now(),
          providerRef: providerRef ?? row.providerRef,
        })
        .where(eq(certifications.id, certId));
      await this.recordReview(tx, {
        kind: row.type === 'Personal' ? 'personal' : 'enterprise',
        subjectId: certId,
        userId: row.userId,
        decision: decision.decision,
        reason,
        actorId,
      });
      await this.syncUser(tx, row.userId);
    });
  }

  /** The stored licence image, for the operator's review. */
  async licence(certId: string) {
    const [row] = await this.deps.db.select({ key: certifications.licenceKey }).from(certifications).where(eq(certifications.id, certId));
    const object = row?.key ? await this.deps.storage.get(row.key) : null;
    if (!object) throw new AppError('FILE_NOT_FOUND');
    return object;
  }

  // --- rules --------------------------------------------------------------------------------

  private assertMaySubmit(rows: Partial<Record<CertKind, CertRow>>, kind: CertKind) {
    const all = Object.values(rows);
    if (all.some((r) => r.status === 'Pending')) throw new AppError('CERT_PENDING');
    // Enterprise certification outranks personal: an enterprise may not step down, a person may step up.
    if (rows.Enterprise?.status === 'Succeed' || rows[kind]?.status === 'Succeed') throw new AppError('CERT_ALREADY_DONE');
    this.mustMove(rows[kind], 'submit');
  }

  /** The application if the action is legal from its status; the matching code otherwise. */
  private mustMove(row: CertRow | undefined, action: CertAction): CertRow {
    const from = row?.status ?? 'none';
    if (canCert(action, from)) return row!;
    if (from === 'none') throw new AppError('CERT_NOT_SUBMITTED');
    if (from === 'Pending') throw new AppError('CERT_PENDING');
    if (from === 'Succeed') throw new AppError('CERT_ALREADY_DONE');
    throw new AppError('CERT_STATE_INVALID', '认证未通过，请修改信息后重新提交');
  }

  private async upsert(tx: Executor, userId: string, type: CertKind, existing: CertRow | undefined, fields: Partial<CertRow>) {
    const now = this.now();
    const values = { ...fields, status: 'Init' as const, reason: '', submittedAt: null, decidedAt: null, updatedAt: now };
    if (existing) await tx.update(certifications).set(values).where(eq(certifications.id, existing.id));
    else await tx.insert(certifications).values({ id: randomUUID(), userId, type, createdAt: now, ...values });
  }

  /** The user's certType/certStatus from both applications (spec §4's fields, read by the gate). */
  private async syncUser(tx: Executor, userId: string) {
    const rows = await this.rows(tx, userId);
    const { certType, certStatus } = userCertOf(rows);
    const named = rows.Enterprise?.status === 'Succeed' ? rows.Enterprise.companyName : rows.Personal?.status === 'Succeed' ? rows.Personal.realName : null;
    await this.deps.users.setCertification(tx, userId, {
      certType,
      certStatus,
      name: named,
      enterprise: certType === 'Enterprise' && certStatus === 'Succeed',
    });
  }

  private async rows(exec: Executor, userId: string, lock = false): Promise<Partial<Record<CertKind, CertRow>>> {
    const q = exec.select().from(certifications).where(eq(certifications.userId, userId));
    const list = lock ? await q.for('update') : await q;
    return Object.fromEntries(list.map((r) => [r.type, r]));
  }

  /** Serialises one user's certification changes on the user's row (the applications may not exist yet). */
  private async lockRows(tx: Executor, userId: string) {
    const user = await this.deps.users.lockForUpdate(tx, userId);
    if (user.isChild) throw new AppError('MAIN_ACCOUNT_ONLY', '实名认证由主账号完成');
    return this.rows(tx, userId, true);
  }

  private now() {
    return this.deps.clock.now();
  }
}

/** Succeed wins (enterprise over personal); otherwise the application in progress; otherwise uncertified. */
export function userCertOf(rows: Partial<Record<CertKind, Pick<CertRow, 'status' | 'updatedAt'>>>) {
  if (rows.Enterprise?.status === 'Succeed') return { certType: 'Enterprise' as const, certStatus: 'Succeed' as const };
  if (rows.Personal?.status === 'Succeed') return { certType: 'Personal' as const, certStatus: 'Succeed' as const };
  const shown = (['Personal', 'Enterprise'] as const)
    .filter((k) => rows[k] && rows[k]!.status !== 'Init')
    .sort((a, b) => rows[b]!.updatedAt.getTime() - rows[a]!.updatedAt.getTime())[0];
  return shown ? { certType: shown, certStatus: rows[shown]!.status } : { certType: 'Uncertified' as const, certStatus: 'Init' as const };
}

/** 张三 → 张*; 欧阳娜娜 → 欧**娜. */
export function maskName(name: string): string {
  const chars = [...name];
  if (chars.length <= 1) return name;
  if (chars.length === 2) return `${chars[0]}*`;
  return `${chars[0]}${'*'.repeat(chars.length - 2)}${chars[chars.length - 1]}`;
}

/** 110105194912310021 → 1101**********0021. */
export function maskId(id: string): string {
  return `${id.slice(0, 4)}${'*'.repeat(id.length - 8)}${id.slice(-4)}`;
}
