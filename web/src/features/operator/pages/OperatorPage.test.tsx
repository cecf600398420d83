import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { OperatorUser, ReviewItem, ReviewLogEntry } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const operator = { ...user, id: 'op1', mobile: '13800000000', isOperator: true };
const REVIEWS = '/api/v1/operator/reviews';
const USERS = '/api/v1/operator/users';
const LOG = '/api/v1/operator/review-log';

const application: ReviewItem = {
  id: 'e1',
  kind: 'enterprise',
  userId: 'u9',
  mobile: '13900139000',
  status: 'Pending',
  submittedAt: '2026-11-23T06:30:00.000Z',
  decidedAt: null,
  reason: '',
  fields: [
    { label: '企业名称', value: '北京算力科技有限公司' },
    { label: '统一社会信用代码', value: '91110108MA01ABCD1X' },
    { label: '法定代表人', value: '张三' },
  ],
  imageUrl: '/api/v1/operator/reviews/enterprise/e1/image',
};

const member: OperatorUser = {
  id: 'u9',
  mobile: '13900139000',
  email: 'li@example.com',
  accountType: 'enterprise',
  certType: 'Enterprise',
  certStatus: 'Pending',
  isStudent: true,
  isOperator: false,
  disabled: false,
  children: 2,
  createdAt: '2026-11-01T02:00:00.000Z',
};

const decision: ReviewLogEntry = {
  id: 'l1',
  kind: 'enterprise',
  userMobile: '13900139000',
  decision: 'reject',
  reason: '执照模糊',
  actor: '13800000000',
  createdAt: '2026-11-23T07:00:00.000Z',
};

const pageOf = <T,>(items: T[], url: URL) => ({
  items,
  total: items.length,
  page: Number(url.searchParams.get('page')),
  pageSize: Number(url.searchParams.get('pageSize')),
});

/** The operator endpoints over the cost fixtures' defaults; the queue holds `queue`. */
function operatorServer(queue: ReviewItem[] = [application]) {
  return costServer((url, init) => {
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, operator);
    if (url.pathname === REVIEWS) return json(200, pageOf(url.searchParams.get('kind') === 'enterprise' ? queue : [], url));
    if (url.pathname.startsWith(`${REVIEWS}/`) && init?.method === 'POST') return json(200, { ok: true });
    if (url.pathname === USERS) return json(200, pageOf([member], url));
    if (url.pathname === LOG) return json(200, pageOf([decision], url));
    return undefined;
  });
}

const reviewQueries = (fetch: ReturnType<typeof operatorServer>) => callsTo(fetch, REVIEWS).map((c) => Object.fromEntries(c.url.searchParams));

/** Opens the application of the first row in the drawer. */
async function openApplication() {
  const row = (await screen.findByText('北京算力科技有限公司')).closest<HTMLElement>('tr')!;
  fireEvent.click(within(row).getByText('查看审核'));
  // Role queries walk the whole console's accessibility tree: too slow for jsdom here.
  return (await screen.findByText('企业认证申请')).closest<HTMLElement>('.ant-drawer')!;
}

beforeEach(() => session.setLogin('tok', operator));
afterEach(() => vi.unstubAllGlobals());

