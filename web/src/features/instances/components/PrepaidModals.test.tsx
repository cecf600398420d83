import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, type PrepaidRefundQuote } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID2, instance, INSTANCES, instanceServer, listOf } from '../../../test/fixtures/instances';

const EXPIRE = '2099-01-10T12:00:00.000Z';
const running = instance();
const prepaid = instance({ id: ID2, name: '包月机-2', cycle: 'Month', status: 'Stopped', actions: allowedActions('Stopped'), expireAt: EXPIRE });
const AUTO = `${INSTANCES}/${ID2}/auto-renew`;
const REFUND = `${INSTANCES}/${ID2}/refund`;
const REFUND_PRICE = `${REFUND}/price`;
const quote: PrepaidRefundQuote = {
  instanceId: ID2,
  instanceName: '包月机-2',
  expireAt: EXPIRE,
  paid: '3000000',
  paidVoucher: '0',
  totalDays: 30,
  usedDays: 10,
  unusedDays: 20,
  refundable: '1999999',
  feeRate: '0',
  fee: '0',
  refund: '1999999',
  toCash: '1666666',
  toGift: '333333',
  rule: '按未使用的整天数退还（不足一天按已使用计），代金券抵扣部分不退。不收手续费。',
};

const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const rowOf = async (name: string) => (await screen.findByText(name)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;
async function menuItem(row: HTMLElement, name: string, text: string) {
  fireEvent.click(within(row).getByLabelText(`更多操作 ${name}`));
  const items = await screen.findAllByText(text, { selector: '.ant-dropdown-menu-title-content' });
  return items.at(-1)!.closest<HTMLElement>('.ant-dropdown-menu-item')!;
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('auto-renew of a prepaid instance', () => {
  it('is switched on from 更多 with PUT { autoRenew: true }', async () => {
    let current = prepaid;
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === AUTO && init?.method === 'PUT') {
          current = { ...prepaid, autoRenew: (JSON.parse(String(init.body)) as { autoRenew: boolean }).autoRenew };
          return json(200, current);
        }
        return undefined;
      },
      listOf(() => [running, current]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('包月机-2'), '包月机-2', '自动续费'));
    const dialog = await dialogOf('自动续费「包月机-2」');
    expect(within(dialog).getByText(/自动从余额续费 1 月/)).toBeTruthy();
    expect(within(dialog).getByText(/余额不足时不会扣款/)).toBeTruthy();
    expect(button(dialog, '保存').disabled).toBe(true); // nothing changed yet
    fireEvent.click(within(dialog).getByLabelText('自动续费'));
    fireEvent.click(button(dialog, '保存'));
    await waitFor(() => expect(callsTo(fetch, AUTO, 'PUT').map((c) => c.body)).toEqual([{ autoRenew: true }]));
    expect(await screen.findByText('已开启自动续费')).toBeTruthy();
  });

  it('is not offered for post-paid instances', async () => {
    instanceServer(listOf(() => [running, prepaid]));
    renderApp('/console/gpu-generic');
    fireEvent.click(within(await rowOf('训练机-1')).getByLabelText('更多操作 训练机-1'));
    await screen.findAllByText('重命名', { selector: '.ant-dropdown-menu-title-content' });
    const menus = [...document.querySelectorAll<HTMLElement>('.ant-dropdown:not(.ant-dropdown-hidden)')];
    expect(menus.at(-1)!.textContent).not.toContain('自动续费');
    expect(menus.at(-1)!.textContent).not.toContain('退订');
  });
});

describe('退订 of a prepaid instance', () => {
  it('shows the quote, needs the destruction confirmed, then posts the refund', async () => {
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === REFUND_PRICE) return json(200, quote);
        if (url.pathname === REFUND && init?.method === 'POST')
          return json(200, { ...quote, orderUid: 'O20261123085616abcd0043', instance: { ...prepaid, status: 'Deleting', actions: [] } });
        return undefined;
      },
      listOf(() => [running, prepaid]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('包月机-2'), '包月机-2', '退订'));
    const dialog = await dialogOf('退订实例「包月机-2」');
    await waitFor(() => expect(within(dialog).getByTestId('refund-total').textContent).toBe('¥200.00'));
    expect(within(dialog).getByTestId('refund-paid').textContent).toBe('¥300.00');
    expect(within(dialog).getByTestId('refund-days').textContent).toBe('10 天 / 30 天，未使用 20 天');
    expect(within(dialog).getByTestId('refund-cash').textContent).toBe('¥166.67');
    expect(within(dialog).getByTestId('refund-gift').textContent).toBe('¥33.33');
    expect(within(dialog).getByTestId('refund-fee').textContent).toContain('¥0.00');
    expect(within(dialog).getByText(/代金券抵扣部分不退/)).toBeTruthy();
    expect(within(dialog).getByText(/数据将被销毁，无法恢复/)).toBeTruthy();

    const ok = button(dialog, '确认退订并释放');
    expect(ok.disabled).toBe(true);
    fireEvent.click(within(dialog).getByText(/及其全部数据将被销毁/));
    expect(ok.disabled).toBe(false);
    fireEvent.click(ok);
    await waitFor(() => expect(callsTo(fetch, REFUND, 'POST')).toHaveLength(1));
    expect(await screen.findByText('已退订，退款订单 O20261123085616abcd0043')).toBeTruthy();
  });

  it('says why when the server refuses the quote, and offers no confirmation', async () => {
    const fetch = instanceServer(
      (url) => (url.pathname === REFUND_PRICE ? json(400, { code: 40023002, message: '实例已到期，不能退订；到期后的实例可续费或等待释放' }) : undefined),
      listOf(() => [running, prepaid]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('包月机-2'), '包月机-2', '退订'));
    const dialog = await dialogOf('退订实例「包月机-2」');
    expect(await within(dialog).findByText(/不能退订：实例已到期/)).toBeTruthy();
    expect(button(dialog, '确认退订并释放').disabled).toBe(true);
    expect(callsTo(fetch, REFUND, 'POST')).toHaveLength(0);
  });
});
