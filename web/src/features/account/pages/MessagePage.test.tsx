import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { GpuSubscription, NoticeMessage } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { instanceServer } from '../../../test/fixtures/instances';

const MESSAGES = '/userapi/api/v2.1/messages';
const UNREAD = '/userapi/api/v2.1/messages/unread-count';
const SUBS = '/userapi/api/v2.1/gpu-subscriptions';

const message = (n: number, over: Partial<NoticeMessage> = {}): NoticeMessage => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  kind: 'ReleaseCountdown',
  title: `实例「机-${n}」将于 7 天后释放`,
  body: `第 ${n} 条：数据将被清除且无法恢复`,
  link: `/console/ipvm/detail/Gpu/i-${n}`,
  createdAt: new Date(Date.UTC(2026, 10, 23, 10, 59 - n)).toISOString(),
  readAt: null,
  ...over,
});

/** A message center on the server side: 25 messages, read state kept, paged as asked. */
function messageServer(extra: { subscriptions?: GpuSubscription[] } = {}) {
  const all = Array.from({ length: 25 }, (_, i) => message(i + 1, i >= 3 ? { readAt: '2026-11-23T11:00:00.000Z' } : {}));
  let subs = extra.subscriptions ?? [];
  const fetch = instanceServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === UNREAD) return json(200, { count: all.filter((m) => !m.readAt).length });
    if (url.pathname === MESSAGES && method === 'GET') {
      const p = Number(url.searchParams.get('page'));
      const size = Number(url.searchParams.get('pageSize'));
      const list = url.searchParams.get('unread') === 'true' ? all.filter((m) => !m.readAt) : all;
      return json(200, page(list.slice((p - 1) * size, p * size), url, list.length));
    }
    const read = /^\/userapi\/api\/v2\.1\/messages\/([^/]+)\/read$/.exec(url.pathname);
    if (read && method === 'POST') {
      const m = all.find((x) => x.id === read[1])!;
      m.readAt = '2026-11-23T12:00:00.000Z';
      return json(200, m);
    }
    if (url.pathname === `${MESSAGES}/read-all` && method === 'POST') {
      const n = all.filter((m) => !m.readAt).length;
      all.forEach((m) => (m.readAt ??= '2026-11-23T12:00:00.000Z'));
      return json(200, { count: n });
    }
    if (url.pathname === SUBS && method === 'GET') return json(200, { items: subs, limit: 20 });
    if (url.pathname.startsWith(`${SUBS}/`) && method === 'DELETE') {
      subs = subs.filter((s) => !url.pathname.endsWith(s.id));
      return json(200, { ok: true });
    }
    return undefined;
  });
  return fetch;
}

const bell = () => screen.getByLabelText(/^消息中心/);

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the header bell', () => {
  it('shows the unread count on every console page and leads to the message center', async () => {
    messageServer();
    const router = renderApp('/console/log');
    await waitFor(() => expect(bell().getAttribute('aria-label')).toBe('消息中心，3 条未读'));
    expect(within(bell()).getByText('3')).toBeTruthy();
    fireEvent.click(bell());
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/message'));
  });

  it('shows no count when there is nothing unread', async () => {
    instanceServer((url) => (url.pathname === UNREAD ? json(200, { count: 0 }) : undefined));
    renderApp('/console/log');
    await screen.findByText(/暂无操作记录/);
    expect(bell().getAttribute('aria-label')).toBe('消息中心');
    expect(bell().querySelector('.ant-badge-count')).toBeNull();
  });

  it('shows no count and no error toast when the count cannot be had', async () => {
    const fetch = instanceServer((url) => (url.pathname === UNREAD ? json(500, { code: 50000001, message: '服务器开了个小差，请稍后重试' }) : undefined));
    renderApp('/console/log');
    await screen.findByText(/暂无操作记录/);
    await waitFor(() => expect(callsTo(fetch, UNREAD)).toHaveLength(1));
    expect(bell().getAttribute('aria-label')).toBe('消息中心');
    expect(screen.queryByText('服务器开了个小差，请稍后重试')).toBeNull();
  });
});

