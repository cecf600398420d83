import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { CertifyInfo, Child, StudentVerification, User } from '@console/contract';
import { CERT_RETURN_KEY } from '../../../api/client';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const uncertified: CertifyInfo = { certType: 'Uncertified', certStatus: 'Init', certified: false, personal: null, enterprise: null };
const application = { reason: '', submittedAt: null, decidedAt: null };

beforeEach(() => session.setLogin('tok', user));
afterEach(() => {
  vi.unstubAllGlobals();
  sessionStorage.clear();
});

/** By text, not by role: role queries walk the whole accessibility tree and crawl on antd pages in jsdom. */
const button = async (name: string | RegExp, within_: HTMLElement = document.body) =>
  (await within(within_).findByText(name, { selector: 'button span' })).closest('button')!;

async function type(label: string, value: string) {
  fireEvent.change(await screen.findByLabelText(label), { target: { value } });
}

describe('实名认证 (account page, checkInfo tab)', () => {
  it('checks the ID number in the browser, submits, confirms, and returns to the page the real-name gate saved', async () => {
    let info: CertifyInfo = uncertified;
    let me: User = user;
    const fetch = costServer((url, init) => {
      const method = init?.method ?? 'GET';
      if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, me);
      if (url.pathname === '/api/v1/certify/info') return json(200, info);
      if (url.pathname === '/api/v1/certify/personal' && method === 'POST') {
        info = { ...info, personal: { ...application, status: 'Init', name: '张*丰', idNumber: '1101**********002X' } };
        return json(200, info);
      }
      if (url.pathname === '/api/v1/certify/personal/confirm') {
        info = { certType: 'Personal', certStatus: 'Succeed', certified: true, personal: { ...info.personal!, status: 'Succeed' }, enterprise: null };
        me = { ...user, certType: 'Personal', certStatus: 'Succeed', certified: true };
        return json(200, info);
      }
      return undefined;
    });
    sessionStorage.setItem(CERT_RETURN_KEY, '/console/cost/bill?page=2');
    const router = renderApp('/console/account?tab=checkInfo');

    await type('真实姓名', '张三丰');
    await type('身份证号', '110105194912310021');
    fireEvent.blur(screen.getByLabelText('身份证号'));
    expect(await screen.findByText('身份证号校验位不正确，请核对后重新输入')).toBeTruthy();
    fireEvent.click(await button('下一步'));
    await waitFor(() => expect(screen.getAllByText('身份证号校验位不正确，请核对后重新输入').length).toBeGreaterThan(0));
    expect(callsTo(fetch, '/api/v1/certify/personal', 'POST')).toHaveLength(0);

    await type('身份证号', '11010519491231002X');
    fireEvent.click(await button('下一步'));
    expect(await screen.findByText('1101**********002X')).toBeTruthy();
    expect(callsTo(fetch, '/api/v1/certify/personal', 'POST')[0]!.body).toEqual({ name: '张三丰', idNumber: '11010519491231002X' });

    fireEvent.click(await button('确认认证'));
    await waitFor(() => expect(router.state.location.pathname + router.state.location.search).toBe('/console/cost/bill?page=2'));
    expect(session.get().user?.certified).toBe(true);
    expect(sessionStorage.getItem(CERT_RETURN_KEY)).toBeNull();
  });

  it('shows why the verifier failed and offers the form again', async () => {
    costServer((url) =>
      url.pathname === '/api/v1/certify/info'
        ? json(200, {
            ...uncertified,
            certType: 'Personal',
            certStatus: 'Failed',
            personal: { ...application, status: 'Failed', reason: '查无此身份证号', name: '李*', idNumber: '3101**********1234' },
          })
        : undefined,
    );
    renderApp('/console/account?tab=checkInfo');
    expect(await screen.findByText(/认证未通过：查无此身份证号/)).toBeTruthy();
    expect(screen.getByLabelText('身份证号')).toBeTruthy();
  });

  it('walks an enterprise through the licence upload to 审核中', async () => {
    let info: CertifyInfo = uncertified;
    const enterprise = {
      ...application,
      companyName: '北京示例科技有限公司',
      creditCode: '91110000802100433B',
      legalPerson: '李*',
      contactName: '王五',
      contactMobile: '139****0000',
    };
    const fetch = costServer((url, init) => {
      const method = init?.method ?? 'GET';
      if (url.pathname === '/api/v1/certify/info') return json(200, info);
      if (url.pathname === '/api/v1/certify/enterprise' && method === 'POST')
        return json(200, (info = { ...info, enterprise: { ...enterprise, status: 'Init', licenceUploaded: false } }));
      if (url.pathname === '/api/v1/certify/enterprise/upload')
        return json(200, (info = { ...info, enterprise: { ...info.enterprise!, licenceUploaded: true } }));
      if (url.pathname === '/api/v1/certify/enterprise/confirm')
        return json(200, (info = { ...info, certType: 'Enterprise', certStatus: 'Pending', enterprise: { ...info.enterprise!, status: 'Pending' } }));
      return undefined;
    });
    renderApp('/console/account?tab=checkInfo');
    fireEvent.click(await screen.findByText('企业认证'));
    await type('企业名称', '北京示例科技有限公司');
    await type('统一社会信用代码', '91110000802100433C');
    fireEvent.blur(screen.getByLabelText('统一社会信用代码'));
    expect(await screen.findByText('统一社会信用代码校验位不正确，请核对后重新输入')).toBeTruthy();
    await type('统一社会信用代码', '91110000802100433B');
    await type('法定代表人', '李四');
    await type('联系人', '王五');
    await type('联系电话', '13900000000');
    fireEvent.click(await button('下一步：上传营业执照'));
    const submit = await button('提交审核');
    expect(submit.hasAttribute('disabled')).toBe(true);

    const input = document.querySelector<HTMLInputElement>('input[type=file]')!;
    fireEvent.change(input, { target: { files: [new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], 'licence.png', { type: 'image/png' })] } });
    await waitFor(async () => expect((await button('提交审核')).hasAttribute('disabled')).toBe(false));
    const uploads = fetch.mock.calls.filter(([u, init]) => String(u).endsWith('/api/v1/certify/enterprise/upload') && init?.method === 'PUT');
    expect(uploads).toHaveLength(1);
    expect(uploads[0]![1]!.body).toBeInstanceOf(FormData);
    fireEvent.click(await button('提交审核'));
    expect(await screen.findByText('企业认证审核中')).toBeTruthy();
  });
});

