import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { PAGE } from '@console/contract';
import { ApiUiBridge } from './app/ApiUiBridge';
import { AppProviders } from './app/AppProviders';
import { trackLocation } from './auth/guardLoader';
import { createRoutes, PAGES, REDIRECTS } from './routes';
import { session } from './session/store';
import { json } from './test/http';
import { testQueryClient } from './test/render';
import { user } from './test/fixtures/user';

/** Mounts the app as main.tsx does, on a memory router. */
function mount(url: string) {
  const router = createMemoryRouter(createRoutes(), { initialEntries: [url] });
  const stopTracking = trackLocation(router);
  render(
    <AppProviders queryClient={testQueryClient()}>
      <ApiUiBridge navigate={(to) => void router.navigate(to)} />
      <RouterProvider router={router} />
    </AppProviders>,
  );
  cleanups.push(stopTracking);
  return router;
}
const cleanups: (() => void)[] = [];
const at = (router: ReturnType<typeof mount>) => router.state.location.pathname + router.state.location.search;

beforeEach(() => {
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL) => {
      const path = String(input).split('?')[0];
      if (path === '/userapi/api/v2.1/users/me/info') return json(200, session.getUser() ?? user);
      return json(404, { code: 40400001, message: '请求的接口不存在' });
    }),
  );
});
afterEach(() => {
  cleanups.splice(0).forEach((c) => c());
  vi.unstubAllGlobals();
});

describe('route table', () => {
  it('has every page path of the contract exactly once', () => {
    const routed = [...PAGES.map((p) => p.path), ...Object.keys(REDIRECTS)];
    for (const path of Object.values(PAGE)) expect(routed, path).toContain(path);
    expect(new Set(PAGES.map((p) => p.path)).size).toBe(PAGES.length);
  });

  it.each([
    ['/', PAGE.cloudGpu],
    ['/stats/cloud', PAGE.cloudGpu],
    ['/console/base', PAGE.gpuGeneric],
    ['/console/generic', PAGE.cpu],
    ['/center', PAGE.balance],
    ['/cost', PAGE.balance],
    ['/console/cost', PAGE.balance],
    ['/sd', PAGE.sdTrain],
    ['/model', PAGE.modelSquare],
    ['/no/such/page', PAGE.cloudGpu],
  ])('%s redirects to %s', async (from, to) => {
    session.setLogin('tok', user);
    const router = mount(from);
    await waitFor(() => expect(router.state.location.pathname).toBe(to));
  });

  it('a ?token= survives the redirects, is stored and leaves the URL', async () => {
    const router = mount('/console/base?token=tok-embed');
    await waitFor(() => expect(at(router)).toBe(PAGE.gpuGeneric));
    expect(localStorage.getItem('token')).toBe('tok-embed');
  });
});

describe('guard wired into the router', () => {
  it('creating a dataset from inside the app, uncertified: stays and shows the real-name dialog', async () => {
    session.setLogin('tok', user);
    const router = mount('/sd/dataset?page=2');
    await screen.findByRole('heading', { name: '数据集' });
    await act(() => router.navigate(PAGE.sdDatasetCreate));
    const dialog = await screen.findByRole('dialog', { name: '提示' });
    expect(within(dialog).getByText(/实名认证（个人认证或企业认证）/)).toBeTruthy();
    expect(within(dialog).getByRole('button', { name: '去认证' })).toBeTruthy();
    expect(within(dialog).getByRole('button', { name: '已认证' })).toBeTruthy();
    expect(at(router)).toBe('/sd/dataset?page=2');
  });

  it('a child account only sees the menu entries its flags open', async () => {
    session.setLogin('tok', { ...user, isChild: true, gpu: true });
    const router = mount(PAGE.modelKey);
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.gpuGeneric));
    const menu = await screen.findByRole('menu', { name: '控制台导航' });
    expect(within(menu).getByText('GPU 实例')).toBeTruthy();
    expect(within(menu).queryByText('镜像应用')).toBeNull();
    expect(within(menu).queryByText('模型服务')).toBeNull();
    expect(within(menu).queryByText('我的数据')).toBeNull();
  });

  it('a child opening a page it may not use is sent home and told why', async () => {
    session.setLogin('tok', { ...user, isChild: true, gpu: true });
    const router = mount(PAGE.balance);
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.gpuGeneric));
    expect(await screen.findByText('子账号无权访问「我的余额」，已为您跳转到「GPU 实例」（如需权限请联系主账号开通）')).toBeTruthy();
    // No 财务: the money pages are not in its menu, and the header shows no balance.
    const menu = await screen.findByRole('menu', { name: '控制台导航' });
    fireEvent.click(within(menu).getByText('费用中心'));
    expect(await within(menu).findByText('账单')).toBeTruthy();
    expect(within(menu).queryByText('我的余额')).toBeNull();
    expect(screen.queryByText(/余额：/)).toBeNull();
    // Nor a 充值 button that would only bounce it off the recharge page.
    expect(screen.queryByRole('button', { name: '充值' })).toBeNull();
  });

  it('a child granted 财务 has the header balance and its 充值 button', async () => {
    session.setLogin('tok', { ...user, isChild: true, gpu: true, finance: true });
    mount(PAGE.gpuGeneric);
    expect(await screen.findByText(/余额：/)).toBeTruthy();
    expect(screen.getByRole('button', { name: '充值' })).toBeTruthy();
  });

  it("the header shows '--' when the balance endpoint is not there", async () => {
    session.setLogin('tok', user);
    mount(PAGE.cpu);
    expect(await screen.findByText(/余额：--/)).toBeTruthy();
  });
});
