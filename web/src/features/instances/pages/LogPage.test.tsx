import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, instanceServer, LOGS, operation } from '../../../test/fixtures/instances';

const logsCalls = (fetch: ReturnType<typeof instanceServer>) =>
  callsTo(fetch, LOGS).map((c) => ({
    filterBy: c.url.searchParams.get('filterBy'),
    page: c.url.searchParams.get('page'),
    pageSize: c.url.searchParams.get('pageSize'),
  }));

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByLabelText(label));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

/** 25 operations; the server pages them. */
const all = Array.from({ length: 25 }, (_, n) =>
  operation({ id: `op${n}`, detail: `第 ${n + 1} 条`, createdAt: new Date(Date.UTC(2026, 10, 23, 10, 59 - n)).toISOString() }),
);

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the operation log page', () => {
  it('lists operations with time, instance, action, actor and the status change; pages on the server', async () => {
    const fetch = instanceServer((url) => {
      if (url.pathname !== LOGS) return undefined;
      const p = Number(url.searchParams.get('page'));
      const size = Number(url.searchParams.get('pageSize'));
      return json(200, page(all.slice((p - 1) * size, p * size), url, all.length));
    });
    const router = renderApp('/console/log');

    const row = (await screen.findByText('第 1 条')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText(/^2026-11-23 \d\d:59:00$/)).toBeTruthy();
    expect(within(row).getByText('训练机-1').closest('a')!.getAttribute('href')).toBe(`/console/ipvm/detail/Gpu/${ID}`);
    expect(within(row).getByText('关机')).toBeTruthy();
    expect(within(row).getByText('13800138000')).toBeTruthy();
    expect(within(row).getByText('运行中')).toBeTruthy();
    expect(within(row).getByText('关机中')).toBeTruthy();
    expect(screen.getByText('共 25 条')).toBeTruthy();
    expect(logsCalls(fetch)).toEqual([{ filterBy: null, page: '1', pageSize: '10' }]);

    fireEvent.click(document.querySelector('.ant-pagination-item-3')!);
    expect(await screen.findByText('第 21 条')).toBeTruthy();
    expect(screen.queryByText('第 1 条')).toBeNull();
    expect(logsCalls(fetch).at(-1)).toEqual({ filterBy: null, page: '3', pageSize: '10' });
    expect(new URLSearchParams(router.state.location.search).get('page')).toBe('3');
  });

  it('filters by product category (back to page 1) and keeps it in the URL', async () => {
    const fetch = instanceServer();
    const router = renderApp('/console/log?page=2');
    await screen.findByText(/暂无操作记录/);
    expect(logsCalls(fetch)).toEqual([{ filterBy: null, page: '2', pageSize: '10' }]);

    await pick('产品类别', 'CPU 实例');
    await waitFor(() => expect(logsCalls(fetch).at(-1)).toEqual({ filterBy: 'category,Generic', page: '1', pageSize: '10' }));
    expect(router.state.location.search).toBe('?category=Generic');
    expect(await screen.findByText('没有符合筛选条件的操作记录')).toBeTruthy();
  });

  it('shows one instance’s operations when linked from it, and lets that filter go', async () => {
    const fetch = instanceServer();
    renderApp(`/console/log?instance=${ID}`);
    await screen.findByText('没有符合筛选条件的操作记录');
    expect(logsCalls(fetch)[0]!.filterBy).toBe(`instance,${ID}`);
    fireEvent.click(screen.getByText('清除筛选'));
    await waitFor(() => expect(logsCalls(fetch).at(-1)!.filterBy).toBeNull());
  });

  it('shows the system as the actor of a system operation', async () => {
    instanceServer((url) =>
      url.pathname === LOGS
        ? json(200, page([operation({ actorId: null, actorName: '系统', action: 'stop', actionLabel: '欠费关机', detail: '余额不足，自动关机' })], url))
        : undefined,
    );
    renderApp('/console/log');
    const row = (await screen.findByText('余额不足，自动关机')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText('欠费关机')).toBeTruthy();
    expect(within(row).getByText('系统')).toBeTruthy();
  });

  it('reads naturally when the status did not change: 释放完成 ends in 已释放, a rename shows the one status, never "X → X"', async () => {
    instanceServer((url) =>
      url.pathname === LOGS
        ? json(
            200,
            page(
              [
                operation({
                  id: 'op-done',
                  action: 'done:destroy',
                  actionLabel: '释放完成',
                  actorId: null,
                  actorName: '系统',
                  fromStatus: 'Deleting',
                  toStatus: 'Deleting',
                  detail: '已释放',
                }),
                operation({
                  id: 'op-rename',
                  action: 'rename',
                  actionLabel: '修改名称',
                  fromStatus: 'Stopped',
                  toStatus: 'Stopped',
                  detail: '训练机-1 → 训练机-2',
                }),
              ],
              url,
            ),
          )
        : undefined,
    );
    renderApp('/console/log');
    const released = (await screen.findByText('释放完成')).closest<HTMLElement>('tr')!;
    const change = released.querySelectorAll('td')[4]!;
    expect(change.textContent).toBe('销毁中已释放');
    expect(within(change).getAllByLabelText('变为')).toHaveLength(1);

    const renamed = screen.getByText('修改名称').closest<HTMLElement>('tr')!;
    const same = renamed.querySelectorAll('td')[4]!;
    expect(same.textContent).toBe('已关机');
    expect(within(same).queryByLabelText('变为')).toBeNull();
  });
});