describe('子账号 tab', () => {
  it('creates a child with the checked permissions and lists it', async () => {
    const children: Child[] = [];
    const fetch = costServer((url, init) => {
      const method = init?.method ?? 'GET';
      if (url.pathname !== '/userapi/api/v2.1/children') return undefined;
      if (method === 'POST') {
        const body = JSON.parse(String(init!.body)) as { childName: string; permissions: Child['permissions'] };
        children.push({
          id: 'c1',
          childName: body.childName,
          remark: '',
          disabled: false,
          permissions: body.permissions,
          createdAt: '2026-11-23T08:00:00Z',
          lastLoginAt: null,
          spendLimit: null,
          spent: { month: '0', total: '0' },
        });
        return json(200, children[0]);
      }
      return json(200, { items: children, total: children.length, page: 1, pageSize: 10 });
    });
    renderApp('/console/account?tab=children');
    expect(await screen.findByText(/还没有子账号/)).toBeTruthy();
    fireEvent.click(await button(/创建子账号/));
    const dialog = (await screen.findByText('创建子账号', { selector: '.ant-modal-title' })).closest<HTMLElement>('.ant-modal')!;
    fireEvent.change(within(dialog).getByLabelText('子账号名'), { target: { value: 'dev_zhang' } });
    fireEvent.change(within(dialog).getByLabelText('登录密码'), { target: { value: 'abcdefgh' } });
    fireEvent.click(within(dialog).getByLabelText('管理 GPU 实例'));
    fireEvent.click(await button(/保\s*存/, dialog));
    expect(await within(dialog).findByText('密码须同时包含字母和数字，且不含空格')).toBeTruthy();
    expect(callsTo(fetch, '/userapi/api/v2.1/children', 'POST')).toHaveLength(0);

    fireEvent.change(within(dialog).getByLabelText('登录密码'), { target: { value: 'abcd1234' } });
    fireEvent.click(await button(/保\s*存/, dialog));
    const row = (await screen.findByText('dev_zhang')).closest('tr')!;
    expect(within(row).getByText('管理 GPU 实例')).toBeTruthy();
    expect(callsTo(fetch, '/userapi/api/v2.1/children', 'POST')[0]!.body).toMatchObject({
      childName: 'dev_zhang',
      password: 'abcd1234',
      permissions: { gpu: true, createGPUInstance: false, usingLLM: false },
    });
  });

  it('is not offered to a child account', async () => {
    session.setLogin('tok', { ...user, isChild: true, childName: 'kid' });
    costServer((url) => (url.pathname === '/userapi/api/v2.1/users/me/info' ? json(200, { ...user, isChild: true, childName: 'kid' }) : undefined));
    renderApp('/console/account?tab=children');
    expect(await screen.findByText('基本信息')).toBeTruthy();
    expect(screen.queryByText('子账号', { selector: '.ant-tabs-tab-btn' })).toBeNull();
    expect(screen.queryByText('实名认证', { selector: '.ant-tabs-tab-btn' })).toBeNull();
  });
});

