import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { User } from '@console/contract';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';

let fetchMock: Mock<typeof fetch>;

/** A child account granted only the GPU instance list. */
const child: User = { ...user, id: 'c1', childName: 'alice', isChild: true, gpu: true };

/** A small fake of the server, by path. */
function serve(url: string, init?: RequestInit): Response {
  const path = url.split('?')[0];
  const bearer = (init?.headers as Record<string, string> | undefined)?.Authorization;
  if (path === '/userapi/api/v2.1/login') return json(200, { token: 'tok-new', user });
  if (path === '/userapi/api/v2.1/register') return json(200, { token: 'tok-new', user });
  if (path === '/userapi/api/v2.1/password/reset') return json(200, { ok: true });
  if (path === '/userapi/api/v2.1/login/child') return json(200, { token: 'tok-child', user: child });
  if (path === '/userapi/api/v2.1/users/me/info' && bearer === 'Bearer tok-child') return json(200, child);
  if (path === '/api/v1/users/verify/smscode') return json(200, { expiresIn: 300, resendIn: 60 });
  if (path === '/userapi/api/v2.1/users/me/info') return json(200, user);
  if (path === '/dev/outbox') return json(200, { items: [] });
  if (path === '/order/api/v2.1/promotion') return json(200, { rechargeBonusRate: '0.18', newUserVoucher: '500000' });
  if (path === '/api/v1/site/settings') return json(200, { customerServiceUrl: 'https://work.weixin.qq.com/kfid/x' });
  return json(404, { code: 40400001, message: '请求的接口不存在' });
}

beforeEach(() => {
  fetchMock = vi.fn<typeof fetch>(async (input, init) => serve(String(input), init));
  vi.stubGlobal('fetch', fetchMock);
  session.reload();
});
afterEach(() => vi.unstubAllGlobals());

