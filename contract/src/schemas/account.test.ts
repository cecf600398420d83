import { describe, expect, it } from 'vitest';
import {
  canCert,
  CERT_TRANSITIONS,
  creditCodeProblem,
  createChildSchema,
  enterpriseCertifySchema,
  personalCertifySchema,
  residentIdProblem,
  reviewDecisionSchema,
  studentVerificationRequestSchema,
} from './account.js';

const TODAY = new Date('2026-11-23T00:00:00Z');

describe('GB 11643 resident identity numbers', () => {
  it.each(['11010519491231002X', '11010519491231002x', '310101199001011234', '440305200002290010'])('accepts %s', (id) => {
    expect(residentIdProblem(id, TODAY)).toBeNull();
  });

  it.each([
    ['110105194912310021', '校验位'], // one digit off in the check character
    ['11010519491231002', '18 位'],
    ['1101051949123100XX', '18 位'],
    ['991051194912310020', '地区码'],
    ['110105194902300021', '出生日期'], // 30 February
    ['440305200102290018', '出生日期'], // 2001 is not a leap year
    ['11010520991231002X', '晚于今天'],
  ])('rejects %s (%s)', (id, why) => {
    expect(residentIdProblem(id, TODAY)).toContain(why);
  });
});

describe('GB 32100 unified social credit codes', () => {
  it.each(['91350100M000100Y43', '91110000802100433B', '91110000802100433b'])('accepts %s', (code) => {
    expect(creditCodeProblem(code)).toBeNull();
  });

  it.each([
    ['91350100M000100Y44', '校验位'],
    ['91350100M000100Y4', '18 位'],
    ['91350100M0001O0Y43', '无效字符'], // the letter O is not used
    ['Z1350100M000100Y43', '无效字符'],
    ['01350100M000100Y43', '登记管理部门'],
  ])('rejects %s (%s)', (code, why) => {
    expect(creditCodeProblem(code)).toContain(why);
  });
});

describe('certification state machine', () => {
  it('goes submit → confirm → approve or reject, and a failed application may be submitted again', () => {
    expect(canCert('submit', 'none')).toBe(true);
    expect(canCert('confirm', 'Init')).toBe(true);
    expect(canCert('approve', 'Pending')).toBe(true);
    expect(canCert('reject', 'Pending')).toBe(true);
    expect(canCert('submit', 'Failed')).toBe(true);
  });

  it('refuses every other move', () => {
    const statuses = ['none', 'Init', 'Pending', 'Succeed', 'Failed'] as const;
    const legal = new Set(Object.entries(CERT_TRANSITIONS).flatMap(([a, t]) => t.from.map((f) => `${a}:${f}`)));
    for (const action of Object.keys(CERT_TRANSITIONS) as (keyof typeof CERT_TRANSITIONS)[]) {
      for (const from of statuses) expect(canCert(action, from)).toBe(legal.has(`${action}:${from}`));
    }
    expect(canCert('submit', 'Pending')).toBe(false);
    expect(canCert('submit', 'Succeed')).toBe(false);
    expect(canCert('confirm', 'none')).toBe(false);
  });
});

describe('request schemas', () => {
  it('normalises a lower-case x and rejects a wrong name', () => {
    expect(personalCertifySchema.parse({ name: '张三', idNumber: ' 11010519491231002x ' }).idNumber).toBe('11010519491231002X');
    expect(personalCertifySchema.safeParse({ name: '张', idNumber: '11010519491231002X' }).success).toBe(false);
  });

  it('checks the credit code and the contact mobile of an enterprise', () => {
    const ok = {
      companyName: '北京示例科技有限公司',
      creditCode: '91110000802100433B',
      legalPerson: '李四',
      contactName: '王五',
      contactMobile: '13900000000',
    };
    expect(enterpriseCertifySchema.safeParse(ok).success).toBe(true);
    const bad = enterpriseCertifySchema.safeParse({ ...ok, creditCode: '91110000802100433C' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toContain('校验位');
  });

  it('wants a school e-mail and a graduation year not before enrolment', () => {
    const ok = { school: '清华大学', level: 'master', enrollYear: 2024, graduateYear: 2027, email: 'a@mails.tsinghua.edu.cn', code: '123456' };
    expect(studentVerificationRequestSchema.safeParse(ok).success).toBe(true);
    expect(studentVerificationRequestSchema.safeParse({ ...ok, email: 'a@qq.com' }).error?.issues[0]?.message).toContain('学校邮箱');
    expect(studentVerificationRequestSchema.safeParse({ ...ok, graduateYear: 2023 }).error?.issues[0]?.message).toContain('不能早于');
    expect(studentVerificationRequestSchema.safeParse({ ...ok, level: 'doctor' }).success).toBe(false);
  });

  it('names children with letters, digits and underscores', () => {
    expect(createChildSchema.safeParse({ childName: 'dev_01', password: 'abc12345' }).success).toBe(true);
    expect(createChildSchema.safeParse({ childName: '1dev', password: 'abc12345' }).success).toBe(false);
    expect(createChildSchema.safeParse({ childName: 'dev', password: 'abc12345', permissions: { gpu: 'yes' } }).success).toBe(false);
  });

  it('needs a reason to reject', () => {
    expect(reviewDecisionSchema.safeParse({ decision: 'reject' }).success).toBe(false);
    expect(reviewDecisionSchema.safeParse({ decision: 'reject', reason: '执照模糊' }).success).toBe(true);
    expect(reviewDecisionSchema.safeParse({ decision: 'approve' }).success).toBe(true);
  });
});
