import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen } from '@testing-library/react';
import { session } from '../../session/store';
import { callsTo, costServer, json, user } from '../cost/cost.fixtures';
import { renderApp } from '../stats/catalogue.fixtures';

const uid = 'O20261123085616aaaa0001';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the finance page', () => {
  it('shows cash and gift movements with Chinese labels, signs and the honest invoice notice', async () => {
    const fetch = costServer((url) => {
      if (url.pathname !== '/billing/api/v1/user/statement') return undefined;
      const items =
        url.searchParams.get('kind') === 'gift'
          ? [{ id: 3, amount: '-200000', balanceAfter: '700000', kind: 'order', memo: '大模型 Token 包', orderId: uid, createdAt: '2026-11-23T08:57:00.000Z' }]
          : [{ id: 1, amount: '5000000', balanceAfter: '5000000', kind: 'gateway_in', memo: '支付宝到账', orderId: null, createdAt: '2026-11-23T08:56:00.000Z' }];
      return json(200, { items, total: 1, page: 1, pageSize: 10 });
    });
    renderApp('/finance');
    expect(await screen.findByText('充值到账')).toBeTruthy();
    expect(screen.getByText('+500.00')).toBeTruthy();
    expect(screen.getByText('发票申请功能即将开放，如需发票请联系客服')).toBeTruthy();
    expect(screen.getByText('联系客服').closest('a')?.getAttribute('href')).toBe('https://work.weixin.qq.com/kfid/x');

    screen.getByText('赠送金', { selector: '.ant-segmented-item-label' }).click();
    expect(await screen.findByText('订单支付')).toBeTruthy();
    expect(screen.getByText('-20.00')).toBeTruthy();
    expect(screen.getByText(`订单 ${uid}`).closest('a')!.getAttribute('href')).toBe(`/console/cost/bill/server-details/${uid}`);
    expect(callsTo(fetch, '/billing/api/v1/user/statement').map((c) => c.url.searchParams.get('kind'))).toEqual(['cash', 'gift']);
  });
});
