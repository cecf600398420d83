import { beforeEach, describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Child } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const perms = { createGPUInstance: true, createImageAPP: false, openYunBucket: false, gpu: true, app: false, image: false, usingLLM: false, finance: false };
const base = { remark: '', disabled: false, permissions: perms, createdAt: '2026-11-23T08:00:00Z', lastLoginAt: null };
const trainer: Child = {
  ...base,
  id: '5f0c7a5e-1111-4a6b-8c7d-0e1f2a3b4c5d',
  childName: 'trainer',
  spendLimit: { amount: '5000000', period: 'Month' },
  spent: { month: '1205000', total: '3000000' },
};
const spender: Child = {
  ...base,
  id: '5f0c7a5e-2222-4a6b-8c7d-0e1f2a3b4c5d',
  childName: 'spender',
  spendLimit: { amount: '1000000', period: 'Total' },
  spent: { month: '0', total: '1000000' },
};

function server() {
  let children = [trainer, spender];
  return costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === '/userapi/api/v2.1/children') return json(200, { items: children, total: children.length, page: 1, pageSize: 10 });
    const id = /^\/userapi\/api\/v2\.1\/children\/([^/]+)$/.exec(url.pathname)?.[1];
    if (id && method === 'PUT') {
      const body = JSON.parse(String(init!.body)) as Partial<Child>;
      children = children.map((c) => (c.id === id ? { ...c, ...body, permissions: { ...c.permissions, ...body.permissions } } : c));
      return json(
        200,
        children.find((c) => c.id === id),
      );
    }
    return undefined;
  });
}
const rowOf = async (name: string) => (await screen.findByText(name)).closest('tr')!;
const dialog = async () => (await screen.findByText(/^修改子账号/, { selector: '.ant-modal-title' })).closest<HTMLElement>('.ant-modal')!;
const save = (d: HTMLElement) => fireEvent.click(within(d).getByRole('button', { name: /保\s*存/ }));

beforeEach(() => {
  session.reload();
  session.setLogin('tok', user);
});

describe('子账号 tab: spending limits', () => {
  it('shows each child’s limit and what it spent this month and in total', async () => {
    server();
    renderApp('/console/account?tab=children');
    const row = await rowOf('trainer');
    expect(within(row).getByText('每月 ¥500.00')).toBeTruthy();
    expect(within(row).getByText('本月已用 ¥120.50 · 累计 ¥300.00')).toBeTruthy();
    expect(within(row).queryByText('额度已用完')).toBeNull();
    const spent = await rowOf('spender');
    expect(within(spent).getByText('累计 ¥100.00')).toBeTruthy();
    expect(within(spent).getByText('额度已用完')).toBeTruthy();
  });

  it('sets a total limit in yuan, refusing an amount that is not one, and takes it off again', async () => {
    const fetch = server();
    renderApp('/console/account?tab=children');
    fireEvent.click(within(await rowOf('trainer')).getByText('修改权限与额度'));
    let d = await dialog();
    expect((within(d).getByLabelText('额度（元）') as HTMLInputElement).value).toBe('500.00');
    fireEvent.click(within(d).getByLabelText('累计'));
    fireEvent.change(within(d).getByLabelText('额度（元）'), { target: { value: '88.888' } });
    save(d);
    expect(await within(d).findByText('额度须为金额，最多两位小数')).toBeTruthy();
    expect(callsTo(fetch, `/userapi/api/v2.1/children/${trainer.id}`, 'PUT')).toHaveLength(0);

    fireEvent.change(within(d).getByLabelText('额度（元）'), { target: { value: '88.8' } });
    save(d);
    await waitFor(() => expect(callsTo(fetch, `/userapi/api/v2.1/children/${trainer.id}`, 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, `/userapi/api/v2.1/children/${trainer.id}`, 'PUT')[0]!.body).toMatchObject({ spendLimit: { amount: '888000', period: 'Total' } });
    expect(await within(await rowOf('trainer')).findByText('累计 ¥88.80')).toBeTruthy();
    expect(await screen.findByText('子账号 trainer 已保存')).toBeTruthy();
    await waitFor(() => expect(screen.queryByText(/^修改子账号/, { selector: '.ant-modal-title' })).toBeNull());

    fireEvent.click(within(await rowOf('trainer')).getByText('修改权限与额度'));
    d = await dialog();
    fireEvent.click(within(d).getByLabelText('不限'));
    await waitFor(() => expect(within(d).queryByLabelText('额度（元）')).toBeNull());
    save(d);
    await waitFor(() => expect(callsTo(fetch, `/userapi/api/v2.1/children/${trainer.id}`, 'PUT')).toHaveLength(2));
    expect(callsTo(fetch, `/userapi/api/v2.1/children/${trainer.id}`, 'PUT')[1]!.body).toMatchObject({ spendLimit: null });
  });

  it('offers the 财务 permission', async () => {
    server();
    renderApp('/console/account?tab=children');
    fireEvent.click(within(await rowOf('trainer')).getByText('修改权限与额度'));
    const d = await dialog();
    expect(within(d).getByLabelText('财务：查看余额、充值记录、全部账单与操作日志')).toBeTruthy();
  });
});
