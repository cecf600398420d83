import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/react';
import type { ReactNode } from 'react';
import type { ModalFuncProps } from 'antd';
import { ERRORS, PAGE, SILENT_CODES, httpStatusOf, type ErrorName } from '@console/contract';
import { session } from '../session/store';
import { BASES } from './bases';
import { api, CERT_RETURN_KEY, request } from './client';
import { ApiError } from './errors';
import { setApiUi, type ApiUi } from './ui';

type UiMock = { [K in keyof ApiUi]: Mock<ApiUi[K]> };
let ui: UiMock;
let restoreUi: () => void;
let fetchMock: Mock<typeof fetch>;

function json(status: number, body: unknown) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

/** The URL and init of the n-th fetch call. */
function call(n = 0) {
  const [url, init] = fetchMock.mock.calls[n]!;
  return { url: String(url), init: init!, headers: init!.headers as Record<string, string> };
}

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('expected the call to fail');
}

function login(token = 'tok-1') {
  localStorage.setItem('token', token);
  localStorage.setItem('user', JSON.stringify({ id: 'u1' }));
  localStorage.setItem('cash', '10000');
  session.reload();
}

beforeEach(() => {
  ui = {
    success: vi.fn(),
    error: vi.fn(),
    warning: vi.fn(),
    confirm: vi.fn(),
    navigate: vi.fn(),
    reload: vi.fn(),
    currentUrl: vi.fn(() => '/console/app?page=2'),
    isEmbedded: vi.fn(() => false),
    postToParent: vi.fn(),
  };
  restoreUi = setApiUi(ui);
  fetchMock = vi.fn<typeof fetch>();
  vi.stubGlobal('fetch', fetchMock);
  session.reload();
});

