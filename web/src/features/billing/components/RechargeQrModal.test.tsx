import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import type { Recharge } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderWithProviders } from '../../../test/render';
import { costServer } from '../../../test/fixtures/cost';
import { user } from '../../../test/fixtures/user';
import { RechargeQrModal } from './RechargeQrModal';

const ID = '5c0b6f7e-1d2a-4e3b-8c4d-5e6f7a8b9c0d';
const ONE = `/billing/api/v1/recharge/${ID}`;
const recharge: Recharge = {
  id: ID,
  amount: '1000000',
  bonus: '180000',
  method: 'Alipay',
  status: 'Unpaid',
  outTradeNo: 'R20261123085616abcd',
  qrContent: 'http://127.0.0.1:8097/dev/pay/sandbox/R20261123085616abcd',
  expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
  paidAt: null,
  createdAt: '2026-11-23T08:56:16.000Z',
};

beforeEach(() => {
  session.setLogin('tok', user);
  // jsdom has no canvas: the QR code draws nothing, which is all these tests need.
  vi.spyOn(HTMLCanvasElement.prototype, 'getContext').mockReturnValue(null);
});
afterEach(() => vi.unstubAllGlobals());

describe('the recharge QR dialog', () => {
  it('shows the code with its amount and time left, and polls until the money has arrived', async () => {
    let polls = 0;
    const fetch = costServer((url) => {
      if (url.pathname !== ONE) return undefined;
      polls += 1;
      return json(200, polls < 2 ? recharge : { ...recharge, status: 'Paid', paidAt: '2026-11-23T08:57:00.000Z' });
    });
    renderWithProviders(<RechargeQrModal recharge={recharge} onClose={vi.fn()} />);

    expect(screen.getByText('支付宝扫码支付')).toBeTruthy();
    expect(screen.getByLabelText('支付二维码')).toBeTruthy();
    expect(screen.getByText('¥100.00')).toBeTruthy();
    expect(screen.getByText(/请用支付宝扫码充值，1[45] 分 \d\d 秒内有效/)).toBeTruthy();
    expect(screen.getByRole('link', { name: '打开沙箱支付页' }).getAttribute('href')).toBe(recharge.qrContent);

    expect(await screen.findByText('充值成功', undefined, { timeout: 8000 })).toBeTruthy();
    expect(screen.getByText('现金 +¥100.00，赠送金 +¥18.00')).toBeTruthy();
    const before = callsTo(fetch, ONE).length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(callsTo(fetch, ONE)).toHaveLength(before); // a paid recharge is not polled any more
  });

  it('cancels the payment and says so', async () => {
    let cancelled = false;
    const fetch = costServer((url, init) => {
      if (url.pathname === `${ONE}/cancel` && init?.method === 'POST') {
        cancelled = true;
        return json(200, { ...recharge, status: 'Cancelled' });
      }
      return url.pathname === ONE ? json(200, cancelled ? { ...recharge, status: 'Cancelled' } : recharge) : undefined;
    });
    renderWithProviders(<RechargeQrModal recharge={recharge} onClose={vi.fn()} />);
    fireEvent.click(screen.getByRole('button', { name: '取消支付' }));
    expect(await screen.findByText('已取消支付')).toBeTruthy();
    await waitFor(() => expect(callsTo(fetch, `${ONE}/cancel`, 'POST')).toHaveLength(1));
  });

  it('says the code has expired once its time is up', () => {
    costServer();
    renderWithProviders(<RechargeQrModal recharge={{ ...recharge, expiresAt: new Date(Date.now() - 1000).toISOString() }} onClose={vi.fn()} />);
    expect(screen.getByText('二维码已过期')).toBeTruthy();
    expect(screen.queryByLabelText('支付二维码')).toBeNull();
  });
});
