import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer, order } from '../../../test/fixtures/cost';
import { formatTime } from '../../../components/orderViews';

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

  it('itemise a released post-paid instance: each run segment and the disk hours adding up to what was taken; 完成时间 is the release', async () => {
    const usage = order({
      kind: 'Personal',
      type: 'Usage',
      category: 'Gpu',
      status: 'Success',
      description: 'RTX 4090 × 1 · 按量计费',
      amount: '4678',
      payMethod: 'Balance',
      paid: [{ source: 'cash', amount: '4678' }],
      quote: {
        lines: [{ kind: 'compute', name: 'RTX 4090 × 1（1 小时）', unitPrice: '19800', quantity: 1, amount: '19800' }],
        listTotal: '19800',
        discountTotal: '0',
        voucherDeduction: '0',
        total: '19800',
      },
      paidAt: '2026-11-23T08:01:00.000Z',
      fulfilledAt: '2026-11-23T09:40:05.000Z',
    });
    const line = (over: object) => ({ resource: '训练机', seconds: null, rate: null, rateUnit: null, start: null, end: null, charges: 1, ...over });
    const bill = {
      orderUid: uid,
      billing: false,
      total: '4678',
      lines: [
        line({
          kind: 'dataDisk',
          label: '数据盘扩容',
          detail: '70 GB × 2 小时',
          start: '2026-11-23T08:00:07.000Z',
          end: '2026-11-23T10:00:07.000Z',
          seconds: 7200,
          rate: '4900',
          rateUnit: '天',
          amount: '408',
          charges: 2,
        }),
        line({
          kind: 'gpu',
          label: 'GPU 运行',
          detail: 'RTX 4090 × 1',
          start: '2026-11-23T08:00:07.000Z',
          end: '2026-11-23T08:12:20.000Z',
          seconds: 733,
          rate: '19800',
          rateUnit: '小时',
          amount: '4032',
          charges: 3,
        }),
        line({
          kind: 'noCard',
          label: '无卡模式运行',
          detail: '无卡模式（不占用 GPU）',
          start: '2026-11-23T08:12:25.000Z',
          end: '2026-11-23T08:43:32.000Z',
          seconds: 1867,
          rate: '1000',
          rateUnit: '小时',
          amount: '231',
          charges: 2,
        }),
        line({
          kind: 'gpu',
          label: 'GPU 运行',
          detail: 'RTX 4090 × 1',
          start: '2026-11-23T08:43:40.000Z',
          end: '2026-11-23T08:44:05.000Z',
          seconds: 25,
          rate: '19800',
          rateUnit: '小时',
          amount: '7',
          charges: 1,
        }),
      ],
    };
    costServer((url) => {
      if (url.pathname === `/order/api/v2.1/gpu/order/${uid}`) return json(200, usage);
      if (url.pathname === `/order/api/v2.1/gpu/order/${uid}/usage`) return json(200, bill);
      return undefined;
    });
    renderApp(`/console/cost/bill/server-details/${uid}?kind=Personal`);

    expect((await screen.findByTestId('usage-total')).textContent).toBe('¥0.4678');
    const text = (await screen.findAllByRole('row')).map((r) => r.textContent);
    expect(
      text.some(
        (t) =>
          t?.includes('GPU 运行（训练机）') && t.includes('RTX 4090 × 1') && t.includes('12 分 13 秒') && t.includes('¥1.98/小时') && t.includes('¥0.4032'),
      ),
    ).toBe(true);
    expect(text.some((t) => t?.includes('无卡模式运行') && t.includes('31 分 7 秒') && t.includes('¥0.10/小时') && t.includes('¥0.0231'))).toBe(true);
    // Under a minute reads "25 秒", not "0 分 25 秒".
    expect(text.some((t) => t?.includes('GPU 运行（训练机）') && t.includes('25 秒') && !t.includes('0 分') && t.includes('¥0.0007'))).toBe(true);
    expect(
      text.some(
        (t) => t?.includes('数据盘扩容') && t.includes('70 GB × 2 小时') && t.includes('2 小时 0 分 0 秒') && t.includes('¥0.49/天') && t.includes('¥0.0408'),
      ),
    ).toBe(true);
    // The one-hour quote is not shown as if it were the charge.
    expect(screen.queryByText('RTX 4090 × 1（1 小时）')).toBeNull();
    const done = screen.getByText('完成时间（释放）').closest<HTMLElement>('.ant-descriptions-item')!;
    expect(within(done).getByText(formatTime('2026-11-23T09:40:05.000Z'))).toBeTruthy();
  });

  it('name a GPU-hour package order GPU 时长包, not 模型资源包', async () => {
    const hours = order({
      packageKind: 'gpuHours',
      description: 'RTX 4090 时长包 100 小时 × 1（¥168.00）',
      quote: {
        lines: [{ kind: 'compute', name: 'RTX 4090 时长包 100 小时 × 1', unitPrice: '1680000', quantity: 1, amount: '1680000' }],
        listTotal: '1680000',
        discountTotal: '0',
        voucherDeduction: '0',
        total: '1680000',
      },
    });
    costServer((url) => (url.pathname === `/order/api/v2.1/tiio/resource/${uid}` ? json(200, hours) : undefined));
    renderApp(`/console/cost/bill/model-details/${uid}`);
    expect(await screen.findByText('GPU 时长包')).toBeTruthy();
    expect(screen.queryByText('模型资源包')).toBeNull();
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