describe('the operator area', () => {
  it('lists the pending enterprise applications, with their fields, status and image', async () => {
    const fetch = operatorServer();
    renderApp('/operator');
    const row = (await screen.findByText('北京算力科技有限公司', undefined, { timeout: 10_000 })).closest<HTMLElement>('tr')!;
    expect(within(row).getByTitle('统一社会信用代码：91110108MA01ABCD1X')).toBeTruthy();
    expect(within(row).getByText('13900139000')).toBeTruthy();
    expect(within(row).getByText(/^2026-11-23 \d\d:30$/)).toBeTruthy();
    expect(within(row).getByText('审核中')).toBeTruthy();
    expect(reviewQueries(fetch)).toEqual([{ kind: 'enterprise', status: 'Pending', page: '1', pageSize: '10' }]);

    const drawer = await openApplication();
    expect(within(drawer).getByText('91110108MA01ABCD1X')).toBeTruthy();
    expect(within(drawer).getByAltText('营业执照').getAttribute('src')).toBe('/api/v1/operator/reviews/enterprise/e1/image');
  });

  it('says so when nothing waits, and shows every status on 全部', async () => {
    const fetch = operatorServer([]);
    const router = renderApp('/operator?tab=student');
    expect(await screen.findByText('暂无待审核的申请')).toBeTruthy();
    expect(reviewQueries(fetch)).toEqual([{ kind: 'student', status: 'Pending', page: '1', pageSize: '10' }]);

    fireEvent.click(screen.getByText('全部'));
    await waitFor(() => expect(reviewQueries(fetch).at(-1)).toEqual({ kind: 'student', page: '1', pageSize: '10' }));
    expect(router.state.location.search).toBe('?tab=student&status=all');
    expect(await screen.findByText('暂无申请记录')).toBeTruthy();
  });

  it('rejects only with a reason of 2-200 characters, then refreshes the queue', async () => {
    const fetch = operatorServer();
    renderApp('/operator');
    const drawer = await openApplication();
    fireEvent.click(within(drawer).getByText(/^驳\s*回$/));
    const modal = (await screen.findByText('驳回申请')).closest<HTMLElement>('.ant-modal')!;
    const confirm = () => fireEvent.click(within(modal).getByText('确认驳回'));

    confirm();
    expect(await within(modal).findByText('请填写驳回原因')).toBeTruthy();
    fireEvent.change(within(modal).getByLabelText('驳回原因'), { target: { value: ' 糊 ' } });
    expect(await within(modal).findByText('驳回原因至少 2 个字符')).toBeTruthy();
    confirm();
    await act(async () => new Promise((r) => setTimeout(r, 50)));
    expect(callsTo(fetch, `${REVIEWS}/enterprise/e1`, 'POST')).toEqual([]);

    const before = reviewQueries(fetch).length;
    fireEvent.change(within(modal).getByLabelText('驳回原因'), { target: { value: '营业执照图片模糊 ' } });
    confirm();
    await waitFor(() =>
      expect(callsTo(fetch, `${REVIEWS}/enterprise/e1`, 'POST').map((c) => c.body)).toEqual([{ decision: 'reject', reason: '营业执照图片模糊' }]),
    );
    await waitFor(() => expect(reviewQueries(fetch).length).toBeGreaterThan(before));
    expect(await screen.findByText('已驳回')).toBeTruthy();
  });

  it('approves after a confirmation', async () => {
    const fetch = operatorServer();
    renderApp('/operator');
    const drawer = await openApplication();
    fireEvent.click(within(drawer).getByText(/^通\s*过$/));
    fireEvent.click(await screen.findByText('确认通过'));
    await waitFor(() => expect(callsTo(fetch, `${REVIEWS}/enterprise/e1`, 'POST').map((c) => c.body)).toEqual([{ decision: 'approve' }]));
    expect(await screen.findByText('已通过')).toBeTruthy();
  });

  it('searches users on the server and keeps the search in the URL', async () => {
    const fetch = operatorServer();
    const router = renderApp('/operator?tab=users');
    const row = (await screen.findByText('li@example.com')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText('企业账号')).toBeTruthy();
    expect(within(row).getByText('企业认证')).toBeTruthy();
    expect(within(row).getByText('学生')).toBeTruthy();
    expect(within(row).getByText('2')).toBeTruthy();

    fireEvent.change(screen.getByPlaceholderText('手机号 / 邮箱 / 姓名'), { target: { value: ' 139 ' } });
    fireEvent.click(screen.getByRole('button', { name: /搜\s*索/ }));
    await waitFor(() => expect(Object.fromEntries(callsTo(fetch, USERS).at(-1)!.url.searchParams)).toEqual({ q: '139', page: '1', pageSize: '10' }));
    expect(router.state.location.search).toBe('?tab=users&q=139');
  });

  it('shows the decision log', async () => {
    operatorServer();
    renderApp('/operator?tab=log');
    const row = (await screen.findByText('执照模糊')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText('企业认证')).toBeTruthy();
    expect(within(row).getByText('驳回')).toBeTruthy();
    expect(within(row).getByText('13800000000')).toBeTruthy();
  });
});

/**
 * A role given or taken by `npm run operator -- grant|revoke` reaches an open console without a
 * reload: the cached user is fetched again when the window regains focus, and at once when an
 * operator request is refused.
 */
describe('the operator role changing while the console is open', () => {
  const menu = () => screen.getByLabelText('控制台导航');
  const meCalls = (fetch: ReturnType<typeof operatorServer>) => callsTo(fetch, '/userapi/api/v2.1/users/me/info').length;

  it('shows the operator area after a grant when the window regains focus', async () => {
    let isOperator = false;
    session.setLogin('tok', { ...user, isOperator: false });
    const fetch = costServer((url) => (url.pathname === '/userapi/api/v2.1/users/me/info' ? json(200, { ...user, isOperator }) : undefined));
    renderApp('/console/account');
    expect(await screen.findByText('基本信息', undefined, { timeout: 10_000 })).toBeTruthy();
    await waitFor(() => expect(meCalls(fetch)).toBe(1));
    expect(within(menu()).queryByText('运营管理')).toBeNull();

    isOperator = true;
    act(() => void window.dispatchEvent(new Event('visibilitychange')));
    expect(await within(menu()).findByText('运营管理')).toBeTruthy();
    expect(session.getUser()?.isOperator).toBe(true);
  });

  it('drops the operator area as soon as an operator request is refused after a revoke', async () => {
    let revoked = false;
    const fetch = costServer((url) => {
      if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, { ...operator, isOperator: !revoked });
      if (revoked && url.pathname.startsWith('/api/v1/operator/'))
        return json(403, { code: 40300002, message: '当前账号没有此操作的权限，请联系主账号开通', detail: '需要运营方权限' });
      if (url.pathname === REVIEWS) return json(200, pageOf([application], url));
      return undefined;
    });
    renderApp('/operator');
    expect(await screen.findByText('北京算力科技有限公司', undefined, { timeout: 10_000 })).toBeTruthy();
    expect(within(menu()).getByText('运营管理')).toBeTruthy();
    const before = meCalls(fetch);

    revoked = true;
    fireEvent.click(screen.getByText('全部'));
    await waitFor(() => expect(meCalls(fetch)).toBeGreaterThan(before));
    await waitFor(() => expect(within(menu()).queryByText('运营管理')).toBeNull());
    expect(session.getUser()?.isOperator).toBe(false);
  });
});
