import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type CertifyInfo, type ReviewItem, type StudentVerification } from '@console/contract';
import { eq } from 'drizzle-orm';
import { countRows, get, json, latestCode, multipart, PNG, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { users } from '../../db/schema.js';

const VALID_ID = '11010519491231002X';
const REJECTED_ID = '310101199001011234';
const COMPANY = {
  companyName: '北京示例科技有限公司',
  creditCode: '91110000802100433B',
  legalPerson: '李四',
  contactName: '王五',
  contactMobile: '13900000000',
};

describe('certification, student verification and the operator reviews', () => {
  let s: TestServer;
  let operator: Awaited<ReturnType<typeof registerUser>>;
  beforeAll(async () => {
    s = await startTestServer({ env: { REALNAME_SANDBOX_REJECT: REJECTED_ID, OPERATOR_MOBILES: '13700000001' } });
    operator = await registerUser(s, '13700000001');
  });
  afterAll(async () => s.close());

  const upload = (url: string, token: string, content = PNG, name = 'a.png') => {
    const { payload, headers } = multipart(name, content, 'image/png');
    return s.app.inject({ method: 'PUT', url, payload, headers: { ...headers, authorization: `Bearer ${token}` } });
  };
  const info = async (token: string) => json<CertifyInfo>(await get(s.app, API.certifyInfo, token));
  const me = async (token: string) => json(await get(s.app, API.meInfo, token));
  const decide = (kind: string, id: string, body: object, token = operator.token) =>
    post(s.app, API.operatorReview.replace(':kind', kind).replace(':id', id), body, token);

  describe('personal', () => {
    it('checks the identity number before anything is stored, then certifies through the verifier', async () => {
      const u = await registerUser(s);
      for (const idNumber of ['110105194912310021', '11010519491231002', '11010520991231002X']) {
        expect(json(await post(s.app, API.certifyPersonal, { name: '张三', idNumber }, u.token))).toMatchObject({ code: 40000001 });
      }
      expect(json(await post(s.app, API.certifyPersonal, { idNumber: VALID_ID }, u.token))).toMatchObject({ code: 40000001 });
      expect(await countRows(s, 'certifications')).toBe(0);
      expect(json(await post(s.app, API.certifyPersonalConfirm, undefined, u.token))).toMatchObject({ code: 40030002 });

      const submitted = json<CertifyInfo>(await post(s.app, API.certifyPersonal, { name: '张三丰', idNumber: VALID_ID.toLowerCase() }, u.token));
      expect(submitted.personal).toMatchObject({ status: 'Init', name: '张*丰', idNumber: '1101**********002X' });
      expect(submitted.certified).toBe(false);

      const done = json<CertifyInfo>(await post(s.app, API.certifyPersonalConfirm, undefined, u.token));
      expect(done).toMatchObject({ certType: 'Personal', certStatus: 'Succeed', certified: true, personal: { status: 'Succeed' } });
      expect(await me(u.token)).toMatchObject({ certified: true, certType: 'Personal', certStatus: 'Succeed', name: '张三丰' });
      expect(json(await post(s.app, API.certifyPersonal, { name: '张三丰', idNumber: VALID_ID }, u.token))).toMatchObject({ code: 40030004 });
      // The verifier's decision is in the review log, as "实名核验服务".
      const log = json<{ items: { kind: string; actor: string; decision: string; userMobile: string }[] }>(
        await get(s.app, API.operatorReviewLog, operator.token),
      );
      expect(log.items.find((l) => l.userMobile === u.mobile)).toMatchObject({ kind: 'personal', actor: '实名核验服务', decision: 'approve' });
      // The stored number is sealed, never in clear.
      const raw = await s.ctx.db.execute(`select id_number_sealed from certifications where user_id = '${u.user.id}'`);
      expect(JSON.stringify(raw)).not.toContain(VALID_ID);
    });

    it('fails an identity the verifier rejects, with the reason, and lets the user submit again', async () => {
      const u = await registerUser(s);
      await post(s.app, API.certifyPersonal, { name: '李四', idNumber: REJECTED_ID }, u.token);
      const failed = json<CertifyInfo>(await post(s.app, API.certifyPersonalConfirm, undefined, u.token));
      expect(failed).toMatchObject({ certType: 'Personal', certStatus: 'Failed', certified: false, personal: { status: 'Failed', reason: '查无此身份证号' } });
      expect(json(await post(s.app, API.certifyPersonalConfirm, undefined, u.token))).toMatchObject({ code: 40030001 });
      await post(s.app, API.certifyPersonal, { name: '李四', idNumber: VALID_ID }, u.token);
      expect(json<CertifyInfo>(await post(s.app, API.certifyPersonalConfirm, undefined, u.token)).certified).toBe(true);
    });

    it('goes back to Init when the verifier cannot be reached, so confirming again works', async () => {
      const u = await registerUser(s);
      await post(s.app, API.certifyPersonal, { name: '王五', idNumber: VALID_ID }, u.token);
      const verifier = s.ctx.drivers.realName;
      const original = verifier.verify.bind(verifier);
      verifier.verify = async () => {
        throw new Error('connect ECONNREFUSED');
      };
      try {
        expect(json(await post(s.app, API.certifyPersonalConfirm, undefined, u.token))).toMatchObject({ code: 50200001 });
      } finally {
        verifier.verify = original;
      }
      expect((await info(u.token)).personal?.status).toBe('Init');
      expect(json<CertifyInfo>(await post(s.app, API.certifyPersonalConfirm, undefined, u.token)).certified).toBe(true);
    });
  });

  describe('enterprise', () => {
    it('needs a valid credit code and a licence image, then waits for the operator, who approves', async () => {
      const u = await registerUser(s);
      expect(json(await post(s.app, API.certifyEnterprise, { ...COMPANY, creditCode: '91110000802100433C' }, u.token))).toMatchObject({ code: 40000001 });
      expect(json(await upload(API.certifyEnterpriseUpload, u.token))).toMatchObject({ code: 40030002 });
      expect(await countRows(s, `certifications where user_id = '${u.user.id}'`)).toBe(0);

      await post(s.app, API.certifyEnterprise, COMPANY, u.token);
      expect(json(await post(s.app, API.certifyEnterpriseConfirm, undefined, u.token))).toMatchObject({ code: 40030005 });
      expect(json(await upload(API.certifyEnterpriseUpload, u.token, Buffer.from('%PDF-1.4 not an image')))).toMatchObject({ code: 40010008 });
      expect(json(await upload(API.certifyEnterpriseUpload, u.token, Buffer.concat([PNG, Buffer.alloc(5 * 1024 * 1024)])))).toMatchObject({ code: 41300002 });
      expect(json<CertifyInfo>(await upload(API.certifyEnterpriseUpload, u.token)).enterprise?.licenceUploaded).toBe(true);

      const pending = json<CertifyInfo>(await post(s.app, API.certifyEnterpriseConfirm, undefined, u.token));
      expect(pending).toMatchObject({ certType: 'Enterprise', certStatus: 'Pending', enterprise: { status: 'Pending' } });
      expect(json(await post(s.app, API.certifyEnterprise, COMPANY, u.token))).toMatchObject({ code: 40030003 });
      expect(json(await post(s.app, API.certifyPersonal, { name: '张三', idNumber: VALID_ID }, u.token))).toMatchObject({ code: 40030003 });

      const queue = json<{ items: ReviewItem[] }>(await get(s.app, `${API.operatorReviews}?kind=enterprise&status=Pending`, operator.token));
      const item = queue.items.find((i) => i.userId === u.user.id)!;
      expect(item.fields).toContainEqual({ label: '统一社会信用代码', value: '91110000802100433B' });
      const image = await s.app.inject({ method: 'GET', url: item.imageUrl, headers: { authorization: `Bearer ${operator.token}` } });
      expect(image.statusCode).toBe(200);
      expect(image.headers['content-type']).toBe('image/png');
      // Nobody else reads the licence: not its owner through the API, not anyone through /files.
      expect((await s.app.inject({ method: 'GET', url: item.imageUrl, headers: { authorization: `Bearer ${u.token}` } })).statusCode).toBe(403);

      expect((await decide('enterprise', item.id, { decision: 'approve' })).statusCode).toBe(200);
      expect(await me(u.token)).toMatchObject({ certified: true, certType: 'Enterprise', accountType: 'enterprise', name: COMPANY.companyName });
      expect(json(await decide('enterprise', item.id, { decision: 'reject', reason: '重复处理' }))).toMatchObject({ code: 40930102 });
    });

    it('keeps a personally certified user certified while an enterprise application is rejected', async () => {
      const u = await registerUser(s);
      await post(s.app, API.certifyPersonal, { name: '赵六', idNumber: VALID_ID }, u.token);
      await post(s.app, API.certifyPersonalConfirm, undefined, u.token);
      await post(s.app, API.certifyEnterprise, COMPANY, u.token);
      await upload(API.certifyEnterpriseUpload, u.token);
      await post(s.app, API.certifyEnterpriseConfirm, undefined, u.token);
      const id = (await info(u.token)).enterprise!;
      expect(id.status).toBe('Pending');
      const [row] = (
        (await s.ctx.db.execute(`select id from certifications where user_id = '${u.user.id}' and type = 'Enterprise'`)) as unknown as {
          rows: { id: string }[];
        }
      ).rows;
      expect(json(await decide('enterprise', row!.id, { decision: 'reject' }))).toMatchObject({ code: 40000001 });
      expect((await decide('enterprise', row!.id, { decision: 'reject', reason: '营业执照照片模糊' })).statusCode).toBe(200);
      expect(await info(u.token)).toMatchObject({ certType: 'Personal', certStatus: 'Succeed', enterprise: { status: 'Failed', reason: '营业执照照片模糊' } });
    });

    it('lets only operators review, and not personal applications', async () => {
      const u = await registerUser(s);
      expect(json(await get(s.app, `${API.operatorReviews}?kind=enterprise`, u.token))).toMatchObject({ code: 40300002 });
      expect(json(await get(s.app, `${API.operatorReviews}?kind=people`, operator.token))).toMatchObject({ code: 40000001 });
      await post(s.app, API.certifyPersonal, { name: '钱七', idNumber: REJECTED_ID }, u.token);
      const [row] = ((await s.ctx.db.execute(`select id from certifications where user_id = '${u.user.id}'`)) as unknown as { rows: { id: string }[] }).rows;
      expect(json(await decide('enterprise', row!.id, { decision: 'approve' }))).toMatchObject({ code: 40300002 });
      expect((await info(u.token)).certified).toBe(false);
    });
  });

  describe('student verification', () => {
    const REQUEST = { school: '清华大学', level: 'master', enrollYear: 2025, graduateYear: 2028, email: 'stu@mails.tsinghua.edu.cn' };

    it('needs a school e-mail code and a student card, then the operator approves and the student price applies', async () => {
      const u = await registerUser(s);
      expect(json<StudentVerification>(await get(s.app, API.student, u.token))).toMatchObject({ status: 'Init', isStudent: false });
      expect(json(await post(s.app, API.studentEmailCode, { email: 'stu@qq.com' }, u.token))).toMatchObject({ code: 40000001 });
      expect((await post(s.app, API.studentEmailCode, { email: REQUEST.email }, u.token)).statusCode).toBe(200);
      const code = await latestCode(s.app, REQUEST.email);

      expect(json(await post(s.app, API.student, { ...REQUEST, code }, u.token))).toMatchObject({ code: 40030007 });
      expect(json(await post(s.app, API.student, { ...REQUEST, graduateYear: 2024, enrollYear: 2020, code }, u.token))).toMatchObject({ code: 40030009 });
      expect(json(await post(s.app, API.student, { ...REQUEST, level: 'postdoc', code }, u.token))).toMatchObject({ code: 40000001 });
      await upload(API.studentImage, u.token);
      expect(json(await post(s.app, API.student, { ...REQUEST, code: code === '000000' ? '111111' : '000000' }, u.token))).toMatchObject({ code: 40010001 });
      const pending = json<StudentVerification>(await post(s.app, API.student, { ...REQUEST, code }, u.token));
      expect(pending).toMatchObject({ status: 'Pending', emailVerified: true, imageUploaded: true, school: '清华大学' });
      expect(json(await post(s.app, API.student, { ...REQUEST, code }, u.token))).toMatchObject({ code: 40030003 });
      expect(json(await upload(API.studentImage, u.token))).toMatchObject({ code: 40030003 });

      const before = json<{ total: string }>(
        await post(s.app, API.gpuOrderUserPrice, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1 }, u.token),
      ).total;
      expect((await decide('student', u.user.id, { decision: 'approve' })).statusCode).toBe(200);
      expect(await me(u.token)).toMatchObject({ isStudent: true });
      const after = json<{ total: string; lines: { kind: string }[] }>(
        await post(s.app, API.gpuOrderUserPrice, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1 }, u.token),
      );
      // The catalogue's student price is 0.9 of the list price.
      expect(json<StudentVerification>(await get(s.app, API.student, u.token)).discountRate).toBe('0.9');
      expect(BigInt(after.total)).toBeLessThan(BigInt(before));
      expect(after.lines.map((l) => l.kind)).toContain('studentDiscount');
      expect(json(await post(s.app, API.studentEmailCode, { email: REQUEST.email }, u.token))).toMatchObject({ code: 40030008 });
    });

    it('records a rejection with its reason, after which the student may apply again', async () => {
      const u = await registerUser(s);
      await upload(API.studentImage, u.token);
      await post(s.app, API.studentEmailCode, { email: 'x@pku.edu.cn' }, u.token);
      const code = await latestCode(s.app, 'x@pku.edu.cn');
      await post(s.app, API.student, { ...REQUEST, email: 'x@pku.edu.cn', code }, u.token);
      expect((await decide('student', u.user.id, { decision: 'reject', reason: '学生证已过期' })).statusCode).toBe(200);
      expect(json<StudentVerification>(await get(s.app, API.student, u.token))).toMatchObject({ status: 'Failed', reason: '学生证已过期', isStudent: false });
      expect(json(await upload(API.studentImage, u.token)).status).toBe('Failed');
    });
  });

  it('refuses an operator deciding their own enterprise or student application, which another operator decides', async () => {
    const own = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, own.user.id));
    await post(s.app, API.certifyEnterprise, COMPANY, own.token);
    await upload(API.certifyEnterpriseUpload, own.token);
    await post(s.app, API.certifyEnterpriseConfirm, undefined, own.token);
    const email = 'own@mails.tsinghua.edu.cn';
    await upload(API.studentImage, own.token);
    await post(s.app, API.studentEmailCode, { email }, own.token);
    const code = await latestCode(s.app, email);
    const student = { school: '清华大学', level: 'master', enrollYear: 2025, graduateYear: 2028, email, code };
    expect((await post(s.app, API.student, student, own.token)).statusCode).toBe(200);
    const queue = json<{ items: ReviewItem[] }>(await get(s.app, `${API.operatorReviews}?kind=enterprise&status=Pending`, own.token));
    const application = queue.items.find((i) => i.userId === own.user.id)!;

    for (const [kind, id] of [
      ['enterprise', application.id],
      ['student', own.user.id],
    ] as const) {
      for (const body of [{ decision: 'approve' }, { decision: 'reject', reason: '自己驳回自己' }]) {
        const res = await decide(kind, id, body, own.token);
        expect(res.statusCode, res.body).toBe(403);
        expect(json(res)).toMatchObject({ code: 40300007, message: expect.stringContaining('不能审核自己的申请') });
      }
    }
    expect(await info(own.token)).toMatchObject({ certStatus: 'Pending', enterprise: { status: 'Pending' } });
    expect(json<StudentVerification>(await get(s.app, API.student, own.token))).toMatchObject({ status: 'Pending', isStudent: false });
    // Another operator decides them.
    expect((await decide('enterprise', application.id, { decision: 'approve' })).statusCode).toBe(200);
    expect((await decide('student', own.user.id, { decision: 'approve' })).statusCode).toBe(200);
    expect(await me(own.token)).toMatchObject({ certified: true, isStudent: true });
  });

  it('refuses certification and student verification to a child account', async () => {
    const parent = await registerUser(s);
    await post(s.app, API.children, { childName: 'kid', password: 'Kid12345' }, parent.token);
    const child = json(await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName: 'kid', password: 'Kid12345' })).token as string;
    expect(json(await post(s.app, API.certifyPersonal, { name: '张三', idNumber: VALID_ID }, child))).toMatchObject({ code: 40300005 });
    expect(json(await get(s.app, API.student, child))).toMatchObject({ code: 40300005 });
    // …but sees its parent's certification, which the gate reads.
    await post(s.app, API.certifyPersonal, { name: '张三', idNumber: VALID_ID }, parent.token);
    await post(s.app, API.certifyPersonalConfirm, undefined, parent.token);
    expect(await me(child)).toMatchObject({ certified: true, certStatus: 'Succeed' });
  });

  it('answers 40311001 to an uncertified buyer when the operator requires real names for purchases', async () => {
    const gated = await startTestServer({ env: { REQUIRE_REALNAME_FOR_PURCHASE: 'true' } });
    try {
      const u = await registerUser(gated);
      const buy = () => post(gated.app, API.gpuOrderCreate, { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', cycle: 'Day', duration: 1 }, u.token);
      const refused = await buy();
      expect(refused.statusCode).toBe(403);
      expect(json(refused)).toMatchObject({ code: 40311001 });
      expect(await countRows(gated, 'orders')).toBe(0);
      await post(gated.app, API.certifyPersonal, { name: '张三', idNumber: VALID_ID }, u.token);
      await post(gated.app, API.certifyPersonalConfirm, undefined, u.token);
      expect((await buy()).statusCode).toBe(200);
    } finally {
      await gated.close();
    }
  });
});
