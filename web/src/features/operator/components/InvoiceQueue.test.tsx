import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';
import type { OperatorInvoice } from '@console/contract';

const operator = { ...user, id: 'op1', mobile: '13800000000', isOperator: true };
const INVOICES = '/api/v1/operator/invoices';
const ID = '7d0c5a52-3f0e-4d59-9d7a-8c2a1f1b2c3d';
const ISSUE = `${INVOICES}/${ID}/issue`;
const REJECT = `${INVOICES}/${ID}/reject`;

const request: OperatorInvoice = {
  id: ID,
  userId: 'u9',
  mobile: '13900139000',
  kind: 'special',
  titleType: 'enterprise',
  title: '北京算力科技有限公司',
  taxNo: '91350100M000100Y43',
  email: 'finance@example.com',
  amount: '1234500',
  status: 'Pending',
  invoiceNo: null,
  rejectReason: null,
  createdAt: '2026-11-23T06:30:00.000Z',
  closedAt: null,
};
const issued: OperatorInvoice = {
  ...request,
  id: 'i2',
  title: '张三',
  titleType: 'personal',
  kind: 'normal',
  taxNo: '',
  status: 'Issued',
  invoiceNo: '25110000000012345678',
};
const rejected: OperatorInvoice = { ...request, id: 'i3', status: 'Rejected', rejectReason: '抬头与税号不一致' };

/** The operator's invoice endpoints over a queue that a decision really changes. */
function invoiceServer(respond?: () => Response) {
  const rows = [request, issued, rejected];
  return costServer((url, init) => {
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, operator);
    if (url.pathname === INVOICES) {
      const status = url.searchParams.get('status');
      const items = rows.filter((r) => !status || r.status === status);
      return json(200, { items, total: items.length, page: Number(url.searchParams.get('page')), pageSize: Number(url.searchParams.get('pageSize')) });
    }
    if ((url.pathname === ISSUE || url.pathname === REJECT) && init?.method === 'POST') {
      if (respond) return respond();
      const body = JSON.parse(String(init.body)) as { invoiceNo?: string; reason?: string };
      rows[0] = body.invoiceNo
        ? { ...request, status: 'Issued', invoiceNo: body.invoiceNo }
        : { ...request, status: 'Rejected', rejectReason: body.reason ?? '' };
      return json(200, rows[0]);
    }
    return undefined;
  });
}

const listQueries = (fetch: ReturnType<typeof invoiceServer>) => callsTo(fetch, INVOICES).map((c) => Object.fromEntries(c.url.searchParams));

/** The row of the pending request. */
async function pendingRow() {
  return (await screen.findByText('北京算力科技有限公司', undefined, { timeout: 10_000 })).closest<HTMLElement>('tr')!;
}

async function openModal(action: RegExp, ok: string) {
  fireEvent.click(within(await pendingRow()).getByText(action));
  return (await screen.findByText(ok)).closest<HTMLElement>('.ant-modal')!;
}

/** jsdom never ends antd's leave motion: a closing dialog is one that has started it. */
const closed = (modal: HTMLElement) => waitFor(() => expect(modal.className).toContain('ant-zoom-leave'));
const settle = () => act(async () => new Promise((r) => setTimeout(r, 50)));

beforeEach(() => session.setLogin('tok', operator));
afterEach(() => vi.unstubAllGlobals());

