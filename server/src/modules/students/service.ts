/**
 * Student verification (spec §7 /userapi/api/v3/student_verification): a school e-mail
 * proven by a code, a student-card image, then an operator's decision. Approval sets `isStudent`,
 * which the price function turns into the operator's student discount.
 */
import { randomUUID } from 'node:crypto';
import { count, desc, eq, ne } from 'drizzle-orm';
import type { ReviewDecision, StudentVerification, StudentVerificationRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import type { CertificationService } from '../certification/index.js';
import { studentVerifications } from './schema.js';
import type { UserService } from '../users/index.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import { AppError } from '../../http/errors.js';
import { PRIVATE_FILES, type UploadedImage } from '../../http/upload.js';
import type { CatalogueStore } from '../catalogue/index.js';
import { bpToRate } from '../catalogue/index.js';
import type { VerificationService } from '../verification/index.js';

export type StudentRow = typeof studentVerifications.$inferSelect;
type Row = StudentRow;
const EMAIL_SCENE = 'student';

export class StudentService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      codes: VerificationService;
      storage: StorageDriver;
      catalogue: CatalogueStore;
      /** Where every decision is logged (the certification module keeps the review log). */
      reviews: Pick<CertificationService, 'recordReview'>;
      /** Sets the account's student flag when an application is approved. */
      users: Pick<UserService, 'findById' | 'markStudent'>;
    },
  ) {}

  /** The operator's queue: applications past Init, last submitted first. */
  async applications(status: Row['status'] | undefined, page: number, pageSize: number): Promise<{ rows: Row[]; total: number }> {
    const where = status ? eq(studentVerifications.status, status) : ne(studentVerifications.status, 'Init');
    const [total] = await this.deps.db.select({ n: count() }).from(studentVerifications).where(where);
    const rows = await this.deps.db
      .select()
      .from(studentVerifications)
      .where(where)
      .orderBy(desc(studentVerifications.submittedAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return { rows, total: total?.n ?? 0 };
  }

  async get(userId: string): Promise<StudentVerification> {
    const [row] = await this.deps.db.select().from(studentVerifications).where(eq(studentVerifications.userId, userId));
    const user = await this.deps.users.findById(userId);
    const snap = await this.deps.catalogue.get();
    const iso = (d: Date | null | undefined) => d?.toISOString() ?? null;
    return {
      status: row?.status ?? 'Init',
      isStudent: user?.isStudent ?? false,
      school: row?.school ?? '',
      level: row?.level ?? null,
      enrollYear: row?.enrollYear ?? null,
      graduateYear: row?.graduateYear ?? null,
      email: row?.email ?? '',
      emailVerified: !!row?.emailVerifiedAt,
      imageUploaded: !!row?.imageKey,
      reason: row?.reason ?? '',
      submittedAt: iso(row?.submittedAt),
      decidedAt: iso(row?.decidedAt),
      discountRate: bpToRate(snap.settings.studentBp),
    };
  }

  async sendEmailCode(userId: string, email: string, ip: string) {
    const [row] = await this.deps.db.select().from(studentVerifications).where(eq(studentVerifications.userId, userId));
    assertOpen(row);
    return this.deps.codes.sendEmail(email, EMAIL_SCENE, ip);
  }

  async uploadImage(userId: string, image: UploadedImage): Promise<StudentVerification> {
    const key = `${PRIVATE_FILES}student-cards/${userId}/${randomUUID()}.${image.ext}`;
    const before = await this.deps.db.transaction(async (tx) => {
      const row = await this.lock(tx, userId);
      assertOpen(row);
      await this.deps.storage.put(key, image.body, image.contentType);
      const now = this.deps.clock.now();
      if (row) await tx.update(studentVerifications).set({ imageKey: key, updatedAt: now }).where(eq(studentVerifications.userId, userId));
      else await tx.insert(studentVerifications).values({ userId, status: 'Init', imageKey: key, createdAt: now, updatedAt: now });
      return row?.imageKey ?? null;
    });
    if (before) await this.deps.storage.delete(before).catch(() => {});
    return this.get(userId);
  }

  async submit(userId: string, req: StudentVerificationRequest): Promise<StudentVerification> {
    const thisYear = this.deps.clock.now().getUTCFullYear();
    if (req.enrollYear > thisYear) throw new AppError('VALIDATION_FAILED', 'enrollYear：入学年份不能晚于今年');
    if (req.graduateYear < thisYear) throw new AppError('STUDENT_GRADUATED');
    const [current] = await this.deps.db.select().from(studentVerifications).where(eq(studentVerifications.userId, userId));
    assertOpen(current);
    if (!current?.imageKey) throw new AppError('STUDENT_IMAGE_MISSING');
    // Checked outside the transaction so a wrong code still uses up an attempt (see VerificationService.verify).
    const codeId = await this.deps.codes.verify(req.email, EMAIL_SCENE, req.code);
    await this.deps.db.transaction(async (tx) => {
      const row = await this.lock(tx, userId);
      assertOpen(row);
      await this.deps.codes.consume(codeId, tx);
      const now = this.deps.clock.now();
      const { code: _code, ...fields } = req;
      await tx
        .update(studentVerifications)
        .set({ ...fields, status: 'Pending', emailVerifiedAt: now, reason: '', submittedAt: now, decidedAt: null, updatedAt: now })
        .where(eq(studentVerifications.userId, userId));
    });
    return this.get(userId);
  }

  async decide(userId: string, decision: ReviewDecision, actorId: string): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const row = await this.lock(tx, userId);
      if (!row) throw new AppError('RECORD_NOT_FOUND');
      if (userId === actorId) throw new AppError('OWN_APPLICATION');
      if (row.status !== 'Pending') throw new AppError('REVIEW_DONE');
      const now = this.deps.clock.now();
      const approved = decision.decision === 'approve';
      const reason = decision.decision === 'reject' ? decision.reason : '';
      await tx
        .update(studentVerifications)
        .set({ status: approved ? 'Succeed' : 'Failed', reason, decidedAt: now, updatedAt: now })
        .where(eq(studentVerifications.userId, userId));
      if (approved) await this.deps.users.markStudent(tx, userId);
      await this.deps.reviews.recordReview(tx, { kind: 'student', subjectId: userId, userId, decision: decision.decision, reason, actorId });
    });
  }

  async image(userId: string) {
    const [row] = await this.deps.db.select({ key: studentVerifications.imageKey }).from(studentVerifications).where(eq(studentVerifications.userId, userId));
    const object = row?.key ? await this.deps.storage.get(row.key) : null;
    if (!object) throw new AppError('FILE_NOT_FOUND');
    return object;
  }

  private async lock(tx: Executor, userId: string): Promise<Row | undefined> {
    const [row] = await tx.select().from(studentVerifications).where(eq(studentVerifications.userId, userId)).for('update');
    return row;
  }
}

/** Only an application that is not waiting for, or past, a decision may be changed. */
function assertOpen(row: Row | undefined) {
  if (row?.status === 'Pending') throw new AppError('CERT_PENDING', '学生认证正在审核中');
  if (row?.status === 'Succeed') throw new AppError('STUDENT_ALREADY_VERIFIED');
}
