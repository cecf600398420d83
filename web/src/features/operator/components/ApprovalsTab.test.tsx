import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { MoneyRequest, OperatorMe } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const operator = { ...user, id: 'fin1', mobile: '13800000001', isOperator: true };
const ME = '/api/v1/operator/me';
const REQUESTS = '/api/v1/operator/money-requests';

const request = (over: Partial<MoneyRequest>): MoneyRequest => ({
  id: 'r1',
  direction: 'credit',
  userId: 'u9',
  mobile: '13900139000',
  to: 'cash',
  amount: '20000000',
  reason: '大客户年度返利',
  status: 'pending',
  requestedBy: '13800000002',
  requestedById: 'sup1',
  decidedBy: null,
  decisionReason: '',
  createdAt: '2026-11-23T06:30:00.000Z',
  decidedAt: null,
  ...over,
});

function server(me: Partial<OperatorMe>, items: MoneyRequest[]) {
  return costServer((url, init) => {
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, operator);
    if (url.pathname === ME) return json(200, { userId: 'fin1', roles: ['finance'], permissions: [], approvalThreshold: '10000000', ...me });
    if (url.pathname === REQUESTS) return json(200, { items, total: items.length, page: 1, pageSize: 10 });
    if (url.pathname === `${REQUESTS}/r1/approve` && init?.method === 'POST') return json(200, request({ status: 'approved' }));
    return undefined;
  });
}

beforeEach(() => session.setLogin('tok', operator));
afterEach(() => vi.unstubAllGlobals());

describe('待审批', () => {
  it('approves another operator’s request after a confirmation', async () => {
    const fetch = server({ permissions: ['money.approve', 'money.credit'] }, [
      request({}),
      request({ id: 'r2', requestedById: 'fin1', requestedBy: '13800000001' }),
    ]);
    renderApp('/operator?tab=approvals');
    expect(
      await screen.findByText('非管理员单笔超过 ¥1000.00 的加款、扣款须由另一位有审批权限的运营人员通过后才入账；发起人不能审批自己的申请。', undefined, {
        timeout: 10_000,
      }),
    ).toBeTruthy();
    // Its own request waits for someone else.
    expect(await screen.findByText('待他人审批')).toBeTruthy();
    fireEvent.click(screen.getByText(/^通\s*过$/));
    const modal = (await screen.findByText('审批通过')).closest<HTMLElement>('.ant-modal')!;
    expect(within(modal).getByText(/确认给 13900139000 加款 ¥2000.00（现金）/)).toBeTruthy();
    fireEvent.click(within(modal).getByText('确认通过并入账'));
    await waitFor(() => expect(callsTo(fetch, `${REQUESTS}/r1/approve`, 'POST')).toHaveLength(1));
  });

  it('is not offered to an operator without a money permission', async () => {
    server({ roles: ['ops'], permissions: ['models.manage'] }, []);
    renderApp('/operator?tab=approvals');
    expect(await screen.findByText('企业认证审核', undefined, { timeout: 10_000 })).toBeTruthy();
    await waitFor(() => expect(screen.queryByText('待审批')).toBeNull());
    expect(screen.queryByText('审计日志')).toBeNull();
  });
});
