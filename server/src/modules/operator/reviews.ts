/**
 * What the operator area reads: review queues (enterprise certifications, student verifications),
 * users with their certification state, and the log of every decision.
 */
import { and, count, desc, eq, ilike, or, sql, type SQL } from 'drizzle-orm';
import { CertStatus, EducationLevel, type ReviewItem } from '@console/contract';
import type { Db } from '../../db/client.js';
import { accountReviews, certifications } from '../certification/schema.js';
import { studentVerifications } from '../students/schema.js';
import { users } from '../users/schema.js';

type Status = (typeof CertStatus.values)[number];
const iso = (d: Date | null) => d?.toISOString() ?? null;

export class ReviewQueries {
  constructor(private db: Db) {}

  async queue(kind: 'enterprise' | 'student', status: Status | undefined, page: number, pageSize: number) {
    return kind === 'enterprise' ? this.enterprises(status, page, pageSize) : this.students(status, page, pageSize);
  }

  private async enterprises(status: Status | undefined, page: number, pageSize: number) {
    // Init applications are still being filled in by their owner: not the operator's business yet.
    const where = and(eq(certifications.type, 'Enterprise'), status ? eq(certifications.status, status) : sql`${certifications.status} <> 'Init'`);
    const [total] = await this.db.select({ n: count() }).from(certifications).where(where);
    const rows = await this.db
      .select({ c: certifications, mobile: users.mobile })
      .from(certifications)
      .innerJoin(users, eq(users.id, certifications.userId))
      .where(where)
      .orderBy(desc(certifications.submittedAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    const items: ReviewItem[] = rows.map(({ c, mobile }) => ({
      id: c.id,
      kind: 'enterprise',
      userId: c.userId,
      mobile: mobile ?? '',
      status: c.status,
      submittedAt: iso(c.submittedAt),
      decidedAt: iso(c.decidedAt),
      reason: c.reason,
      fields: [
        { label: '企业名称', value: c.companyName },
        { label: '统一社会信用代码', value: c.creditCode },
        { label: '法定代表人', value: c.legalPerson },
        { label: '联系人', value: c.contactName },
        { label: '联系电话', value: c.contactMobile },
      ],
      imageUrl: `/api/v1/operator/reviews/enterprise/${c.id}/image`,
    }));
    return { items, total: total?.n ?? 0, page, pageSize };
  }

  private async students(status: Status | undefined, page: number, pageSize: number) {
    const where = status ? eq(studentVerifications.status, status) : sql`${studentVerifications.status} <> 'Init'`;
    const [total] = await this.db.select({ n: count() }).from(studentVerifications).where(where);
    const rows = await this.db
      .select({ s: studentVerifications, mobile: users.mobile })
      .from(studentVerifications)
      .innerJoin(users, eq(users.id, studentVerifications.userId))
      .where(where)
      .orderBy(desc(studentVerifications.submittedAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    const items: ReviewItem[] = rows.map(({ s, mobile }) => ({
      id: s.userId,
      kind: 'student',
      userId: s.userId,
      mobile: mobile ?? '',
      status: s.status,
      submittedAt: iso(s.submittedAt),
      decidedAt: iso(s.decidedAt),
      reason: s.reason,
      fields: [
        { label: '学校', value: s.school },
        { label: '学历', value: s.level ? EducationLevel.label(s.level) : '' },
        { label: '入学年份', value: String(s.enrollYear ?? '') },
        { label: '毕业年份', value: String(s.graduateYear ?? '') },
        { label: '学校邮箱（已验证）', value: s.email },
      ],
      imageUrl: `/api/v1/operator/reviews/student/${s.userId}/image`,
    }));
    return { items, total: total?.n ?? 0, page, pageSize };
  }

  async users(q: string | undefined, page: number, pageSize: number, operatorMobiles: string[]) {
    const conds: SQL[] = [eq(users.isChild, false)];
    if (q) conds.push(or(ilike(users.mobile, `%${q}%`), ilike(users.email, `%${q}%`), ilike(users.name, `%${q}%`))!);
    const where = and(...conds);
    const [total] = await this.db.select({ n: count() }).from(users).where(where);
    const children = sql<number>`(select count(*)::int from users c where c.parent_id = ${users.id} and c.is_child and c.deleted_at is null)`;
    const rows = await this.db
      .select({ u: users, children })
      .from(users)
      .where(where)
      .orderBy(desc(users.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return {
      items: rows.map(({ u, children: n }) => ({
        id: u.id,
        mobile: u.mobile ?? '',
        email: u.email ?? '',
        accountType: u.accountType,
        certType: u.certType,
        certStatus: u.certStatus,
        isStudent: u.isStudent,
        isOperator: u.isOperator || (!!u.mobile && operatorMobiles.includes(u.mobile)),
        disabled: u.disabled,
        children: Number(n),
        createdAt: u.createdAt.toISOString(),
      })),
      total: total?.n ?? 0,
      page,
      pageSize,
    };
  }

  async log(page: number, pageSize: number) {
    const [total] = await this.db.select({ n: count() }).from(accountReviews);
    const subject = sql<string | null>`(select mobile from users s where s.id = ${accountReviews.userId})`;
    const rows = await this.db
      .select({ r: accountReviews, subject, actorMobile: users.mobile })
      .from(accountReviews)
      .leftJoin(users, eq(users.id, accountReviews.actorId))
      .orderBy(desc(accountReviews.createdAt))
      .limit(pageSize)
      .offset((page - 1) * pageSize);
    return {
      items: rows.map(({ r, subject: m, actorMobile }) => ({
        id: r.id,
        kind: r.kind,
        userMobile: m ?? '',
        decision: r.decision,
        reason: r.reason,
        actor: r.actorId ? (actorMobile ?? '') : '实名核验服务',
        createdAt: r.createdAt.toISOString(),
      })),
      total: total?.n ?? 0,
      page,
      pageSize,
    };
  }
}

