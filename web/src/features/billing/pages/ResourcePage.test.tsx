import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer, order, pkg } from '../../../test/fixtures/cost';

const CREATE = '/shinichi/api/v2.1/tiio/resource';
// Role queries over the whole console take seconds in jsdom: these tests find things by text and label.
const card = (name: string) => screen.getByLabelText(`资源包 ${name}`);

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the resource package page', () => {
  it('shows what is for sale and what the account holds', async () => {
    costServer((url) => (url.pathname === '/order/api/v2.1/resource/packages' ? json(200, { items: [pkg] }) : undefined));
    renderApp('/console/cost/resource');
    await screen.findByLabelText('资源包 大模型 Token 包 1000 万');
    const tokens = card('大模型 Token 包 1000 万');
    expect(within(tokens).getByText('1000 万 tokens')).toBeTruthy();
    expect(within(tokens).getByText('有效期 365 天')).toBeTruthy();
    expect(within(card('RTX 4090 时长包 100 小时')).getByText('100 卡时')).toBeTruthy();

    const row = (await screen.findByText('250 万 tokens')).closest('tr')!;
    expect(within(row).getByText('1000 万 tokens')).toBeTruthy();
    expect(within(row).getByLabelText('剩余 25%')).toBeTruthy();
    expect(within(row).getByText(pkg.orderUid).closest('a')!.getAttribute('href')).toBe(`/console/cost/bill/model-details/${pkg.orderUid}`);
  });

  it('shows card-hour packages in hours to 0.01 (rounded down), with the GPU type they pay for and the expired ones marked', async () => {
    const hours = {
      ...pkg,
      id: 'p2',
      name: 'RTX 4090 时长包 100 小时',
      unit: '卡时',
      total: '100',
      remain: '37.5099',
      gpuTypeId: 'rtx4090',
      orderUid: 'O20261123085616aaaa0002',
    };
    const old = { ...hours, id: 'p3', name: '旧时长包', remain: '1', expired: true, orderUid: 'O20261123085616aaaa0003' };
    costServer((url) => {
      if (url.pathname === '/order/api/v2.1/resource/packages') return json(200, { items: [hours, old, pkg] });
      if (url.pathname === '/upgpu/api/v2.1/gpu_type/list') return json(200, { items: [{ id: 'rtx4090', name: 'RTX 4090' }] });
      return undefined;
    });
    renderApp('/console/cost/resource');
    const row = (await screen.findByText('37.5 卡时')).closest('tr')!;
    expect(within(row).getByText('100 卡时')).toBeTruthy();
    expect(within(row).getByLabelText('剩余 37.5%')).toBeTruthy();
    expect(await within(row).findByText('抵扣 RTX 4090 按量实例')).toBeTruthy();
    const expiredRow = screen.getByText('旧时长包').closest('tr')!;
    expect(within(expiredRow).getByText('已过期')).toBeTruthy();
    const tokens = screen.getByText('250 万 tokens').closest('tr')!;
    expect(within(tokens).getByText('模型服务按 Token 抵扣（即将开放）')).toBeTruthy();
  });

  it('buys: creates a model order for the count chosen and opens the pay dialog on it', async () => {
    const created = order({ description: '大模型 Token 包 1000 万 × 3（¥150.00）', amount: '1500000' });
    const fetch = costServer((url, init) => (url.pathname === CREATE && init?.method === 'POST' ? json(200, created) : undefined));
    renderApp('/console/cost/resource');
    await screen.findByLabelText('资源包 大模型 Token 包 1000 万');
    const tokens = card('大模型 Token 包 1000 万');
    fireEvent.change(within(tokens).getByLabelText('购买数量 大模型 Token 包 1000 万'), { target: { value: '3' } });
    await waitFor(() => expect(within(tokens).getByText('150.00')).toBeTruthy()); // 合计
    fireEvent.click(within(tokens).getByText('立即购买'));

    const dialog = (await screen.findByText('支付订单')).closest<HTMLElement>('.ant-modal')!;
    expect(within(dialog).getByText(created.description)).toBeTruthy();
    expect(await within(dialog).findByText('余额支付 ¥150.00')).toBeTruthy();
    expect(callsTo(fetch, CREATE, 'POST').map((c) => c.body)).toEqual([{ productId: 'llm-tokens-10m', count: 3 }]);
  });

  it('an unpaid order already open: the refusal links to the bills, and the banner offers to pay it', async () => {
    const open = order({ description: 'RTX 4090 时长包 100 小时 × 1（¥168.00）', amount: '1680000' });
    costServer((url, init) => {
      if (url.pathname === CREATE && init?.method === 'POST') return json(400, { code: 40011007, message: '存在未支付订单，无法创建新订单' });
      if (url.pathname === '/order/api/v2.1/orders' && url.searchParams.get('filterBy') === 'status,Unpaid')
        return json(200, { items: [open], total: 1, page: 1, pageSize: 1 });
      return undefined;
    });
    renderApp('/console/cost/resource');
    await screen.findByLabelText('资源包 大模型 Token 包 1000 万');
    expect(await screen.findByText(/您有一笔未支付订单/)).toBeTruthy();
    fireEvent.click(within(card('大模型 Token 包 1000 万')).getByText('立即购买'));
    expect(await screen.findByText('前往账单页处理')).toBeTruthy();
    expect(screen.queryByText('支付订单')).toBeNull();

    fireEvent.click(within(screen.getByText(/您有一笔未支付订单/).closest<HTMLElement>('.ant-alert')!).getByText('去支付'));
    const dialog = (await screen.findByText('支付订单')).closest<HTMLElement>('.ant-modal')!;
    expect(within(dialog).getByText(open.description)).toBeTruthy();
  });
});
