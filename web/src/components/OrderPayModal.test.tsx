import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Order } from '@console/contract';
import { callsTo, json } from '../test/http';
import { renderWithProviders } from '../test/render';
import { user } from '../test/fixtures/user';
import { costServer, order, voucher } from '../test/fixtures/cost';
import { session } from '../session/store';
import { OrderPayModal } from './OrderPayModal';

const PAY = '/order/api/v2.1/tiio/resource/O20261123085616aaaa0001/pay';
const DETAIL = '/order/api/v2.1/tiio/resource/O20261123085616aaaa0001';
const hundredYuan = order({ amount: '1000000', description: '大模型 Token 包 1000 万 × 2（¥100.00）' });

function renderModal(o: Order, voucherId?: string) {
  const onClose = vi.fn();
  const onPaid = vi.fn();
  const onSettled = vi.fn();
  renderWithProviders(<OrderPayModal order={o} onClose={onClose} onPaid={onPaid} onSettled={onSettled} voucherId={voucherId} />);
  return { onClose, onPaid, onSettled };
}

const dialogWith = async (text: string) => (await screen.findAllByRole('dialog')).find((d) => d.textContent?.includes(text))!;

beforeEach(() => {
  session.setLogin('tok', user);
  // jsdom has no canvas: the QR code draws nothing, which is all these tests need.
  vi.spyOn(HTMLCanvasElement.prototype, 'getContext').mockReturnValue(null);
});
afterEach(() => vi.unstubAllGlobals());