describe('the message center', () => {
  it('lists messages newest first with the unread marked, pages on the server, and filters the unread', async () => {
    const fetch = messageServer();
    const router = renderApp('/console/message');
    const first = (await screen.findByText('实例「机-1」将于 7 天后释放')).closest<HTMLElement>('tr')!;
    expect(within(first).getByText('第 1 条：数据将被清除且无法恢复')).toBeTruthy();
    expect(within(first).getByText('实例释放倒计时')).toBeTruthy();
    expect(within(first).getByLabelText('未读')).toBeTruthy();
    expect(within(first).getByText('标记已读')).toBeTruthy();
    const old = screen.getByText('实例「机-4」将于 7 天后释放').closest<HTMLElement>('tr')!;
    expect(within(old).queryByLabelText('未读')).toBeNull();
    expect(within(old).getByText('已读')).toBeTruthy();
    expect(screen.getByText('共 25 条消息')).toBeTruthy();

    fireEvent.click(document.querySelector('.ant-pagination-item-3')!);
    expect(await screen.findByText('实例「机-21」将于 7 天后释放')).toBeTruthy();
    expect(callsTo(fetch, MESSAGES).at(-1)!.url.searchParams.get('page')).toBe('3');
    expect(new URLSearchParams(router.state.location.search).get('page')).toBe('3');

    fireEvent.click(await screen.findByText('未读（3）'));
    await waitFor(() => expect(callsTo(fetch, MESSAGES).at(-1)!.url.searchParams.get('unread')).toBe('true'));
    expect(callsTo(fetch, MESSAGES).at(-1)!.url.searchParams.get('page')).toBe('1');
    expect(await screen.findByText('共 3 条消息')).toBeTruthy();
    expect(router.state.location.search).toBe('?filter=unread');
  });

  it('marks one read (the bell counts down) and all read', async () => {
    const fetch = messageServer();
    renderApp('/console/message');
    const row = (await screen.findByText('实例「机-2」将于 7 天后释放')).closest<HTMLElement>('tr')!;
    await waitFor(() => expect(bell().getAttribute('aria-label')).toBe('消息中心，3 条未读'));
    fireEvent.click(within(row).getByText('标记已读'));
    await waitFor(() => expect(callsTo(fetch, `${MESSAGES}/00000000-0000-4000-8000-000000000002/read`, 'POST')).toHaveLength(1));
    await waitFor(() => expect(bell().getAttribute('aria-label')).toBe('消息中心，2 条未读'));
    await waitFor(() => expect(within(screen.getByText('实例「机-2」将于 7 天后释放').closest('tr')!).getByText('已读')).toBeTruthy());

    fireEvent.click(screen.getByText('全部标记已读'));
    await waitFor(() => expect(callsTo(fetch, `${MESSAGES}/read-all`, 'POST')).toHaveLength(1));
    expect(await screen.findByText('已全部标记为已读')).toBeTruthy();
    await waitFor(() => expect(bell().getAttribute('aria-label')).toBe('消息中心'));
    expect(screen.getByText('全部标记已读').closest('button')!.disabled).toBe(true);
  });

  it('opening a message reads it and goes to what it is about', async () => {
    const fetch = messageServer();
    const router = renderApp('/console/message');
    fireEvent.click(await screen.findByText('实例「机-1」将于 7 天后释放'));
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/ipvm/detail/Gpu/i-1'));
    expect(callsTo(fetch, `${MESSAGES}/00000000-0000-4000-8000-000000000001/read`, 'POST')).toHaveLength(1);
  });

  it('lists the 有卡时通知我 subscriptions and cancels a waiting one', async () => {
    const waiting: GpuSubscription = {
      id: 's1',
      gpuTypeId: 'h800',
      gpuName: 'H800',
      regionId: 'bj-b',
      regionName: '北京 B 区',
      gpuCount: 2,
      createdAt: '2026-11-23T09:00:00.000Z',
      notifiedAt: null,
    };
    const done = { ...waiting, id: 's2', gpuName: 'A100 80GB', gpuCount: 1, notifiedAt: '2026-11-23T10:00:00.000Z' };
    const fetch = messageServer({ subscriptions: [waiting, done] });
    renderApp('/console/message');
    const row = (await screen.findByText('H800')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText('≥ 2 卡')).toBeTruthy();
    expect(within(row).getByText('等待有卡')).toBeTruthy();
    expect(screen.getByText('等待中 1 / 20 个')).toBeTruthy();
    const notified = screen.getByText('A100 80GB').closest<HTMLElement>('tr')!;
    expect(within(notified).getByText(/^已于 2026-11-23 \d\d:00:00 通知$/)).toBeTruthy();
    expect(within(notified).queryByText('取消订阅')).toBeNull();

    fireEvent.click(within(row).getByText('取消订阅'));
    fireEvent.click((await screen.findAllByText('取消订阅', { selector: '.ant-popconfirm button span' })).at(-1)!);
    await waitFor(() => expect(callsTo(fetch, `${SUBS}/s1`, 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText('H800')).toBeNull());
  });
});