describe('the operator invoice tab', () => {
  it('lists the pending requests with their title, tax number, amount in yuan and e-mail; 全部 shows the outcomes', async () => {
    const fetch = invoiceServer();
    const router = renderApp('/operator?tab=invoices');
    const row = await pendingRow();
    expect(within(row).getByText(/^2026-11-23 \d\d:30$/)).toBeTruthy();
    expect(within(row).getByText('13900139000')).toBeTruthy();
    expect(within(row).getByText('增值税专用发票')).toBeTruthy();
    expect(within(row).getByText('企业')).toBeTruthy();
    expect(within(row).getByText('91350100M000100Y43')).toBeTruthy();
    expect(within(row).getByText('123.45')).toBeTruthy();
    expect(within(row).getByText('finance@example.com')).toBeTruthy();
    expect(within(row).getByText('待开票')).toBeTruthy();
    expect(listQueries(fetch)).toEqual([{ status: 'Pending', page: '1', pageSize: '10' }]);
    expect(screen.queryByText('25110000000012345678')).toBeNull();

    fireEvent.click(screen.getByText('全部'));
    await waitFor(() => expect(listQueries(fetch).at(-1)).toEqual({ page: '1', pageSize: '10' }));
    expect(router.state.location.search).toBe('?tab=invoices&status=all');
    const issuedRow = (await screen.findByText('25110000000012345678')).closest<HTMLElement>('tr')!;
    expect(within(issuedRow).getByText('已开票')).toBeTruthy();
    expect(within(issuedRow).getByText('个人')).toBeTruthy();
    const rejectedRow = screen.getByText('抬头与税号不一致').closest<HTMLElement>('tr')!;
    expect(within(rejectedRow).getByText('已驳回')).toBeTruthy();
    // Only a pending request can be decided.
    expect(within(issuedRow).queryByText(/^开\s*票$/)).toBeNull();
  });

  it('issues only with a valid invoice number, then reloads the queue', async () => {
    const fetch = invoiceServer();
    renderApp('/operator?tab=invoices');
    const modal = await openModal(/^开\s*票$/, '确认开票');
    expect(within(modal).getByText('finance@example.com')).toBeTruthy();
    const confirm = () => fireEvent.click(within(modal).getByText('确认开票'));

    confirm();
    expect(await within(modal).findByText('请输入发票号码')).toBeTruthy();
    fireEvent.change(within(modal).getByLabelText('发票号码'), { target: { value: '123#' } });
    expect(await within(modal).findByText('发票号码须为 8-32 位字母、数字或连字符')).toBeTruthy();
    confirm();
    await settle();
    expect(callsTo(fetch, ISSUE, 'POST')).toEqual([]);

    const before = listQueries(fetch).length;
    fireEvent.change(within(modal).getByLabelText('发票号码'), { target: { value: ' 25110000000099990001 ' } });
    confirm();
    await waitFor(() => expect(callsTo(fetch, ISSUE, 'POST').map((c) => c.body)).toEqual([{ invoiceNo: '25110000000099990001' }]));
    await waitFor(() => expect(listQueries(fetch).length).toBeGreaterThan(before));
    expect(await screen.findByText('暂无待开票的申请')).toBeTruthy();
    await closed(modal);
  });

  it('rejects only with a reason of 2-200 characters', async () => {
    const fetch = invoiceServer();
    renderApp('/operator?tab=invoices');
    const modal = await openModal(/^驳\s*回$/, '确认驳回');
    const confirm = () => fireEvent.click(within(modal).getByText('确认驳回'));

    confirm();
    expect(await within(modal).findByText('请填写驳回原因')).toBeTruthy();
    fireEvent.change(within(modal).getByLabelText('驳回原因'), { target: { value: ' 错 ' } });
    expect(await within(modal).findByText('驳回原因至少 2 个字')).toBeTruthy();
    confirm();
    await settle();
    expect(callsTo(fetch, REJECT, 'POST')).toEqual([]);

    fireEvent.change(within(modal).getByLabelText('驳回原因'), { target: { value: '抬头与纳税人识别号不一致 ' } });
    confirm();
    await waitFor(() => expect(callsTo(fetch, REJECT, 'POST').map((c) => c.body)).toEqual([{ reason: '抬头与纳税人识别号不一致' }]));
    expect(await screen.findByText('暂无待开票的申请')).toBeTruthy();
  });

  it('closes the dialog when the request was decided or withdrawn meanwhile', async () => {
    const fetch = invoiceServer(() => json(409, { code: 40922001, message: '该发票申请已处理，不能再进行此操作，请刷新后查看', detail: '当前状态：已取消' }));
    renderApp('/operator?tab=invoices');
    const modal = await openModal(/^开\s*票$/, '确认开票');
    fireEvent.change(within(modal).getByLabelText('发票号码'), { target: { value: 'FP-20261123' } });
    const before = listQueries(fetch).length;
    fireEvent.click(within(modal).getByText('确认开票'));
    await closed(modal);
    await waitFor(() => expect(listQueries(fetch).length).toBeGreaterThan(before));
  });
});
