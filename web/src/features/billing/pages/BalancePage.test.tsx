import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

const noGifts = { items: [], remain: '0', obtained: false, recharged: '0', renewStatus: false, expireAt: null };
const welcome = {
  id: 'g1',
  source: 'welcome',
  amount: '100000',
  remain: '100000',
  expireAt: '2099-01-01T00:00:00Z',
  status: 1,
  createdAt: '2026-11-23T00:00:00Z',
};

describe('the balance page', () => {
  it('offers the welcome credit to an eligible account and claims it', async () => {
    let claimed = false;
    const fetch = costServer((url, init) => {
      if (url.pathname === '/order/api/v2.1/gift/eligibility')
        return json(200, { eligible: !claimed, obtained: claimed, amount: '100000', validDays: 30, reason: '' });
      if (url.pathname === '/order/api/v2.1/gift/obtain' && init?.method === 'POST') {
        claimed = true;
        return json(200, { ...noGifts, obtained: true, remain: '100000', items: [welcome] });
      }
      if (url.pathname === '/order/api/v2.1/gift') return json(200, claimed ? { ...noGifts, obtained: true, remain: '100000', items: [welcome] } : noGifts);
      return undefined;
    });
    renderApp('/console/cost/balance');
    fireEvent.click(await screen.findByRole('button', { name: /领取新人赠送金 ¥10\.00/ }));
    await waitFor(() => expect(callsTo(fetch, '/order/api/v2.1/gift/obtain', 'POST')).toHaveLength(1));
    expect(await screen.findByText('新人赠送')).toBeTruthy();
    await waitFor(() => expect(screen.queryByRole('button', { name: /领取新人赠送金/ })).toBeNull());
  });

  it('offers renewal only when an item waits for it', async () => {
    const fetch = costServer((url) => {
      if (url.pathname === '/order/api/v2.1/gift/eligibility')
        return json(200, { eligible: false, obtained: true, amount: '100000', validDays: 30, reason: '已领取过新人赠送金' });
      if (url.pathname === '/order/api/v2.1/gift') return json(200, { ...noGifts, obtained: true, renewStatus: true, items: [{ ...welcome, status: 0 }] });
      if (url.pathname === '/order/api/v2.1/gift/renew') return json(400, { code: 40020008, message: '续期赠送金需先完成一次充值' });
      return undefined;
    });
    renderApp('/console/cost/balance');
    fireEvent.click(await screen.findByRole('button', { name: '续期待续期的赠送金' }));
    await waitFor(() => expect(callsTo(fetch, '/order/api/v2.1/gift/renew', 'POST')).toHaveLength(1));
    expect(await screen.findByText('待续期')).toBeTruthy();
    expect(screen.queryByRole('button', { name: /领取新人赠送金/ })).toBeNull();
  });

  it('shows times in Beijing time whatever the browser zone: 16:17 UTC is 00:17 the next day', async () => {
    const rollUp = {
      id: 7,
      amount: '-12000',
      balanceAfter: '5988000',
      kind: 'Charge',
      memo: 'gpu-1 按量计费',
      orderId: null,
      createdAt: '2026-11-28T16:17:33Z',
      group: '0b6c1f0e-2a59-4d51-9b8e-6a3c0f2b9d11@1764345600',
      entries: 3,
      periodStart: '2026-11-28T16:00:00Z',
    };
    costServer((url) => {
      if (url.pathname === '/order/api/v2.1/gift/eligibility')
        return json(200, { eligible: false, obtained: true, amount: '100000', validDays: 30, reason: '已领取过新人赠送金' });
      if (url.pathname === '/order/api/v2.1/gift') return json(200, { ...noGifts, obtained: true, items: [{ ...welcome, expireAt: '2026-12-28T16:10:00Z' }] });
      if (url.pathname === '/billing/api/v1/user/statement') return json(200, { items: [rollUp], total: 1, page: 1, pageSize: 10 });
      return undefined;
    });
    renderApp('/console/cost/balance');
    expect(await screen.findByText('2026-11-29 00:17:33')).toBeTruthy();
    expect(screen.getByText(/2026-11-29 00:00–01:00/)).toBeTruthy();
    expect(await screen.findByText('2026-12-29 00:10')).toBeTruthy();
  });
});
