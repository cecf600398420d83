import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import { session } from '../../session/store';
import { json } from '../../test/http';
import { renderApp } from '../../test/render';
import { user } from '../../test/fixtures/user';
import { costServer, order } from '../../test/fixtures/cost';

const uid = 'O20261123085616aaaa0001';
const paths = (fetch: ReturnType<typeof costServer>) =>
  fetch.mock.calls.map(([u]) => new URL(String(u), 'http://localhost').pathname).filter((p) => p.endsWith(uid));

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the bill detail pages', () => {
  it('show a refunded model order: its steps, price lines, payment parts and the reason', async () => {
    const refunded = order({
      status: 'Refunded',
      amount: '1000000',
      voucherDeduction: '500000',
      payMethod: 'Balance',
      paid: [
        { source: 'voucher', amount: '500000' },
        { source: 'gift', amount: '200000' },
        { source: 'cash', amount: '300000' },
      ],
      failReason: '资源包已下架',
      paidAt: '2026-11-23T08:57:00.000Z',
      refundedAt: '2026-11-23T08:57:01.000Z',
    });
    costServer((url) => (url.pathname === `/order/api/v2.1/tiio/resource/${uid}` ? json(200, refunded) : undefined));
    renderApp(`/console/cost/bill/model-details/${uid}`);

    expect(await screen.findByText('已退款', { selector: '.ant-tag' })).toBeTruthy();
    expect(screen.getByText('原因：资源包已下架。已支付的代金券、赠送金和现金已原路退回。')).toBeTruthy();
    for (const step of ['提交订单', '支付成功', '处理失败']) expect(screen.getByText(step)).toBeTruthy();
    expect(screen.getAllByText('已退款').length).toBeGreaterThan(1); // the tag and the last step

    const lines = screen.getByLabelText('费用明细');
    expect(within(lines).getByText('大模型 Token 包 1000 万 × 1')).toBeTruthy();
    expect(within(lines).getByText('代金券抵扣')).toBeTruthy();
    expect(within(lines).getByText('-¥50.00')).toBeTruthy();
    const parts = screen.getByLabelText('支付构成');
    expect(within(within(parts).getByText('赠送金').closest('li')!).getByText('¥20.00')).toBeTruthy();
    expect(within(within(parts).getByText('现金').closest('li')!).getByText('¥30.00')).toBeTruthy();
    expect(within(parts).getByText('¥50.00', { selector: 'li:last-child *' })).toBeTruthy();
  });

  it('say 订单不存在 with a way back when no kind has the order', async () => {
    const fetch = costServer((url) => (url.pathname.endsWith(uid) ? json(404, { code: 40400004, message: '记录不存在或无权查看' }) : undefined));
    renderApp(`/console/cost/bill/server-details/${uid}?kind=default`);
    expect(await screen.findByText('订单不存在')).toBeTruthy();
    expect(paths(fetch)[0]).toBe(`/order/api/v2.1/order/${uid}`); // the kind of the link first
    expect(new Set(paths(fetch))).toEqual(
      new Set([`/order/api/v2.1/order/${uid}`, `/order/api/v2.1/gpu/order/${uid}`, `/order/api/v2.1/tiio/resource/${uid}`]),
    );
    expect(screen.getAllByText('返回账单').some((b) => b.closest('a')?.getAttribute('href') === '/console/cost/bill')).toBe(true);
  });

  it('send a ledger link to a model order on to the model bill detail', async () => {
    costServer((url) =>
      url.pathname === `/order/api/v2.1/tiio/resource/${uid}`
        ? json(200, order())
        : url.pathname.endsWith(uid)
          ? json(404, { code: 40400004, message: '记录不存在或无权查看' })
          : undefined,
    );
    const router = renderApp(`/console/cost/bill/server-details/${uid}`);
    await waitFor(() => expect(router.state.location.pathname).toBe(`/console/cost/bill/model-details/${uid}`));
    expect(await screen.findByText(/订单待支付，请在/)).toBeTruthy();
  });
});
