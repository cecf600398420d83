import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, orderPath, type ConversionQuote } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { order } from '../../../test/fixtures/cost';
import { ID, ID2, instance, INSTANCES, instanceServer, listOf } from '../../../test/fixtures/instances';

const EXPIRE = '2099-01-10T12:00:00.000Z';
const running = instance(); // post-paid (Usage), Running
const day = instance({ id: ID2, name: '包日机-2', cycle: 'Day', status: 'Running', actions: allowedActions('Running'), expireAt: EXPIRE });
const D2M = `${INSTANCES}/${ID2}/day-to-month`;
const TRANSFER = `${INSTANCES}/${ID}/transfer-to-long`;
const ORDER_UID = 'O20261123085616abcd0077';

function quote(o: Partial<ConversionQuote> = {}): ConversionQuote {
  return {
    category: 'Gpu',
    cycle: 'Month',
    duration: 1,
    unit: '月',
    lines: [
      { kind: 'compute', name: '日转月 包日机-2（RTX 4090 × 1）（1 月）', unitPrice: '14256000', quantity: 1, amount: '14256000' },
      { kind: 'cycleDiscount', name: '月付优惠（0.7）', unitPrice: '-4276800', quantity: 1, amount: '-4276800' },
      { kind: 'credit', name: '包日剩余 18 小时抵扣', unitPrice: '-75000', quantity: 1, amount: '-75000' },
    ],
    listTotal: '14256000',
    discountTotal: '4276800',
    voucherDeduction: '0',
    total: '9904200',
    placement: { regionId: 'bj-b' },
    discountRate: '0.7',
    credit: '75000',
    creditHours: 18,
    expireAt: '2099-02-09T12:00:00.000Z',
    rule: '日转月：按包月价格支付 1 个月（自支付时起算），并抵扣当前包日周期未使用部分的价值。',
    ...o,
  };
}

const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const rowOf = async (name: string) => (await screen.findByText(name)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;
async function menuItem(row: HTMLElement, name: string, text: string) {
  fireEvent.click(within(row).getByLabelText(`更多操作 ${name}`));
  const items = await screen.findAllByText(text, { selector: '.ant-dropdown-menu-title-content' });
  return items.at(-1)!.closest<HTMLElement>('.ant-dropdown-menu-item')!;
}

const server = () =>
  instanceServer(
    (url, init) => {
      if (url.pathname === `${D2M}/price`) return json(200, quote());
      if (init?.method !== 'POST') return undefined;
      if (url.pathname === `${TRANSFER}/price`) {
        const b = JSON.parse(String(init.body)) as { cycle: 'Week' | 'Month'; duration: number };
        return json(
          200,
          quote({
            cycle: b.cycle,
            duration: b.duration,
            lines: [],
            credit: '0',
            creditHours: 0,
            total: b.cycle === 'Week' ? '2827400' : '9979200',
            rule: '转长期租用：先结清本次运行至今的按量费用',
          }),
        );
      }
      if (url.pathname === D2M)
        return json(
          200,
          order({ orderUid: ORDER_UID, kind: 'Personal', type: 'DayToMonth', category: 'Gpu', description: '日转月 包日机-2', amount: '9904200' }),
        );
      if (url.pathname === TRANSFER)
        return json(
          200,
          order({ orderUid: ORDER_UID, kind: 'Personal', type: 'TransferToLong', category: 'Gpu', description: '转长期租用', amount: '2827400' }),
        );
      return undefined;
    },
    (url) => (url.pathname === orderPath('Personal', ORDER_UID, '/pay') ? json(200, { orderUid: ORDER_UID, status: 'Unpaid', payment: null }) : undefined),
    listOf(() => [running, day]),
  );

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('日转月 and 转长期租用', () => {
  it('offers 日转月 only for Day instances and 转长期租用 only for post-paid ones', async () => {
    server();
    renderApp('/console/gpu-generic');
    expect(await menuItem(await rowOf('包日机-2'), '包日机-2', '日转月')).toBeTruthy();
    let menus = [...document.querySelectorAll<HTMLElement>('.ant-dropdown:not(.ant-dropdown-hidden)')];
    expect(menus.at(-1)!.textContent).not.toContain('转长期租用');
    fireEvent.click(within(await rowOf('训练机-1')).getByLabelText('更多操作 训练机-1'));
    await screen.findAllByText('转长期租用', { selector: '.ant-dropdown-menu-title-content' });
    menus = [...document.querySelectorAll<HTMLElement>('.ant-dropdown:not(.ant-dropdown-hidden)')];
    expect(menus.at(-1)!.textContent).not.toContain('日转月');
  });

  it('日转月 shows the credit, the total and the rule, then creates the order and opens the pay dialog', async () => {
    const fetch = server();
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('包日机-2'), '包日机-2', '日转月'));
    const dialog = await dialogOf('日转月「包日机-2」');
    await waitFor(() => expect(within(dialog).getByTestId('convert-total').textContent).toBe('¥990.42'));
    expect(within(dialog).getByText('包日剩余 18 小时抵扣')).toBeTruthy();
    expect(within(dialog).getByTestId('convert-expiry').textContent).toMatch(/^2099-02-09 /);
    expect(within(dialog).getByText(/抵扣当前包日周期未使用部分/)).toBeTruthy();
    fireEvent.click(button(dialog, '确认日转月'));
    await waitFor(() => expect(callsTo(fetch, D2M, 'POST')).toHaveLength(1));
    const pay = await dialogOf('支付订单');
    expect(within(pay).getByText(new RegExp(ORDER_UID))).toBeTruthy();
  });

  it('转长期租用 quotes the chosen cycle and duration and posts them', async () => {
    const fetch = server();
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('训练机-1'), '训练机-1', '转长期租用'));
    const dialog = await dialogOf('转长期租用「训练机-1」');
    await waitFor(() => expect(within(dialog).getByTestId('convert-total').textContent).toBe('¥997.92'));
    fireEvent.click(within(dialog).getByText('包周'));
    await waitFor(() => expect(within(dialog).getByTestId('convert-total').textContent).toBe('¥282.74'));
    expect(callsTo(fetch, `${TRANSFER}/price`, 'POST').at(-1)!.body).toEqual({ cycle: 'Week', duration: 1 });
    fireEvent.click(button(dialog, '确认转长期租用'));
    await waitFor(() => expect(callsTo(fetch, TRANSFER, 'POST').map((c) => c.body)).toEqual([{ cycle: 'Week', duration: 1 }]));
    expect(await dialogOf('支付订单')).toBeTruthy();
  });
});
