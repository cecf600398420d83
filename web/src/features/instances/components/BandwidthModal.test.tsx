import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, allowedTasks, orderPath, type BandwidthQuote, type Instance } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { order } from '../../../test/fixtures/cost';
import { ID, ID2, instance, INSTANCES, instanceServer, listOf } from '../../../test/fixtures/instances';

const ORDER_UID = 'O20261123085616abcd0088';
const CHOICES = [5, 10, 20, 30, 50, 100];
const shop = (o: Partial<Instance> = {}) =>
  instance({
    category: 'Ebusiness',
    name: '店铺机-1',
    gpuTypeId: null,
    gpuName: null,
    gpuCount: 0,
    sizeId: 'ebz-c2m4',
    bandwidthMbps: 5,
    includedBandwidthMbps: 5,
    bandwidthChoices: CHOICES,
    hourlyPrice: '3000',
    ...o,
  });
const postpaid = shop();
const prepaid = shop({ id: ID2, name: '店铺机-2', cycle: 'Day', expireAt: '2099-01-10T12:00:00.000Z' });
const ID3 = '9f0c1d2e-3b4a-4c5d-8e6f-7a8b9c0d1e2f';
const upgraded = shop({ id: ID3, name: '店铺机-3', cycle: 'Day', expireAt: '2099-01-10T12:00:00.000Z', bandwidthMbps: 20 });

function quote(o: Partial<BandwidthQuote> & Pick<BandwidthQuote, 'newMbps'>): BandwidthQuote {
  return {
    instanceId: ID,
    type: 'TrafficUpgrade',
    currentMbps: 5,
    includedMbps: 5,
    choices: CHOICES,
    pricePerMbpsHour: '300',
    prepaid: false,
    remainingHours: 0,
    hourlyPriceAfter: String(3000 + (o.newMbps - 5) * 300),
    quote: {
      category: 'Ebusiness',
      cycle: 'Usage',
      duration: 0,
      unit: '小时',
      lines: [],
      listTotal: '0',
      discountTotal: '0',
      voucherDeduction: '0',
      total: '0',
      placement: { regionId: 'sh-a' },
      discountRate: '1',
    },
    refund: '0',
    rule: '按量计费实例调整带宽：无需预付，生效后按新的每小时价格按秒计费，生效前按原带宽计费。',
    ...o,
  };
}