describe('the order pay dialog', () => {
  it('pays from the balance with a voucher after confirming the amount, then shows the parts paid', async () => {
    let paid = false;
    const fetch = costServer((url, init) => {
      if (url.pathname === PAY && init?.method === 'POST') {
        paid = true;
        return json(200, { orderUid: hundredYuan.orderUid, status: 'Success', payment: null });
      }
      if (url.pathname === DETAIL && paid) {
        return json(200, {
          ...hundredYuan,
          status: 'Success',
          payMethod: 'Balance',
          voucherDeduction: '500000',
          paid: [
            { source: 'voucher', amount: '500000' },
            { source: 'gift', amount: '500000' },
          ],
        });
      }
      return undefined;
    });
    const { onPaid } = renderModal(hundredYuan);

    expect(await screen.findByText('可用余额 ¥600.00（现金 ¥500.00 + 赠送金 ¥100.00）')).toBeTruthy();
    expect(callsTo(fetch, '/order/api/v2.1/vouchers')[0]!.url.searchParams.get('category')).toBe('Ai');
    fireEvent.mouseDown(screen.getByRole('combobox', { name: '代金券' }));
    fireEvent.click(await screen.findByText('新用户专享代金券 · ¥50.00（无门槛，2099-01-31 到期）'));
    expect(await screen.findByText('-¥50.00')).toBeTruthy();
    expect(screen.getByTestId('pay-due').textContent).toBe('¥50.00');

    fireEvent.click(screen.getByRole('button', { name: '余额支付 ¥50.00' }));
    const confirm = await dialogWith('确认支付 ¥50.00');
    expect(confirm.textContent).toContain('代金券抵扣 ¥50.00，其余 ¥50.00 从账户余额扣除');
    expect(callsTo(fetch, PAY, 'POST')).toHaveLength(0); // nothing is paid before the confirmation
    fireEvent.click(within(confirm).getByRole('button', { name: '确认支付' }));

    expect(await screen.findByText('支付成功')).toBeTruthy();
    expect(callsTo(fetch, PAY, 'POST').map((c) => c.body)).toEqual([{ method: 'Balance', voucherId: voucher.id }]);
    expect(await screen.findByText('代金券 ¥50.00，赠送金 ¥50.00')).toBeTruthy();
    expect(onPaid).toHaveBeenCalledWith(hundredYuan.orderUid);
  });

  it('says how much is missing and offers 去充值 when the balance is short', async () => {
    costServer((url) =>
      url.pathname === '/billing/api/v1/user/money' ? json(200, { cash: '100000', gift: '0', voucher: '0', deposit: '0', available: '100000' }) : undefined,
    );
    renderModal(hundredYuan);
    expect(await screen.findByText('余额不足，还差 ¥90.00')).toBeTruthy();
    const link = screen.getByRole('link', { name: '去充值' });
    expect(link.getAttribute('href')).toBe('/console/recharge');
    expect((screen.getByRole('button', { name: '余额支付 ¥100.00' }) as HTMLButtonElement).disabled).toBe(true);

    // A QR payment does not need the balance.
    fireEvent.click(screen.getByText('支付宝'));
    await waitFor(() => expect(screen.queryByText('余额不足，还差 ¥90.00')).toBeNull());
    expect((screen.getByRole('button', { name: '支付宝扫码支付 ¥100.00' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('shows the QR code and polls the order until it is completed', async () => {
    const qr = {
      method: 'Alipay',
      amount: '1000000',
      qrContent: 'http://127.0.0.1:8097/dev/pay/sandbox/P20261123085616abcd',
      expiresAt: hundredYuan.expiresAt,
      status: 'Pending',
    };
    let polls = 0;
    let posted = false;
    const fetch = costServer((url, init) => {
      if (url.pathname !== PAY) return undefined;
      if (init?.method === 'POST') {
        posted = true;
        return json(200, { orderUid: hundredYuan.orderUid, status: 'Unpaid', payment: qr });
      }
      if (!posted) return json(200, { orderUid: hundredYuan.orderUid, status: 'Unpaid', payment: null });
      polls += 1;
      return polls < 2
        ? json(200, { orderUid: hundredYuan.orderUid, status: 'Unpaid', payment: qr })
        : json(200, { orderUid: hundredYuan.orderUid, status: 'Success', payment: { ...qr, status: 'Succeeded', qrContent: '' } });
    });
    renderModal(hundredYuan);
    fireEvent.click(await screen.findByText('支付宝'));
    fireEvent.click(screen.getByRole('button', { name: '支付宝扫码支付 ¥100.00' }));

    expect(await screen.findByLabelText('支付二维码')).toBeTruthy();
    expect(screen.getByRole('link', { name: '打开沙箱支付页' }).getAttribute('href')).toBe(qr.qrContent);
    expect(screen.getByText(/请用支付宝扫码支付，1[45] 分 \d\d 秒内有效/)).toBeTruthy();
    expect(callsTo(fetch, PAY, 'POST').map((c) => c.body)).toEqual([{ method: 'Alipay', voucherId: null }]);

    expect(await screen.findByText('支付成功', undefined, { timeout: 8000 })).toBeTruthy();
    expect(polls).toBeGreaterThanOrEqual(2);
    const before = polls;
    await new Promise((r) => setTimeout(r, 2500));
    expect(polls).toBe(before); // a finished order is not polled any more
  });

  it('picks up a QR code opened earlier, and can switch back to another method', async () => {
    const qr = { method: 'Wechat', amount: '1000000', qrContent: 'weixin://wxpay/bizpayurl?pr=abc', expiresAt: hundredYuan.expiresAt, status: 'Pending' };
    costServer((url, init) =>
      url.pathname === PAY && init?.method !== 'POST' ? json(200, { orderUid: hundredYuan.orderUid, status: 'Unpaid', payment: qr }) : undefined,
    );
    renderModal(hundredYuan);
    expect(await screen.findByText(/请用微信扫码支付/)).toBeTruthy();
    expect(screen.queryByText('打开沙箱支付页')).toBeNull(); // a real gateway's QR has no sandbox link
    fireEvent.click(screen.getByRole('button', { name: '更换支付方式' }));
    expect(await screen.findByRole('button', { name: '余额支付 ¥100.00' })).toBeTruthy();
  });

  it('explains a refund with the reason from the order', async () => {
    costServer((url, init) => {
      if (url.pathname === PAY && init?.method === 'POST') return json(200, { orderUid: hundredYuan.orderUid, status: 'Refunded', payment: null });
      if (url.pathname === DETAIL) return json(200, { ...hundredYuan, status: 'Refunded', failReason: '资源包已下架' });
      return undefined;
    });
    renderModal(hundredYuan);
    fireEvent.click(await screen.findByRole('button', { name: '余额支付 ¥100.00' }));
    fireEvent.click(within(await dialogWith('确认支付 ¥100.00')).getByRole('button', { name: '确认支付' }));
    expect(await screen.findByText('订单处理失败，款项已原路退回')).toBeTruthy();
    expect(await screen.findByText(/原因：资源包已下架/)).toBeTruthy();
  });

  it('cancels the order after a confirmation', async () => {
    const fetch = costServer((url, init) =>
      url.pathname === `${DETAIL}/cancel` && init?.method === 'POST' ? json(200, { ...hundredYuan, status: 'Cancelled' }) : undefined,
    );
    const { onClose, onSettled } = renderModal(hundredYuan);
    fireEvent.click(await screen.findByRole('button', { name: '取消订单' }));
    const confirm = await dialogWith('确认取消订单？');
    expect(callsTo(fetch, `${DETAIL}/cancel`, 'POST')).toHaveLength(0);
    fireEvent.click(within(confirm).getByRole('button', { name: '取消订单' }));
    await waitFor(() => expect(onClose).toHaveBeenCalled());
    expect(onSettled).toHaveBeenCalledWith('Cancelled');
    expect(callsTo(fetch, `${DETAIL}/cancel`, 'POST')).toHaveLength(1);
  });

  it('keeps the chosen voucher on the order: after a refresh the dialog shows it selected, with the same amounts', async () => {
    const VOUCHER = `${DETAIL}/voucher`;
    const fetch = costServer();
    renderModal(hundredYuan);
    fireEvent.mouseDown(await screen.findByRole('combobox', { name: '代金券' }));
    fireEvent.click(await screen.findByText('新用户专享代金券 · ¥50.00（无门槛，2099-01-31 到期）'));
    await waitFor(() => expect(callsTo(fetch, VOUCHER, 'PUT').map((c) => c.body)).toEqual([{ voucherId: voucher.id }]));
    expect(screen.getByTestId('pay-due').textContent).toBe('¥50.00');
    cleanup();

    // The page reloads: the order comes back from the server with its voucher.
    const again = costServer();
    renderModal({ ...hundredYuan, voucherId: voucher.id, voucherDeduction: '500000' });
    await waitFor(() => expect(screen.getByTestId('pay-due').textContent).toBe('¥50.00'));
    expect(screen.getByText('-¥50.00')).toBeTruthy();
    expect(screen.getByTitle('新用户专享代金券 · ¥50.00（无门槛，2099-01-31 到期）')).toBeTruthy();
    expect(callsTo(again, VOUCHER, 'PUT')).toHaveLength(0); // nothing to save: the order has it already
    expect((screen.getByRole('button', { name: '余额支付 ¥50.00' }) as HTMLButtonElement).disabled).toBe(false);

    // Taken off in the dialog: taken off the order too, and the payment names no voucher.
    fireEvent.mouseDown(screen.getByRole('combobox', { name: '代金券' }));
    fireEvent.click(document.querySelector('.ant-select-clear')!);
    await waitFor(() => expect(callsTo(again, VOUCHER, 'PUT').map((c) => c.body)).toEqual([{ voucherId: null }]));
    expect(screen.getByTestId('pay-due').textContent).toBe('¥100.00');
  });

  it('says before paying that the rest of a voucher larger than the order is lost', async () => {
    costServer();
    renderModal(order({ amount: '451400', description: '大模型 Token 包（¥45.14）' }), voucher.id);
    expect(await screen.findByText('代金券面额 ¥50.00 大于订单金额，剩余 ¥4.86 将作废')).toBeTruthy();
    expect(screen.getByTestId('pay-due').textContent).toBe('¥0.00');
    fireEvent.click(await screen.findByRole('button', { name: '余额支付 ¥0.00' }));
    expect((await dialogWith('确认支付 ¥0.00')).textContent).toContain('代金券剩余 ¥4.86 将作废');
    cleanup();

    // A voucher no larger than the order: no warning.
    costServer();
    renderModal(hundredYuan, voucher.id);
    await waitFor(() => expect(screen.getByTestId('pay-due').textContent).toBe('¥50.00'));
    expect(screen.queryByText(/将作废/)).toBeNull();
  });

  it('starts with a voucher handed in from the purchase page, and leaves out one the order cannot use', async () => {
    costServer();
    renderModal(hundredYuan, voucher.id);
    await waitFor(() => expect(screen.getByTestId('pay-due').textContent).toBe('¥50.00'));
    expect(screen.getByText('-¥50.00')).toBeTruthy();
    cleanup();

    costServer((url) => (url.pathname === '/order/api/v2.1/vouchers' ? json(200, { items: [{ ...voucher, minSpend: '2000000' }] }) : undefined));
    renderModal(hundredYuan, voucher.id);
    await waitFor(() => expect(screen.getByTestId('pay-due').textContent).toBe('¥100.00'));
    expect(screen.queryByText('-¥50.00')).toBeNull();
  });
});
