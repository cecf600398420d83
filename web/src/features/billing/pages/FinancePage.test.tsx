import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const uid = 'O20261123085616aaaa0001';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the finance page', () => {
  it('shows cash and gift movements with Chinese labels and signs', async () => {
    const fetch = costServer((url) => {
      if (url.pathname !== '/billing/api/v1/user/statement') return undefined;
      const items =
        url.searchParams.get('kind') === 'gift'
          ? [{ id: 3, amount: '-200000', balanceAfter: '700000', kind: 'order', memo: '大模型 Token 包', orderId: uid, createdAt: '2026-11-23T08:57:00.000Z' }]
          : [
              {
                id: 1,
                amount: '5000000',
                balanceAfter: '5000000',
                kind: 'gateway_in',
                memo: '支付宝到账',
                orderId: null,
                createdAt: '2026-11-23T08:56:00.000Z',
              },
            ];
      return json(200, { items, total: 1, page: 1, pageSize: 10 });
    });
    renderApp('/finance');
    // The first render of the file loads the page chunk: slow on a busy machine.
    expect(await screen.findByText('充值到账', undefined, { timeout: 15_000 })).toBeTruthy();
    expect(screen.getByText('+500.00')).toBeTruthy();
    expect((await screen.findByText('联系客服')).closest('a')?.getAttribute('href')).toBe('https://work.weixin.qq.com/kfid/x');

    screen.getByText('赠送金', { selector: '.ant-segmented-item-label' }).click();
    expect(await screen.findByText('订单支付')).toBeTruthy();
    expect(screen.getByText('-20.00')).toBeTruthy();
    expect(screen.getByText(`订单 ${uid}`).closest('a')!.getAttribute('href')).toBe(`/console/cost/bill/server-details/${uid}`);
    expect(callsTo(fetch, '/billing/api/v1/user/statement').map((c) => c.url.searchParams.get('kind'))).toEqual(['cash', 'gift']);
  });

  it('shows post-paid charges rolled up per instance and hour, never 0.00, each roll-up opening onto its ledger entries', async () => {
    const group = '5f0c8a52-6a3e-4f43-9d7e-1b2f3c4d5e6f@2026112317';
    const row = (over: object) => ({ orderId: null, group: null, entries: 1, periodStart: null, ...over });
    const fetch = costServer((url) => {
      if (url.pathname === '/billing/api/v1/user/statement') {
        const items = [
          row({
            id: 120,
            amount: '-18430',
            balanceAfter: '981570',
            kind: 'usage',
            memo: '训练机 按量计费',
            orderId: uid,
            createdAt: '2026-11-23T09:40:00.000Z',
            group,
            entries: 42,
            periodStart: '2026-11-23T09:00:00.000Z',
          }),
          row({ id: 70, amount: '-33', balanceAfter: '999967', kind: 'usage', memo: '推理机 按量计费', createdAt: '2026-11-23T08:31:00.000Z' }),
          row({ id: 1, amount: '1000000', balanceAfter: '1000000', kind: 'compensation', memo: '测试补偿', createdAt: '2026-11-23T08:00:00.000Z' }),
        ];
        return json(200, { items, total: 3, page: 1, pageSize: 10 });
      }
      if (url.pathname === '/billing/api/v1/user/statement/group') {
        const items = [
          row({ id: 120, amount: '-33', balanceAfter: '981570', kind: 'usage', memo: '训练机 按量计费', orderId: uid, createdAt: '2026-11-23T09:40:00.000Z' }),
          row({
            id: 95,
            amount: '-4900',
            balanceAfter: '986503',
            kind: 'usage',
            memo: '训练机 数据盘扩容 70 GB（1 天）',
            orderId: uid,
            createdAt: '2026-11-23T09:10:00.000Z',
          }),
        ];
        return json(200, { items, total: 42, page: 1, pageSize: 20 });
      }
      return undefined;
    });
    renderApp('/finance');
    expect(await screen.findByText('训练机 按量计费', undefined, { timeout: 15_000 })).toBeTruthy();
    expect(screen.getAllByText('按量计费')).toHaveLength(2); // the type column says it in Chinese, never 'usage'
    expect(screen.queryByText('usage')).toBeNull();
    expect(screen.getByText('平台补偿')).toBeTruthy();
    expect(screen.getByText('（2026-11-23 17:00–18:00，共 42 笔）')).toBeTruthy();
    expect(screen.getByText('-1.84')).toBeTruthy();
    // Under half a fen is shown to the 0.0001 yuan, not as 0.00.
    expect(screen.getByText('-0.0033')).toBeTruthy();
    expect(screen.queryByText('0.00')).toBeNull();
    expect(screen.queryByText('-0.00')).toBeNull();

    const rollUp = screen.getByText('训练机 按量计费').closest('tr')!;
    fireEvent.click(within(rollUp).getByRole('button', { name: /展开/ }));
    const entries = await screen.findByLabelText('逐笔账目');
    expect(await within(entries).findByText('训练机 数据盘扩容 70 GB（1 天）')).toBeTruthy();
    expect(within(entries).getByText('共 42 笔')).toBeTruthy();
    expect(within(entries).getByText('-0.49')).toBeTruthy();
    const asked = callsTo(fetch, '/billing/api/v1/user/statement/group')[0]!.url.searchParams;
    expect([asked.get('kind'), asked.get('group')]).toEqual(['cash', group]);
    // Single entries have nothing to open.
    expect(within(screen.getByText('测试补偿').closest('tr')!).queryByRole('button', { name: /展开/ })).toBeNull();
  });

  it('pages the statement and the invoices each on its own, both kept in the URL', async () => {
    const entry = (id: number) => ({
      id,
      amount: '10000',
      balanceAfter: '10000',
      kind: 'gateway_in',
      memo: `到账 ${id}`,
      orderId: null,
      createdAt: '2026-11-23T08:56:00.000Z',
    });
    const fetch = costServer((url) => {
      const page = Number(url.searchParams.get('page'));
      if (url.pathname === '/billing/api/v1/user/statement') return json(200, { items: [entry(page)], total: 25, page, pageSize: 10 });
      if (url.pathname === '/billing/api/v1/invoices') return json(200, { items: [], total: 25, page, pageSize: 10 });
      return undefined;
    });
    const router = renderApp('/finance?cashPage=2');
    expect(await screen.findByText('到账 2', undefined, { timeout: 15_000 })).toBeTruthy();

    const invoices = (await screen.findByText('发票', { selector: '.ant-card-head-title' })).closest<HTMLElement>('.ant-card')!;
    fireEvent.click(within(invoices).getByTitle('3'));
    await waitFor(() => expect(callsTo(fetch, '/billing/api/v1/invoices').at(-1)!.url.searchParams.get('page')).toBe('3'));
    expect(new URLSearchParams(router.state.location.search).get('invoicePage')).toBe('3');
    // The statement stays where it was.
    expect(new URLSearchParams(router.state.location.search).get('cashPage')).toBe('2');
    expect(callsTo(fetch, '/billing/api/v1/user/statement').map((c) => c.url.searchParams.get('page'))).toEqual(['2']);
  });

  describe('invoices', () => {
    const base = {
      kind: 'normal',
      titleType: 'personal',
      title: '张三',
      taxNo: '',
      email: 'z@example.com',
      closedAt: null,
      invoiceNo: null,
      rejectReason: null,
    };
    const pending = { ...base, id: '11111111-1111-4111-8111-111111111111', amount: '600000', status: 'Pending', createdAt: '2026-11-23T09:00:00.000Z' };
    const issued = {
      ...base,
      id: '22222222-2222-4222-8222-222222222222',
      kind: 'special',
      titleType: 'enterprise',
      title: '福州某某科技有限公司',
      taxNo: '91350100M000100Y43',
      amount: '1000000',
      status: 'Issued',
      invoiceNo: '25332000000012345678',
      createdAt: '2026-11-22T09:00:00.000Z',
    };
    const rejected = {
      ...base,
      id: '33333333-3333-4333-8333-333333333333',
      amount: '100000',
      status: 'Rejected',
      rejectReason: '抬头有误',
      createdAt: '2026-11-21T09:00:00.000Z',
    };
    const invoiceServer = (onPost?: (url: URL, body: unknown) => Response | undefined) =>
      costServer((url, init) => {
        if (init?.method === 'POST' && onPost) return onPost(url, init.body ? JSON.parse(String(init.body)) : undefined);
        if (url.pathname === '/billing/api/v1/invoices/invoiceable')
          return json(200, { invoiceable: '12345678', paidIn: '30000000', refunded: '0', consumed: '13945678', invoiced: '1000000', pending: '600000' });
        if (url.pathname === '/billing/api/v1/invoices') return json(200, { items: [pending, issued, rejected], total: 3, page: 1, pageSize: 10 });
        return undefined;
      });

    it('shows the invoiceable amount and the requests with their status, number and reason; withdraws a pending one after confirming', async () => {
      const fetch = invoiceServer((url) =>
        url.pathname === `/billing/api/v1/invoices/${pending.id}/cancel` ? json(200, { ...pending, status: 'Cancelled' }) : undefined,
      );
      renderApp('/finance');
      await waitFor(() => expect(document.querySelector('.invoice-summary .ant-statistic-content')!.textContent).toBe('¥1,234.56'));
      // The note under 申请开票 says what the amount follows (cash consumed, as the breakdown does), not recharges.
      expect(screen.getByText('按实际现金消费（订单与按量计费的现金支出）开具，赠送金、代金券不开票')).toBeTruthy();
      const pendingRow = (await screen.findByText('待开票')).closest('tr')!;
      expect(within(pendingRow).getByText('60.00')).toBeTruthy();
      const issuedRow = screen.getByText('已开票').closest('tr')!;
      expect(within(issuedRow).getByText('25332000000012345678')).toBeTruthy();
      expect(within(issuedRow).getByText('增值税专用发票')).toBeTruthy();
      expect(within(issuedRow).getByText('91350100M000100Y43')).toBeTruthy();
      expect(within(screen.getByText('已驳回').closest('tr')!).getByText('驳回原因：抬头有误')).toBeTruthy();
      expect(within(issuedRow).queryByText('撤回')).toBeNull();

      fireEvent.click(within(pendingRow).getByText('撤回'));
      const dialog = (await screen.findAllByText('确认撤回开票申请？'))[0]!.closest<HTMLElement>('.ant-modal')!;
      expect(within(dialog).getByText(/¥60.00/)).toBeTruthy();
      fireEvent.click(within(dialog).getByText(/^撤\s?回$/));
      await waitFor(() => expect(callsTo(fetch, `/billing/api/v1/invoices/${pending.id}/cancel`, 'POST')).toHaveLength(1));
    });

    it('requests an invoice through the form, with Chinese messages for every wrong field', async () => {
      const fetch = invoiceServer((url, body) =>
        url.pathname === '/billing/api/v1/invoices' ? json(200, { ...pending, ...(body as object), amount: '1000000' }) : undefined,
      );
      renderApp('/finance');
      const open = (await screen.findByText('申请开票')).closest('button')!;
      await waitFor(() => expect(open.disabled).toBe(false)); // enabled once the invoiceable amount is known
      fireEvent.click(open);
      const dialog = (await screen.findByText('提交申请')).closest<HTMLElement>('.ant-modal')!;
      // The amount starts at the most that may be invoiced, rounded down to the fen.
      expect((within(dialog).getByLabelText('开票金额') as HTMLInputElement).value).toBe('1234.56');
      expect(within(dialog).getByText('本次最多可开 ¥1234.56')).toBeTruthy();

      fireEvent.click(within(dialog).getByText('增值税专用发票'));
      fireEvent.change(within(dialog).getByLabelText('开票金额'), { target: { value: '2000' } });
      fireEvent.change(within(dialog).getByPlaceholderText('电子发票将发送到这个邮箱'), { target: { value: 'not-an-email' } });
      fireEvent.change(within(dialog).getByPlaceholderText('如 91350100M000100Y43'), { target: { value: '91350100M000100Y44' } });
      fireEvent.click(within(dialog).getByText('提交申请'));
      expect(await within(dialog).findByText('请输入发票抬头')).toBeTruthy();
      expect(within(dialog).getByText('请输入正确的邮箱地址')).toBeTruthy();
      expect(within(dialog).getByText(/18 位统一社会信用代码须通过校验位校验/)).toBeTruthy();
      expect(within(dialog).getByText('开票金额不能超过可开票金额 ¥1234.56')).toBeTruthy();
      expect(callsTo(fetch, '/billing/api/v1/invoices', 'POST')).toHaveLength(0);

      fireEvent.change(within(dialog).getByPlaceholderText('与营业执照上的名称一致'), { target: { value: '福州某某科技有限公司' } });
      fireEvent.change(within(dialog).getByPlaceholderText('如 91350100M000100Y43'), { target: { value: '91350100m000100y43' } });
      fireEvent.change(within(dialog).getByPlaceholderText('电子发票将发送到这个邮箱'), { target: { value: 'finance@example.com' } });
      fireEvent.change(within(dialog).getByLabelText('开票金额'), { target: { value: '100' } });
      fireEvent.click(within(dialog).getByText('提交申请'));
      await waitFor(() => expect(callsTo(fetch, '/billing/api/v1/invoices', 'POST')).toHaveLength(1));
      expect(callsTo(fetch, '/billing/api/v1/invoices', 'POST')[0]!.body).toEqual({
        kind: 'special',
        titleType: 'enterprise',
        title: '福州某某科技有限公司',
        taxNo: '91350100M000100Y43',
        email: 'finance@example.com',
        amount: '100',
      });
    });

    it('tells a child account (with 财务) that invoices are the main account’s', async () => {
      session.setLogin('tok', { ...user, isChild: true, finance: true });
      const fetch = costServer();
      renderApp('/finance');
      expect(await screen.findByText('发票由主账号申请')).toBeTruthy();
      expect(callsTo(fetch, '/billing/api/v1/invoices')).toHaveLength(0);
    });
  });
});
