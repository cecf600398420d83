/**
 * What the operator area reads: review queues (enterprise certifications, student verifications),
 * users with their certification state, and the log of every decision — each from the module that
 * owns it, with the accounts' mobile numbers from the users module.
 */
import { CertStatus, EducationLevel, type ReviewItem } from '@console/contract';
import type { CertificationService, CertRow } from '../certification/index.js';
import type { StudentRow, StudentService } from '../students/index.js';
import type { UserService } from '../users/index.js';

type Status = (typeof CertStatus.values)[number];
const iso = (d: Date | null) => d?.toISOString() ?? null;

export class ReviewQueries {
  constructor(private deps: { certification: CertificationService; students: StudentService; users: UserService }) {}

  async queue(kind: 'enterprise' | 'student', status: Status | undefined, page: number, pageSize: number) {
    const { rows, total } =
      kind === 'enterprise'
        ? await this.deps.certification.enterpriseApplications(status, page, pageSize)
        : await this.deps.students.applications(status, page, pageSize);
    const mobiles = await this.deps.users.mobilesOf(rows.map((r) => r.userId));
    const items = rows.map((r) => (kind === 'enterprise' ? enterpriseItem(r as CertRow, mobiles) : studentItem(r as StudentRow, mobiles)));
    return { items, total, page, pageSize };
  }

  async users(q: string | undefined, page: number, pageSize: number, operatorMobiles: string[]) {
    const { rows, total } = await this.deps.users.mainAccounts(q, page, pageSize);
    return {
      items: rows.map(({ user: u, children }) => ({
        id: u.id,
        mobile: u.mobile ?? '',
        email: u.email ?? '',
        accountType: u.accountType,
        certType: u.certType,
        certStatus: u.certStatus,
        isStudent: u.isStudent,
        isOperator: u.isOperator || (!!u.mobile && operatorMobiles.includes(u.mobile)),
        disabled: u.disabled,
        children,
        createdAt: u.createdAt.toISOString(),
      })),
      total,
      page,
      pageSize,
    };
  }

  async log(page: number, pageSize: number) {
    const { rows, total } = await this.deps.certification.reviewLog(page, pageSize);
    const mobiles = await this.deps.users.mobilesOf(rows.flatMap((r) => (r.actorId ? [r.userId, r.actorId] : [r.userId])));
    return {
      items: rows.map((r) => ({
        id: r.id,
        kind: r.kind,
        userMobile: mobiles.get(r.userId) ?? '',
        decision: r.decision,
        reason: r.reason,
        actor: r.actorId ? (mobiles.get(r.actorId) ?? '') : '实名核验服务',
        createdAt: r.createdAt.toISOString(),
      })),
      total,
      page,
      pageSize,
    };
  }
}

function enterpriseItem(c: CertRow, mobiles: Map<string, string>): ReviewItem {
  return {
    id: c.id,
    kind: 'enterprise',
    userId: c.userId,
    mobile: mobiles.get(c.userId) ?? '',
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
  };
}

function studentItem(s: StudentRow, mobiles: Map<string, string>): ReviewItem {
  return {
    id: s.userId,
    kind: 'student',
    userId: s.userId,
    mobile: mobiles.get(s.userId) ?? '',
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
  };
}
