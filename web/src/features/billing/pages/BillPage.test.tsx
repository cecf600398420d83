import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer, order } from '../../../test/fixtures/cost';

const LIST = '/order/api/v2.1/orders';
const EXPORT = '/order/api/v2.1/orders/export';

const unpaid = order();
const done = order({
  orderUid: 'O20261123080000bbbb0002',
  status: 'Success',
  description: '大模型 Token 包 1 亿 × 1（¥400.00）',
  amount: '4000000',
  voucherDeduction: '500000',
  payMethod: 'Balance',
  paid: [
    { source: 'voucher', amount: '500000' },
    { source: 'gift', amount: '900000' },
    { source: 'cash', amount: '2600000' },
  ],
  paidAt: '2026-11-23T08:01:00.000Z',
  fulfilledAt: '2026-11-23T08:01:00.000Z',
});

/** The filterBy of every list request the page made, in order (the unpaid banner's own query left out). */
const filters = (fetch: ReturnType<typeof costServer>) =>
  callsTo(fetch, LIST)
    .map((c) => c.url.searchParams.get('filterBy'))
    .filter((f) => f !== 'status,Unpaid');

/** The dialog holding `text`. Role queries are avoided here: over the whole console they take seconds in jsdom. */
const dialogOf = async (text: string) => (await screen.findAllByText(text))[0]!.closest<HTMLElement>('.ant-modal')!;

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByLabelText(label));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the bill page', () => {
  it('lists model orders and sends the filters as one filterBy string', async () => {
    const fetch = costServer((url) =>
      url.pathname === LIST && url.searchParams.get('filterBy')?.startsWith('kind,Ai')
        ? json(200, { items: [unpaid, done], total: 2, page: 1, pageSize: 10 })
        : undefined,
    );
    const router = renderApp('/console/cost/bill?tab=model');
    const row = (await screen.findByText('大模型 Token 包 1 亿 × 1（¥400.00）')).closest('tr')!;
    expect(within(row).getByText('已完成')).toBeTruthy();
    expect(within(row).getByText('400.00')).toBeTruthy(); // amounts in yuan, 2 decimals
    expect(within(row).getByText('-50.00')).toBeTruthy();
    expect(within(row).getByText('350.00')).toBeTruthy(); // gift + cash
    expect(within(row).getByText(/^2026-11-2\d \d\d:\d\d:\d\d$/)).toBeTruthy();
    expect(within(row).getByText('详情').closest('a')!.getAttribute('href')).toBe('/console/cost/bill/model-details/O20261123080000bbbb0002');
    expect(filters(fetch)).toEqual(['kind,Ai']);

    await pick('订单状态', '已完成');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Success'));
    expect(new URLSearchParams(router.state.location.search).get('status')).toBe('Success');

    await pick('订单类型', '续费');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Success,type,Renew'));
    const last = callsTo(fetch, LIST).at(-1)!.url.searchParams;
    expect([last.get('page'), last.get('pageSize')]).toEqual(['1', '10']);
  });

  it('says how each paid order was paid: a QR-paid order under 支付宝 / 微信实付, never 余额实付', async () => {
    const byQr = order({
      orderUid: 'O20261123080000cccc0003',
      kind: 'Personal',
      type: 'DayToMonth',
      category: 'Gpu',
      status: 'Success',
      description: '日转月 RTX 4090 × 1',
      amount: '9904200',
      payMethod: 'Wechat',
      paid: [{ source: 'cash', amount: '9904200' }],
      paidAt: '2026-11-23T08:02:00.000Z',
      fulfilledAt: '2026-11-23T08:02:00.000Z',
    });
    const alipay = order({ ...byQr, orderUid: 'O20261123080000cccc0004', description: '包日 RTX 4090 × 1', type: 'NewBuy', payMethod: 'Alipay' });
    costServer((url) =>
      url.pathname === LIST && !url.searchParams.get('filterBy')?.startsWith('status')
        ? json(200, { items: [byQr, alipay, done], total: 3, page: 1, pageSize: 10 })
        : undefined,
    );
    renderApp('/console/cost/bill');
    const wechatRow = (await screen.findByText('日转月 RTX 4090 × 1')).closest('tr')!;
    expect(within(wechatRow).getAllByText('990.42')).toHaveLength(2); // the order amount, and what was paid
    expect(within(wechatRow).getByText('微信实付')).toBeTruthy();
    expect(within(wechatRow).queryByText('余额实付')).toBeNull();
    expect(within(screen.getByText('包日 RTX 4090 × 1').closest('tr')!).getByText('支付宝实付')).toBeTruthy();
    expect(within(screen.getByText('大模型 Token 包 1 亿 × 1（¥400.00）').closest('tr')!).getByText('余额实付')).toBeTruthy();
    expect(screen.getByText('实付', { selector: 'th' })).toBeTruthy();
  });

  it('shows all server bills at once (both order kinds, the key repeated), or one kind on demand', async () => {
    const fetch = costServer();
    const router = renderApp('/console/cost/bill');
    expect(await screen.findByText(/暂无服务器账单/)).toBeTruthy();
    expect(filters(fetch)).toEqual(['kind,Personal,kind,default']);
    fireEvent.click(screen.getByText('CPU 实例 / 云桌面 / 跨境电商 / 云游戏'));
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,default'));
    fireEvent.click(screen.getByText('GPU 实例 / 镜像应用'));
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Personal'));
    expect(new URLSearchParams(router.state.location.search).get('kind')).toBe('Personal');
    fireEvent.click(screen.getByText('全部'));
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Personal,kind,default'));
  });

  it('filters by several statuses and types at once, kept in the URL', async () => {
    const fetch = costServer((url) =>
      url.pathname === LIST && url.searchParams.get('filterBy') === 'kind,Ai,status,Unpaid,status,Success'
        ? json(200, { items: [unpaid, done], total: 2, page: 1, pageSize: 10 })
        : undefined,
    );
    const router = renderApp('/console/cost/bill?tab=model');
    await screen.findByText(/暂无模型账单|大模型/);
    await pick('订单状态', '已完成');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Success'));
    await pick('订单状态', '未支付');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Unpaid,status,Success'));
    expect(await screen.findByText(done.description)).toBeTruthy();
    expect(screen.getByText(unpaid.description)).toBeTruthy();
    expect(new URLSearchParams(router.state.location.search).getAll('status').sort()).toEqual(['Success', 'Unpaid']);
    await pick('订单类型', '新购');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Unpaid,status,Success,type,NewBuy'));
    await pick('订单类型', '续费');
    await waitFor(() => expect(filters(fetch).at(-1)).toBe('kind,Ai,status,Unpaid,status,Success,type,NewBuy,type,Renew'));
  });

  it('reads several statuses from the URL and ignores unknown ones', async () => {
    const fetch = costServer();
    renderApp('/console/cost/bill?kind=default&status=Paid&status=Bogus&status=Refunded&type=Renew');
    await screen.findByText(/没有符合筛选条件的账单/);
    expect(filters(fetch)).toEqual(['kind,default,status,Paid,status,Refunded,type,Renew']);
  });

  it('exports the filtered bills as CSV with the session token', async () => {
    const csv = '\uFEFF订单号,下单时间\r\n';
    const fetch = costServer((url) =>
      url.pathname === EXPORT
        ? new Response(csv, {
            status: 200,
            headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename="bills-2026-11-23.csv"' },
          })
        : undefined,
    );
    const createObjectURL = vi.fn(() => 'blob:bills');
    vi.stubGlobal('URL', Object.assign(URL, { createObjectURL, revokeObjectURL: vi.fn() }));
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => undefined);

    renderApp('/console/cost/bill?tab=model&status=Success');
    await screen.findByText(/暂无模型账单|没有符合筛选条件的账单/);
    fireEvent.click(screen.getByText('导出 CSV'));

    await waitFor(() => expect(click).toHaveBeenCalled());
    const [input, init] = fetch.mock.calls.find(([u]) => String(u).startsWith(EXPORT))!;
    expect(new URL(String(input), 'http://localhost').searchParams.get('filterBy')).toBe('kind,Ai,status,Success');
    expect((init!.headers as Record<string, string>).Authorization).toBe('Bearer tok');
    const anchor = click.mock.contexts[0] as HTMLAnchorElement;
    expect(anchor.download).toBe('bills-2026-11-23.csv');
    const blob = (createObjectURL.mock.calls[0] as unknown as [Blob])[0];
    expect(new Uint8Array(await blob.arrayBuffer()).slice(0, 3)).toEqual(new Uint8Array([0xef, 0xbb, 0xbf])); // the BOM survives for Excel
  });

  it('offers 去支付 and a confirmed 取消订单 on an unpaid row', async () => {
    let cancelled = false;
    const fetch = costServer((url, init) => {
      if (url.pathname === `/order/api/v2.1/tiio/resource/${unpaid.orderUid}/cancel` && init?.method === 'POST') {
        cancelled = true;
        return json(200, { ...unpaid, status: 'Cancelled' });
      }
      if (url.pathname === LIST && url.searchParams.get('filterBy') === 'kind,Ai') {
        return json(200, { items: [cancelled ? { ...unpaid, status: 'Cancelled' } : unpaid], total: 1, page: 1, pageSize: 10 });
      }
      return undefined;
    });
    renderApp('/console/cost/bill?tab=model');
    const row = (await screen.findByText(unpaid.description)).closest('tr')!;
    expect(within(row).getByText('未支付')).toBeTruthy();

    fireEvent.click(within(row).getByText('去支付'));
    const pay = await dialogOf('支付订单');
    expect(within(pay).getByText(unpaid.description)).toBeTruthy();
    fireEvent.click(pay.querySelector('.ant-modal-close')!);

    fireEvent.click(within(row).getByText('取消订单'));
    const confirm = await dialogOf('确认取消订单？');
    fireEvent.click(within(confirm).getByText('取消订单'));
    await waitFor(() => expect(callsTo(fetch, `/order/api/v2.1/tiio/resource/${unpaid.orderUid}/cancel`, 'POST')).toHaveLength(1));
    expect(await screen.findByText('已取消')).toBeTruthy();
  });

  it('says honestly that no storage is billed yet', async () => {
    costServer();
    renderApp('/console/cost/bill?tab=storage');
    expect(await screen.findByText('暂无存储账单')).toBeTruthy();
    expect(screen.getByText(/数据盘扩容、超出免费容量的数据盘等存储费用产生后/)).toBeTruthy();
    expect(screen.getByText('查看存储账单明细').closest('a')!.getAttribute('href')).toBe('/console/cost/bill/storage-details');
  });
});
