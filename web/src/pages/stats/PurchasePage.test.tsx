import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { User } from '@console/contract';
import { session } from '../../session/store';
import { calls, catalogueServer, json, quoteFor, renderApp } from './catalogue.fixtures';

const user: User = {
  id: 'u1', logo: '', certStatus: 'Init', certType: 'Uncertified', accountType: 'personal',
  createAt: '2025-01-01T00:00:00Z', credit: 0, from: 'web', mobile: '13800138000', email: '', name: '',
  nickname: '', childName: '', isStudent: false, isChild: false, certified: false, userVersion: 1,
  firstVisit: true, openModal: false, isOperator: false, createGPUInstance: false, createImageAPP: false,
  openYunBucket: false, gpu: false, app: false, image: false, usingLLM: false,
};

const FROM_CARD = '/stats/purchase?hostId=h1&gpuTypeId=rtx4090&regionId=bj-b&roomId=bj-b-1&cycle=Hour&gpuCount=1';
const VISITOR_QUOTE = '/infra/api/v2.1/gpu/order/price';
const USER_QUOTE = '/infra/api/v2.1/gpu/order/user/price';

const total = () => screen.findByTestId('quote-total');
const panel = () => screen.getByLabelText('配置费用');

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

describe('the purchase page', () => {
  it('quotes the configuration of the URL and again when the cycle changes', async () => {
    const fetch = catalogueServer();
    renderApp(FROM_CARD);
    expect((await total()).textContent).toBe('¥1.98');
    const [first] = fetch.mock.calls.filter(([u]) => String(u) === VISITOR_QUOTE);
    expect(JSON.parse(String(first![1]!.body))).toEqual({
      gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', roomId: 'bj-b-1', hostId: 'h1', imageId: 'pytorch-2.3', cycle: 'Hour', duration: 1, dataDiskGb: 0,
    });

    fireEvent.click(within(screen.getByRole('radiogroup', { name: '计费方式' })).getByText('按日'));
    await waitFor(async () => expect((await total()).textContent).toBe('¥45.14'));
  });

  it('shows the server lines, the discount and the total', async () => {
    catalogueServer();
    renderApp(FROM_CARD.replace('cycle=Hour', 'cycle=Day').concat('&duration=2'));
    await waitFor(async () => expect((await total()).textContent).toBe('¥90.29'));
    const lines = within(panel()).getByRole('list', { name: '费用明细' });
    expect(within(lines).getByText('RTX 4090 × 1（2 天）')).toBeTruthy();
    expect(within(lines).getByText('¥95.04')).toBeTruthy(); // list price of 2 days
    expect(within(lines).getByText('-¥4.75')).toBeTruthy(); // the 0.95 cycle discount
    expect(within(panel()).getByText('9.5 折')).toBeTruthy();
    expect(within(panel()).getByText(/已优惠 ¥4\.75/)).toBeTruthy();
  });

  it('shows a capacity conflict inline and does not let the buyer go on', async () => {
    catalogueServer((url) =>
      url.pathname === VISITOR_QUOTE
        ? json(409, { code: 40920001, message: '所选配置暂无空闲资源，请更换地区、主机或减少数量', detail: '主机 BJ-B-1-A01 当前空闲 5 卡，不足 8 卡' })
        : undefined,
    );
    renderApp(FROM_CARD.replace('gpuCount=1', 'gpuCount=8'));
    expect(await screen.findByText('所选配置暂无空闲资源，请更换地区、主机或减少数量')).toBeTruthy();
    expect(within(panel()).getByText('主机 BJ-B-1-A01 当前空闲 5 卡，不足 8 卡')).toBeTruthy();
    expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('sends a visitor to log in with the whole configuration in redirect', async () => {
    catalogueServer();
    const router = renderApp(FROM_CARD);
    await total();
    // Typing right after the click: the second edit must not undo the first while the URL catches up.
    fireEvent.click(within(screen.getByRole('radiogroup', { name: '计费方式' })).getByText('按日'));
    fireEvent.change(screen.getByLabelText('实例名称'), { target: { value: '训练机' } });
    await waitFor(async () => expect((await total()).textContent).toBe('¥45.14'));
    await waitFor(() => expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: '立即购买' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
    const redirect = new URLSearchParams(router.state.location.search).get('redirect')!;
    const back = new URL(redirect, 'http://localhost');
    expect(back.pathname).toBe('/stats/purchase');
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      hostId: 'h1', gpuTypeId: 'rtx4090', regionId: 'bj-b', roomId: 'bj-b-1', gpuCount: '1', cycle: 'Day', duration: '1', imageId: 'pytorch-2.3', name: '训练机',
    });
  });

  it('a logged-in buyer gets the user quote, can apply a voucher, and an honest confirmation', async () => {
    session.setLogin('tok', user);
    const voucher = {
      id: '0b6c1f0e-2a59-4d51-9b8e-6a3c0f2b9d11', name: '新用户代金券', amount: '500000', minSpend: '0', categories: [],
      status: 'Unused', validFrom: '2025-01-01T00:00:00Z', expiresAt: '2099-01-31T00:00:00Z',
    };
    const fetch = catalogueServer((url, init) => {
      if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, user);
      if (url.pathname === '/billing/api/v1/user/money') return json(200, { cash: '0' });
      if (url.pathname === '/order/api/v2.1/vouchers') return json(200, { items: [voucher] });
      if (url.pathname === USER_QUOTE) {
        const body = JSON.parse(String(init!.body)) as { voucherId?: string };
        const q = quoteFor('Hour');
        if (!body.voucherId) return json(200, q);
        const line = { kind: 'voucher', name: '代金券：新用户代金券', unitPrice: '-19800', quantity: 1, amount: '-19800' };
        return json(200, { ...q, lines: [...q.lines, line], voucherDeduction: '19800', total: '0', voucherId: body.voucherId });
      }
      return undefined;
    });
    const router = renderApp(FROM_CARD);
    expect((await total()).textContent).toBe('¥1.98');
    expect(calls(fetch, VISITOR_QUOTE)).toHaveLength(0);
    expect(calls(fetch, '/order/api/v2.1/vouchers')[0]!.searchParams.get('category')).toBe('Gpu');

    fireEvent.mouseDown(await screen.findByRole('combobox', { name: '代金券' }));
    fireEvent.click(await screen.findByText(/新用户代金券 · ¥50\.00（无门槛，2099-01-31 到期）/));
    await waitFor(async () => expect((await total()).textContent).toBe('¥0.00'));
    expect(within(panel()).getByText('代金券：新用户代金券')).toBeTruthy();
    expect(new URLSearchParams(router.state.location.search).get('voucherId')).toBe(voucher.id);
    const sent = fetch.mock.calls.filter(([u]) => String(u) === USER_QUOTE).map(([, i]) => JSON.parse(String(i!.body)));
    expect(sent.at(-1)).toMatchObject({ voucherId: voucher.id });

    await waitFor(() => expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: '立即购买' }));
    const dialog = (await screen.findAllByRole('dialog')).find((d) => d.textContent?.includes('确认订单'))!;
    expect(within(dialog).getByText('应付金额')).toBeTruthy();
    expect(dialog.textContent).toContain('¥0.00');
    fireEvent.click(within(dialog).getByRole('button', { name: '提交订单' }));
    expect(await screen.findByText('下单功能即将开放，敬请期待')).toBeTruthy();
  });
});