describe('学生认证 tab', () => {
  it('wants a school e-mail and keeps 提交审核 off until the student card is uploaded', async () => {
    const v: StudentVerification = {
      status: 'Init',
      isStudent: false,
      school: '',
      level: null,
      enrollYear: null,
      graduateYear: null,
      email: '',
      emailVerified: false,
      imageUploaded: false,
      reason: '',
      submittedAt: null,
      decidedAt: null,
      discountRate: '0.9',
    };
    const fetch = costServer((url) => (url.pathname === '/userapi/api/v3/student_verification' ? json(200, v) : undefined));
    renderApp('/console/account?tab=student');
    expect(await screen.findByText(/享学生价（9 折）/)).toBeTruthy();
    await type('学校邮箱', 'me@qq.com');
    fireEvent.click(await button('获取验证码'));
    expect(await screen.findByText('请使用学校邮箱（如 name@xxx.edu.cn）')).toBeTruthy();
    expect(callsTo(fetch, '/userapi/api/v3/student_verification/emailcode', 'POST')).toHaveLength(0);
    expect((await button('提交审核')).hasAttribute('disabled')).toBe(true);
  });
});

describe('安全设置 tab', () => {
  it('binds an e-mail with the code sent to it and keeps the new address in the session', async () => {
    const fetch = costServer((url, init) => {
      if (url.pathname === '/api/v1/users/verify/emailcode') return json(200, { expiresIn: 300, resendIn: 60 });
      if (url.pathname === '/userapi/api/v2.1/users/me/email' && init?.method === 'PUT') return json(200, { ...user, email: 'me@example.com' });
      return undefined;
    });
    renderApp('/console/account?tab=security');
    await type('邮箱', 'me@example.com');
    const emailCard = (await screen.findByText('邮箱', { selector: '.ant-card-head-title' })).closest<HTMLElement>('.ant-card')!;
    fireEvent.click(await button('获取验证码', emailCard));
    await within(emailCard).findByText(/秒后重新获取/);
    expect(callsTo(fetch, '/api/v1/users/verify/emailcode', 'POST')[0]!.body).toEqual({ email: 'me@example.com', scene: 'email' });
    fireEvent.change(within(emailCard).getByLabelText('验证码'), { target: { value: '123456' } });
    fireEvent.click(await button('绑定邮箱'));
    await waitFor(() => expect(session.get().user?.email).toBe('me@example.com'));
    expect(callsTo(fetch, '/userapi/api/v2.1/users/me/email', 'PUT')[0]!.body).toEqual({ email: 'me@example.com', code: '123456' });
  });

  it('offers a child no password, mobile or e-mail change: its parent manages them', async () => {
    const kid = { ...user, isChild: true, childName: 'kid', mobile: '', email: '' };
    session.setLogin('tok', kid);
    costServer((url) => (url.pathname === '/userapi/api/v2.1/users/me/info' ? json(200, kid) : undefined));
    renderApp('/console/account?tab=security');
    expect(await screen.findByText(/由主账号管理/)).toBeTruthy();
    expect(screen.queryByText('修改密码', { selector: 'button span' })).toBeNull();
    expect(screen.queryByLabelText('原密码')).toBeNull();
    expect(screen.queryByText('更换手机号', { selector: 'button span' })).toBeNull();
    expect(screen.queryByText('绑定邮箱', { selector: 'button span' })).toBeNull();
  });
});