describe('the login / register screen', () => {
  it('switches between login and register modes', async () => {
    const router = renderApp('/login?redirect=%2Fconsole%2Fapp');
    expect(await screen.findByRole('heading', { name: '欢迎登录' })).toBeTruthy();
    expect(screen.getByRole('tab', { name: '密码登录' })).toBeTruthy();
    expect(screen.getByPlaceholderText('手机号或邮箱')).toBeTruthy();

    fireEvent.click(screen.getByRole('tab', { name: '验证码登录' }));
    expect(await screen.findByRole('button', { name: '获取验证码' })).toBeTruthy();

    fireEvent.click(screen.getByRole('link', { name: '立即注册' }));
    expect(await screen.findByRole('heading', { name: '注册账号' })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/register');
    expect(router.state.location.search).toBe('?redirect=%2Fconsole%2Fapp'); // the target survives the switch
    expect(screen.getByText('密码需 8-32 位，且同时包含字母和数字')).toBeTruthy();
    expect(screen.getByRole('button', { name: '获取验证码' })).toBeTruthy();
    expect(screen.getByRole('button', { name: /注\s*册/ })).toBeTruthy();

    fireEvent.click(screen.getByRole('link', { name: '立即登录' }));
    expect(await screen.findByRole('heading', { name: '欢迎登录' })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/login');
  });

  it('asks for a code only for a valid mobile, then counts down 60 s', async () => {
    renderApp('/register');
    const mobile = await screen.findByPlaceholderText('请输入手机号');
    fireEvent.change(mobile, { target: { value: '123' } });
    fireEvent.click(screen.getByRole('button', { name: '获取验证码' }));
    expect(await screen.findByText('请输入正确的 11 位手机号')).toBeTruthy();
    expect(fetchMock).not.toHaveBeenCalled();

    fireEvent.change(mobile, { target: { value: '13800138000' } });
    fireEvent.click(screen.getByRole('button', { name: '获取验证码' }));
    expect(await screen.findByRole('button', { name: '60 秒后重新获取' })).toBeTruthy();
    const [url, init] = fetchMock.mock.calls[0]!;
    expect(url).toBe('/api/v1/users/verify/smscode');
    expect(JSON.parse(init!.body as string)).toEqual({ mobile: '13800138000', scene: 'register' });
  });

  it('a password login stores the session and goes to the redirect target', async () => {
    const router = renderApp('/login?redirect=%2Fstats%2Fpurchase');
    fireEvent.change(await screen.findByPlaceholderText('手机号或邮箱'), { target: { value: '13800138000' } });
    fireEvent.change(screen.getByPlaceholderText('请输入密码'), { target: { value: 'abc12345' } });
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: /登\s*录/ }));
    });
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/purchase'));
    expect(localStorage.getItem('token')).toBe('tok-new');
    expect(JSON.parse(localStorage.getItem('user')!)).toMatchObject({ id: 'u1' });
    const [, init] = fetchMock.mock.calls.find(([u]) => u === '/userapi/api/v2.1/login')!;
    expect(JSON.parse(init!.body as string)).toEqual({ account: '13800138000', password: 'abc12345' });
  });

  it('a child account logs in with the parent mobile, its name and password, then goes where children go', async () => {
    const router = renderApp('/login?redirect=%2Fconsole%2Fapp');
    fireEvent.click(await screen.findByRole('tab', { name: '子账号登录' }));
    await screen.findByPlaceholderText('主账号的手机号');
    // Every login tab has its own 登录 button; press the one of the open tab.
    const form = screen.getByPlaceholderText('主账号的手机号').closest('form')!;
    const submit = () => fireEvent.click(within(form).getByRole('button', { name: /登\s*录/ }));

    submit();
    expect(await screen.findByText('请输入主账号手机号')).toBeTruthy();
    expect(screen.getByText('请输入子账号名')).toBeTruthy();
    fireEvent.change(screen.getByPlaceholderText('主账号的手机号'), { target: { value: '12345' } });
    expect(await screen.findByText('请输入正确的 11 位手机号')).toBeTruthy();
    fireEvent.change(screen.getByPlaceholderText('主账号为你创建的子账号名'), { target: { value: '   ' } });
    expect(await screen.findByText('请输入子账号名')).toBeTruthy();
    expect(fetchMock.mock.calls.some(([u]) => u === '/userapi/api/v2.1/login/child')).toBe(false);

    fireEvent.change(screen.getByPlaceholderText('主账号的手机号'), { target: { value: ' 13800138000 ' } });
    fireEvent.change(screen.getByPlaceholderText('主账号为你创建的子账号名'), { target: { value: 'alice ' } });
    fireEvent.change(screen.getByPlaceholderText('请输入子账号密码'), { target: { value: 'Child123' } });
    await act(async () => submit());

    // The password login's redirect handling: the target is not open to this child, so the guard sends it home.
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/gpu-generic'));
    expect(localStorage.getItem('token')).toBe('tok-child');
    expect(JSON.parse(localStorage.getItem('user')!)).toMatchObject({ id: 'c1', isChild: true, childName: 'alice' });
    const [, init] = fetchMock.mock.calls.find(([u]) => u === '/userapi/api/v2.1/login/child')!;
    expect(JSON.parse(init!.body as string)).toEqual({ parentMobile: '13800138000', childName: 'alice', password: 'Child123' });
  });

  it('a logged-in visitor opening /login is sent on', async () => {
    session.setLogin('tok', user);
    const router = renderApp('/login');
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/cloud/gpu'));
    expect(await screen.findByText('充值返 18% 赠送金', { exact: false })).toBeTruthy();
  });

  it('registers only with the 用户协议 and 隐私政策 agreed to: the box is required and linked to both documents', async () => {
    const router = renderApp('/register');
    fireEvent.change(await screen.findByPlaceholderText('请输入手机号'), { target: { value: '13800138000' } });
    fireEvent.change(screen.getByPlaceholderText('6 位验证码'), { target: { value: '123456' } });
    fireEvent.change(screen.getByPlaceholderText('设置登录密码'), { target: { value: 'Abcd1234' } });

    const box = screen.getByRole('checkbox', { name: /我已阅读并同意/ }) as HTMLInputElement;
    expect(box.checked).toBe(false); // never ticked for the visitor
    const userDoc = screen.getByRole('link', { name: '《用户协议》' });
    const privacyDoc = screen.getByRole('link', { name: '《隐私政策》' });
    expect([userDoc.getAttribute('href'), userDoc.getAttribute('target')]).toEqual(['/agreement/user', '_blank']);
    expect([privacyDoc.getAttribute('href'), privacyDoc.getAttribute('target')]).toEqual(['/agreement/privacy', '_blank']);

    fireEvent.click(screen.getByRole('button', { name: /注\s*册/ }));
    expect(await screen.findByText('请阅读并同意用户协议和隐私政策')).toBeTruthy();
    expect(fetchMock.mock.calls.some(([u]) => u === '/userapi/api/v2.1/register')).toBe(false);

    fireEvent.click(box);
    await waitFor(() => expect(screen.queryByText('请阅读并同意用户协议和隐私政策')).toBeNull());
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: /注\s*册/ }));
    });
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/cloud/gpu'));
    const [, init] = fetchMock.mock.calls.find(([u]) => u === '/userapi/api/v2.1/register')!;
    expect(JSON.parse(init!.body as string)).toEqual({ mobile: '13800138000', code: '123456', password: 'Abcd1234', agreed: true });
  });

  it('忘记密码 on the login screen resets the password with an SMS code, then asks to log in again', async () => {
    const router = renderApp('/login?redirect=%2Fconsole%2Fapp');
    fireEvent.click(await screen.findByRole('link', { name: '忘记密码' }));
    expect(await screen.findByRole('heading', { name: '找回密码' })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/password/reset');

    fireEvent.change(screen.getByPlaceholderText('注册时使用的手机号'), { target: { value: '13800138000' } });
    fireEvent.click(screen.getByRole('button', { name: '获取验证码' }));
    expect(await screen.findByRole('button', { name: '60 秒后重新获取' })).toBeTruthy();
    const [, sent] = fetchMock.mock.calls.find(([u]) => u === '/api/v1/users/verify/smscode')!;
    expect(JSON.parse(sent!.body as string)).toEqual({ mobile: '13800138000', scene: 'reset' });

    fireEvent.change(screen.getByPlaceholderText('6 位验证码'), { target: { value: '654321' } });
    fireEvent.change(screen.getByPlaceholderText('设置新的登录密码'), { target: { value: 'Newpass123' } });
    fireEvent.change(screen.getByPlaceholderText('再次输入新密码'), { target: { value: 'Newpass124' } });
    fireEvent.click(screen.getByRole('button', { name: '重置密码' }));
    expect(await screen.findByText('两次输入的密码不一致')).toBeTruthy();
    expect(fetchMock.mock.calls.some(([u]) => u === '/userapi/api/v2.1/password/reset')).toBe(false);

    fireEvent.change(screen.getByPlaceholderText('再次输入新密码'), { target: { value: 'Newpass123' } });
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: '重置密码' }));
    });
    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
    expect(router.state.location.search).toBe('?redirect=%2Fconsole%2Fapp');
    expect(await screen.findByText('密码已重置，请使用新密码登录')).toBeTruthy();
    const [, reset] = fetchMock.mock.calls.find(([u]) => u === '/userapi/api/v2.1/password/reset')!;
    expect(JSON.parse(reset!.body as string)).toEqual({ mobile: '13800138000', code: '654321', password: 'Newpass123' });
  });

  it('a logged-in user who resets the password is logged out here too (the server ended every session), without a 登录已失效 error', async () => {
    session.setLogin('tok', user);
    const router = renderApp('/password/reset');
    fireEvent.change(await screen.findByPlaceholderText('注册时使用的手机号'), { target: { value: '13800138000' } });
    fireEvent.change(screen.getByPlaceholderText('6 位验证码'), { target: { value: '654321' } });
    fireEvent.change(screen.getByPlaceholderText('设置新的登录密码'), { target: { value: 'Newpass123' } });
    fireEvent.change(screen.getByPlaceholderText('再次输入新密码'), { target: { value: 'Newpass123' } });
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: '重置密码' }));
    });
    expect(await screen.findByText('密码已重置，请使用新密码登录')).toBeTruthy();
    await waitFor(() => expect(router.state.location.pathname).toBe('/login')); // the login form, not sent on as a logged-in visitor
    expect(localStorage.getItem('token')).toBeNull();
    expect(fetchMock.mock.calls.some(([u]) => u === '/userapi/api/v2.1/logout')).toBe(false);
    expect(screen.queryByText(/登录已失效/)).toBeNull();
  });
});