const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const rowOf = async (name: string) => (await screen.findByText(name)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;
async function openBandwidth(name: string) {
  fireEvent.click(within(await rowOf(name)).getByLabelText(`更多操作 ${name}`));
  const items = await screen.findAllByText('调整带宽', { selector: '.ant-dropdown-menu-title-content, .menu-item-label' });
  fireEvent.click(items.at(-1)!.closest<HTMLElement>('.ant-dropdown-menu-item')!);
  return dialogOf(`调整带宽「${name}」`);
}

const server = (items: () => Instance[]) =>
  instanceServer(
    (url, init) => {
      if (init?.method !== 'POST') return undefined;
      const id = url.pathname.split('/')[5];
      const body = init.body ? (JSON.parse(String(init.body)) as { bandwidthMbps: number }) : { bandwidthMbps: 0 };
      if (url.pathname.endsWith('/bandwidth/price')) {
        if (id === ID) return json(200, quote({ newMbps: body.bandwidthMbps }));
        if (body.bandwidthMbps < 20 && id === ID3)
          return json(
            200,
            quote({
              instanceId: ID3,
              type: 'TrafficDowngrade',
              currentMbps: 20,
              newMbps: body.bandwidthMbps,
              prepaid: true,
              remainingHours: 23,
              hourlyPriceAfter: '0',
              refund: '103500',
              rule: '包周期实例降低带宽：立即生效；按剩余整小时数退还升级带宽时实付的现金与赠送金',
            }),
          );
        const hours = 23;
        const total = String(Math.max(0, body.bandwidthMbps - 5) * 300 * hours);
        return json(
          200,
          quote({
            instanceId: ID2,
            newMbps: body.bandwidthMbps,
            prepaid: true,
            remainingHours: hours,
            hourlyPriceAfter: '0',
            quote: {
              ...quote({ newMbps: 0 }).quote,
              cycle: 'Day',
              total,
              lines: [
                {
                  kind: 'bandwidth',
                  name: `带宽升级 +${body.bandwidthMbps - 5} Mbps（按剩余 23 小时计）`,
                  unitPrice: '300',
                  quantity: body.bandwidthMbps - 5,
                  amount: total,
                },
              ],
            },
            rule: '包周期实例升级带宽：按新增带宽 × 剩余整小时数一次性支付，支付后立即生效；续费按新带宽计价。',
          }),
        );
      }
      if (url.pathname.endsWith('/bandwidth')) {
        if (id === ID) return json(200, { order: null, instance: { ...postpaid, status: 'Operating', actions: [], tasks: [] } });
        if (id === ID3) return json(200, { order: null, instance: { ...upgraded, status: 'Operating', actions: [], tasks: [] } });
        return json(200, {
          order: order({
            orderUid: ORDER_UID,
            kind: 'default',
            type: 'TrafficUpgrade',
            category: 'Ebusiness',
            description: '带宽升级 店铺机-2',
            amount: '34500',
          }),
          instance: prepaid,
        });
      }
      return undefined;
    },
    (url) => (url.pathname === orderPath('default', ORDER_UID, '/pay') ? json(200, { orderUid: ORDER_UID, status: 'Unpaid', payment: null }) : undefined),
    listOf(items),
  );

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('调整带宽', () => {
  it('is offered only for e-commerce machines', async () => {
    server(() => [shop(), instance({ id: ID2, name: 'GPU机' })]);
    renderApp('/console/e-business');
    fireEvent.click(within(await rowOf('GPU机')).getByLabelText('更多操作 GPU机'));
    await screen.findAllByText('数据盘扩容', { selector: '.ant-dropdown-menu-title-content, .menu-item-label' });
    const menu = [...document.querySelectorAll<HTMLElement>('.ant-dropdown:not(.ant-dropdown-hidden)')].at(-1)!;
    expect(menu.textContent).not.toContain('调整带宽');
  });

  it('post-paid: quotes the new hourly price, then changes at once with nothing to pay', async () => {
    const fetch = server(() => [postpaid]);
    renderApp('/console/e-business');
    const dialog = await openBandwidth('店铺机-1');
    expect(dialog.textContent).toContain('5 Mbps（规格自带 5 Mbps）');
    // The next step up is offered first; the current one cannot be chosen.
    await waitFor(() => expect(within(dialog).getByTestId('bandwidth-hourly').textContent).toContain('调整后每小时 ¥0.45'));
    expect(within(dialog).getByText('5 Mbps').closest('label')!.className).toContain('disabled');
    fireEvent.click(within(dialog).getByText('50 Mbps'));
    await waitFor(() => expect(within(dialog).getByTestId('bandwidth-hourly').textContent).toContain('调整后每小时 ¥1.65'));
    expect(within(dialog).getByTestId('bandwidth-total').textContent).toBe('¥0.00');
    expect(within(dialog).getByText(/生效前按原带宽计费/)).toBeTruthy();
    fireEvent.click(button(dialog, '确认调整'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID}/bandwidth`, 'POST').map((c) => c.body)).toEqual([{ bandwidthMbps: 50 }]));
    expect(await screen.findByText('正在调整带宽为 50 Mbps，几秒后生效')).toBeTruthy();
    expect(document.querySelector('.ant-modal-wrap:not([style*="display: none"]) .ant-modal')?.textContent ?? '').not.toContain('支付订单');
  });

  it('prepaid upgrade: pays the added Mbps for the hours left in the pay dialog', async () => {
    const fetch = server(() => [prepaid]);
    renderApp('/console/e-business');
    const dialog = await openBandwidth('店铺机-2');
    await waitFor(() => expect(within(dialog).getByTestId('bandwidth-total').textContent).toBe('¥3.45'));
    expect(within(dialog).getByText('按剩余 23 小时折算，支付后生效。')).toBeTruthy();
    fireEvent.click(button(dialog, '提交订单'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID2}/bandwidth`, 'POST').map((c) => c.body)).toEqual([{ bandwidthMbps: 10 }]));
    const pay = await dialogOf('支付订单');
    expect(within(pay).getByText(new RegExp(ORDER_UID))).toBeTruthy();
  });

  it('prepaid downgrade: says what will come back, and changes with nothing to pay', async () => {
    const fetch = server(() => [upgraded]);
    renderApp('/console/e-business');
    const dialog = await openBandwidth('店铺机-3');
    // At 20 Mbps the next step up (30) is offered first; going down to 5 shows the refund.
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID3}/bandwidth/price`, 'POST').map((c) => c.body)).toContainEqual({ bandwidthMbps: 30 }));
    fireEvent.click(within(dialog).getByText('5 Mbps'));
    await waitFor(() => expect(within(dialog).getByTestId('bandwidth-total').textContent).toBe('¥10.35'));
    expect(within(dialog).getByText('预计退还')).toBeTruthy();
    expect(within(dialog).getByText(/按剩余整小时数退还/)).toBeTruthy();
    fireEvent.click(button(dialog, '确认调整'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID3}/bandwidth`, 'POST').map((c) => c.body)).toEqual([{ bandwidthMbps: 5 }]));
    expect(await screen.findByText('正在调整带宽为 5 Mbps，几秒后生效')).toBeTruthy();
  });

  it('is greyed out while an operation is under way', async () => {
    server(() => [shop({ status: 'Starting', actions: allowedActions('Starting'), tasks: allowedTasks('Starting') })]);
    renderApp('/console/e-business');
    fireEvent.click(within(await rowOf('店铺机-1')).getByLabelText('更多操作 店铺机-1'));
    const item = (await screen.findAllByText('调整带宽', { selector: '.ant-dropdown-menu-title-content, .menu-item-label' }))
      .at(-1)!
      .closest<HTMLElement>('.ant-dropdown-menu-item')!;
    expect(item.className).toContain('ant-dropdown-menu-item-disabled');
  });
});