afterEach(() => {
  restoreUi();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('building the call', () => {
  it('fills colon placeholders from the payload and removes them from the body', async () => {
    fetchMock.mockResolvedValue(json(200, { ok: true }));
    await api.post('/order/api/v2.1/gift/effect/:id', { id: 7, note: 'x' });
    expect(call().url).toBe('/order/api/v2.1/gift/effect/7');
    expect(call().init.method).toBe('POST');
    expect(JSON.parse(call().init.body as string)).toEqual({ note: 'x' });
  });

  it('fills placeholders from the query, encodes them and removes them from the query', async () => {
    fetchMock.mockResolvedValue(json(200, {}));
    await api.get('/order/api/v2.1/:kind/:uid', { kind: 'gpu/order', uid: 'a b', page: 1 });
    expect(call().url).toBe('/order/api/v2.1/gpu%2Forder/a%20b?page=1');
  });

  it('a missing placeholder value is refused before any call', async () => {
    const error = await failure(api.get('/x/:id', {}));
    expect(error.kind).toBe('params');
    expect(fetchMock).not.toHaveBeenCalled();
  });

  it('does not change the caller’s objects', async () => {
    fetchMock.mockResolvedValue(json(200, {}));
    const data = { id: 1, name: 'n' };
    await api.put('/x/:id', data);
    expect(data).toEqual({ id: 1, name: 'n' });
  });

  it('sends credentials and the stored token as a Bearer header', async () => {
    login('tok-42');
    fetchMock.mockResolvedValue(json(200, {}));
    await api.get('/userapi/api/v2.1/users/me/info');
    expect(call().init.credentials).toBe('include');
    expect(call().headers.Authorization).toBe('Bearer tok-42');
  });

  it('sends no Authorization header without a token', async () => {
    fetchMock.mockResolvedValue(json(200, {}));
    await api.get('/x');
    expect(call().headers.Authorization).toBeUndefined();
  });

  it('writes arrays comma-joined on the main API and repeated on the community API', async () => {
    fetchMock.mockImplementation(async () => json(200, {}));
    await api.get('/x', { tag: ['a', 'b'] });
    await request('/y', { base: 'community', params: { tag: ['a', 'b'] } });
    expect(call(0).url).toBe('/x?tag=a%2Cb');
    expect(call(1).url).toBe('/y?tag=a&tag=b');
  });

  it('returns the JSON resource, and undefined for 204', async () => {
    fetchMock.mockResolvedValueOnce(json(200, { cash: '1' })).mockResolvedValueOnce(new Response(null, { status: 204 }));
    await expect(api.get('/a')).resolves.toEqual({ cash: '1' });
    await expect(api.delete('/b')).resolves.toBeUndefined();
  });
});

describe('success message', () => {
  it("shows '操作成功' when asked", async () => {
    fetchMock.mockResolvedValue(json(200, {}));
    await api.post('/x', {}, { successMessage: true });
    expect(ui.success).toHaveBeenCalledWith('操作成功');
  });
  it('shows nothing when not asked', async () => {
    fetchMock.mockResolvedValue(json(200, {}));
    await api.post('/x', {});
    expect(ui.success).not.toHaveBeenCalled();
  });
});

describe('error catalogue (spec §8)', () => {
  function fail(status: number, body: unknown) {
    fetchMock.mockResolvedValue(json(status, body));
    return failure(api.post('/x', {}));
  }

  it('other codes: message and detail joined by a Chinese colon', async () => {
    const error = await fail(400, { code: 40010001, message: '验证码错误，请重新输入', detail: '还可尝试 2 次' });
    expect(ui.error).toHaveBeenCalledWith('验证码错误，请重新输入：还可尝试 2 次');
    expect(error).toMatchObject({ kind: 'http', status: 400, code: 40010001, detail: '还可尝试 2 次' });
  });

  it('other codes without detail: just the message', async () => {
    await fail(429, { code: 42900001, message: '验证码发送过于频繁，请 60 秒后再试' });
    expect(ui.error).toHaveBeenCalledWith('验证码发送过于频繁，请 60 秒后再试');
  });

  it('a body without a message falls back to the catalogue text', async () => {
    await fail(409, { code: ERRORS.MOBILE_TAKEN.code });
    expect(ui.error).toHaveBeenCalledWith(ERRORS.MOBILE_TAKEN.message);
  });

  it.each(SILENT_CODES)('%i is ignored silently but still rejects', async (code) => {
    const error = await fail(400, { code, message: 'x' });
    expect(error.code).toBe(code);
    expect(ui.error).not.toHaveBeenCalled();
    expect(ui.confirm).not.toHaveBeenCalled();
  });

  it('40011007 shows the message with a link to the bill page', async () => {
    await fail(400, { code: 40011007, message: ERRORS.UNPAID_ORDER_EXISTS.message });
    render(<>{ui.error.mock.calls[0]![0] as ReactNode}</>);
    expect(screen.getByText(/存在未支付订单，无法创建新订单/)).toBeTruthy();
    const link = screen.getByRole('link');
    expect(link.getAttribute('href')).toBe(PAGE.bill);
    fireEvent.click(link);
    expect(ui.navigate).toHaveBeenCalledWith('/console/cost/bill');
  });

  it.each([500, 502])('HTTP %i shows the generic server message', async (status) => {
    await fail(status, { code: 50000001, message: 'boom', detail: 'stack' });
    expect(ui.error).toHaveBeenCalledWith('服务器开了个小差，请稍后重试');
  });

  it('an error page that is not JSON still gives a Chinese message', async () => {
    fetchMock.mockResolvedValue(new Response('<html>bad gateway</html>', { status: 404, headers: { 'content-type': 'text/html' } }));
    await failure(api.get('/x'));
    expect(ui.error).toHaveBeenCalledWith('请求失败（HTTP 404）');
  });

  it('silent calls show nothing for ordinary errors', async () => {
    fetchMock.mockResolvedValue(json(404, { code: 40400001, message: '请求的接口不存在' }));
    await failure(api.get('/billing/api/v1/user/money', undefined, { silent: true }));
    expect(ui.error).not.toHaveBeenCalled();
  });
});

describe('HTTP 401', () => {
  it('shows the message, clears token, user and cash, and goes to /login', async () => {
    login();
    fetchMock.mockResolvedValue(json(401, { code: 40100003, message: '登录已过期，请重新登录' }));
    await failure(api.get('/x'));
    expect(ui.error).toHaveBeenCalledWith('登录已过期，请重新登录', 'session-ended');
    expect(['token', 'user', 'cash'].map((k) => localStorage.getItem(k))).toEqual([null, null, null]);
    expect(session.getToken()).toBeNull();
    expect(ui.navigate).toHaveBeenCalledWith(`/login?redirect=${encodeURIComponent('/console/app?page=2')}`);
    expect(ui.postToParent).not.toHaveBeenCalled();
  });

  it('inside an iframe asks the parent to log in instead of navigating', async () => {
    login();
    ui.isEmbedded.mockReturnValue(true);
    fetchMock.mockResolvedValue(json(401, { code: 40100001, message: '请先登录' }));
    await failure(api.get('/x'));
    expect(ui.postToParent).toHaveBeenCalledWith('redirect_login');
    expect(ui.navigate).not.toHaveBeenCalled();
    expect(localStorage.getItem('token')).toBeNull();
  });

  it('says nothing when there was no session to end (a screen still asking right after 退出登录)', async () => {
    fetchMock.mockResolvedValue(json(401, { code: 40100001, message: '请先登录' }));
    await failure(api.get('/x'));
    expect(ui.error).not.toHaveBeenCalled();
    expect(ui.navigate).toHaveBeenCalledWith('/login');
  });

  it('still ends the session on a silent call', async () => {
    login();
    fetchMock.mockResolvedValue(json(401, { code: 40100004, message: '登录已失效' }));
    await failure(api.get('/x', undefined, { silent: true }));
    expect(session.getToken()).toBeNull();
    expect(ui.navigate).toHaveBeenCalled();
  });
});

describe('40311001: the real-name dialog (spec §5)', () => {
  async function openDialog(): Promise<ModalFuncProps> {
    fetchMock.mockResolvedValueOnce(json(403, { code: 40311001, message: '请先完成实名认证' }));
    await failure(api.post('/infra/api/v2.1/gpu/order', {}));
    expect(ui.confirm).toHaveBeenCalledTimes(1);
    return ui.confirm.mock.calls[0]![0];
  }

  it('is titled 提示, names personal/enterprise certification and has 去认证 / 已认证', async () => {
    const dialog = await openDialog();
    expect(dialog).toMatchObject({ title: '提示', okText: '去认证', cancelText: '已认证' });
    expect(String(dialog.content)).toMatch(/实名认证（个人认证或企业认证）/);
    expect(ui.error).not.toHaveBeenCalled();
    await dialog.onOk?.();
  });

  it('去认证 saves the current URL and opens the account page on checkInfo', async () => {
    const dialog = await openDialog();
    await dialog.onOk?.();
    expect(sessionStorage.getItem(CERT_RETURN_KEY)).toBe('/console/app?page=2');
    expect(ui.navigate).toHaveBeenCalledWith('/console/account?tab=checkInfo');
  });

  it('已认证 refetches me/info and reloads the page when certified', async () => {
    login();
    const dialog = await openDialog();
    fetchMock.mockResolvedValueOnce(json(200, { id: 'u1', certified: true, certStatus: 'Succeed' }));
    await dialog.onCancel?.();
    expect(call(1).url).toBe('/userapi/api/v2.1/users/me/info');
    expect(ui.reload).toHaveBeenCalled();
    expect(JSON.parse(localStorage.getItem('user')!)).toMatchObject({ certified: true });
  });

  it("已认证 while still uncertified says '您尚未完成实名认证'", async () => {
    login();
    const dialog = await openDialog();
    fetchMock.mockResolvedValueOnce(json(200, { id: 'u1', certified: false, certStatus: 'Pending' }));
    await dialog.onCancel?.();
    expect(ui.reload).not.toHaveBeenCalled();
    expect(ui.error).toHaveBeenCalledWith('您尚未完成实名认证');
  });

  it('several gated calls at once open one dialog', async () => {
    fetchMock.mockImplementation(async () => json(403, { code: 40311001, message: '请先完成实名认证' }));
    await Promise.allSettled([api.post('/a'), api.post('/b')]);
    expect(ui.confirm).toHaveBeenCalledTimes(1);
    await ui.confirm.mock.calls[0]![0].onOk?.();
  });
});

/** Every row of the shared catalogue gets exactly one of the reactions above. */
describe.each(Object.keys(ERRORS) as ErrorName[])('catalogue row %s', (name) => {
  it('gets its reaction', async () => {
    const { code, message } = ERRORS[name];
    const status = httpStatusOf(code);
    login();
    fetchMock.mockResolvedValueOnce(json(status, { code, message, detail: 'd' }));
    const error = await failure(api.post('/x', {}));
    expect(error).toMatchObject({ code, status });
    if (status === 401) {
      expect(ui.error).toHaveBeenCalledWith(message, 'session-ended');
      expect(session.getToken()).toBeNull();
    } else if (SILENT_CODES.includes(code)) {
      expect(ui.error).not.toHaveBeenCalled();
    } else if (code === 40311001) {
      expect(ui.confirm).toHaveBeenCalled();
      await ui.confirm.mock.calls[0]![0].onOk?.();
    } else if (code === 40011007) {
      expect(ui.error).toHaveBeenCalledTimes(1);
      expect(typeof ui.error.mock.calls[0]![0]).toBe('object');
    } else if (status === 500 || status === 502) {
      expect(ui.error).toHaveBeenCalledWith('服务器开了个小差，请稍后重试');
    } else {
      expect(ui.error).toHaveBeenCalledWith(`${message}：d`);
    }
  });
});

describe('client-side failures', () => {
  /** A fetch that never answers but honours abort, like a hung connection. */
  function hang() {
    fetchMock.mockImplementation(
      (_url, init) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        }),
    );
  }

  it('times out after 30 s on the main API', async () => {
    vi.useFakeTimers();
    hang();
    const pending = failure(api.get('/x'));
    await vi.advanceTimersByTimeAsync(29_999);
    expect(ui.error).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect((await pending).kind).toBe('timeout');
    expect(ui.error).toHaveBeenCalledWith('请求超时，请稍后重试');
  });

  it.each(['save', 'community'] as const)('times out after 3 s on the %s API', async (base) => {
    vi.useFakeTimers();
    hang();
    const pending = failure(request('/x', { base }));
    await vi.advanceTimersByTimeAsync(3_000);
    expect((await pending).message).toBe('请求超时，请稍后重试');
  });

  it('a network failure says so in Chinese', async () => {
    fetchMock.mockRejectedValue(new TypeError('Failed to fetch'));
    const error = await failure(api.get('/x'));
    expect(error).toMatchObject({ kind: 'network', message: '网络异常，请检查网络连接' });
    expect(ui.error).toHaveBeenCalledWith('网络异常，请检查网络连接');
  });

  it('a call the caller aborts is canceled without a toast', async () => {
    hang();
    const controller = new AbortController();
    const pending = failure(api.get('/x', undefined, { signal: controller.signal }));
    controller.abort();
    expect(await pending).toMatchObject({ kind: 'canceled', message: '请求已取消' });
    expect(ui.error).not.toHaveBeenCalled();
  });

  it('an unsupported protocol is refused', async () => {
    const saved = BASES.cloud.url;
    BASES.cloud.url = 'ftp://files.example.com';
    try {
      const error = await failure(request('/x', { base: 'cloud' }));
      expect(error).toMatchObject({ kind: 'protocol', message: '不支持的请求协议' });
      expect(ui.error).toHaveBeenCalledWith('不支持的请求协议');
      expect(fetchMock).not.toHaveBeenCalled();
    } finally {
      BASES.cloud.url = saved;
    }
  });
});
