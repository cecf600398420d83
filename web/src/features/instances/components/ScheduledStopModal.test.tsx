import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, formatBeijing, type Instance } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, ID2, instance, INSTANCES, instanceServer, listOf } from '../../../test/fixtures/instances';

const PATH = `${INSTANCES}/${ID}/scheduled-stop`;
const AT = '2026-11-26T00:00:00.000Z'; // 08:00 in Beijing
/** As the console shows times: Beijing time, whatever the browser's zone (the tests run in UTC). */
const SHOWN = '将于 2026-11-26 08:00 关机';

const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const rowOf = async (name: string) => (await screen.findByText(name)).closest<HTMLElement>('tr')!;
async function menuItem(row: HTMLElement, name: string, text: string) {
  fireEvent.click(within(row).getByLabelText(`更多操作 ${name}`));
  const items = await screen.findAllByText(text, { selector: '.ant-dropdown-menu-title-content, .menu-item-label' });
  return items.at(-1)!.closest<HTMLElement>('.ant-dropdown-menu-item')!;
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('定时关机', () => {
  it('sets a stop after a number of hours from 更多, and the list then shows it', async () => {
    let current: Instance = instance();
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === PATH && init?.method === 'PUT') {
          current = { ...current, scheduledStopAt: AT };
          return json(200, current);
        }
        return undefined;
      },
      listOf(() => [current]),
    );
    renderApp('/console/gpu-generic');

    fireEvent.click(await menuItem(await rowOf('训练机-1'), '训练机-1', '定时关机'));
    const dialog = await dialogOf('定时关机「训练机-1」');
    const hours = within(dialog).getByLabelText('小时数');
    fireEvent.change(hours, { target: { value: '3.5' } });
    expect(await within(dialog).findByTestId('scheduled-stop-preview')).toBeTruthy();
    expect(within(dialog).getByText(/超出免费容量的数据盘仍按小时计费/)).toBeTruthy();
    fireEvent.click(within(dialog).getByText('设置定时关机').closest('button')!);

    await waitFor(() => expect(callsTo(fetch, PATH, 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, PATH, 'PUT')[0]!.body).toEqual({ hours: 3.5 });
    const row = await rowOf('训练机-1');
    expect(await within(row).findByText(SHOWN)).toBeTruthy();
    expect(within(row).getByText('取消').closest('button')).toBeTruthy();
  });

  it('takes a chosen stop time as Beijing time whatever the browser zone', async () => {
    const fetch = instanceServer(
      (url, init) => (url.pathname === PATH && init?.method === 'PUT' ? json(200, instance({ scheduledStopAt: AT })) : undefined),
      listOf(() => [instance()]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('训练机-1'), '训练机-1', '定时关机'));
    const dialog = await dialogOf('定时关机「训练机-1」');
    fireEvent.click(within(dialog).getByText('指定关机时间'));
    // 10:00 in Beijing, two days on: 02:00 UTC that day.
    const day = formatBeijing(new Date(Date.now() + 48 * 3_600_000)).slice(0, 10);
    const input = await within(dialog).findByLabelText('关机时间');
    fireEvent.mouseDown(input);
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: `${day} 10:00` } });
    fireEvent.keyDown(input, { key: 'Enter', code: 'Enter', keyCode: 13 });
    expect(await within(dialog).findByText(`将于 ${day} 10:00 关机（到时由系统关机）`)).toBeTruthy();
    fireEvent.click(within(dialog).getByText('设置定时关机').closest('button')!);
    await waitFor(() => expect(callsTo(fetch, PATH, 'PUT').map((c) => c.body)).toEqual([{ at: `${day}T02:00:00.000Z` }]));
  });

  it('shows the schedule with 取消, which asks and then cancels it', async () => {
    let current: Instance = instance({ scheduledStopAt: AT });
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === PATH && init?.method === 'DELETE') {
          current = { ...current, scheduledStopAt: null };
          return json(200, current);
        }
        return undefined;
      },
      listOf(() => [current]),
    );
    renderApp('/console/gpu-generic');

    const row = await rowOf('训练机-1');
    expect(within(row).getByText(SHOWN)).toBeTruthy();
    fireEvent.click(within(row).getByText('取消').closest('button')!);
    const confirm = await dialogOf('取消定时关机？');
    expect(callsTo(fetch, PATH, 'DELETE')).toHaveLength(0); // nothing before the confirmation
    fireEvent.click(within(confirm).getByText('取消定时关机').closest('button')!);
    await waitFor(() => expect(callsTo(fetch, PATH, 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText(SHOWN)).toBeNull());
  });

  it('greys out 定时关机 for a stopped instance, with the reason', async () => {
    const stopped = instance({ id: ID2, name: '推理机-2', status: 'Stopped', actions: allowedActions('Stopped') });
    instanceServer(listOf(() => [stopped]));
    renderApp('/console/gpu-generic');
    const item = await menuItem(await rowOf('推理机-2'), '推理机-2', '定时关机');
    expect(item.classList.contains('ant-dropdown-menu-item-disabled')).toBe(true);
    expect(within(item).getByText('实例已关机，无需定时关机')).toBeTruthy();
  });

  it('shows the schedule on the detail page with 修改 and 取消', async () => {
    const scheduled = instance({ scheduledStopAt: AT });
    instanceServer((url) => (url.pathname === `${INSTANCES}/${ID}` ? json(200, scheduled) : undefined));
    renderApp(`/console/ipvm/detail/Gpu/${ID}`);
    const alert = (await screen.findByText(`定时关机：${SHOWN}`)).closest<HTMLElement>('.ant-alert')!;
    fireEvent.click(within(alert).getByText('修改').closest('button')!);
    const dialog = await dialogOf('定时关机「训练机-1」');
    expect(within(dialog).getByText(`已设置：${SHOWN}`)).toBeTruthy();
    expect(within(dialog).getByText('修改定时关机')).toBeTruthy();
  });
});
