import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const FLOOR = '/userapi/api/v2.1/users/me/balance-floor';

afterEach(() => vi.unstubAllGlobals());

describe('余额保底 on the balance page', () => {
  beforeEach(() => session.setLogin('tok', user));

  it('turns the floor on with an amount in yuan, sent in 0.0001 yuan units, and off again', async () => {
    let floor: string | null = null;
    const fetch = costServer((url, init) => {
      if (url.pathname !== FLOOR) return undefined;
      if (init?.method === 'PUT') floor = (JSON.parse(String(init.body)) as { floor: string | null }).floor;
      return json(200, { floor });
    });
    renderApp('/console/cost/balance');

    const card = (await screen.findByText('余额保底')).closest<HTMLElement>('.ant-card')!;
    await waitFor(() => expect(within(card).getByText('未开启')).toBeTruthy());
    const amount = within(card).getByLabelText('保底金额');
    expect((amount as HTMLInputElement).disabled).toBe(true);
    fireEvent.click(within(card).getByLabelText('开启余额保底'));
    await waitFor(() => expect((amount as HTMLInputElement).disabled).toBe(false));
    fireEvent.change(amount, { target: { value: '12.5' } });
    fireEvent.click(within(card).getByText('保存').closest('button')!);
    await waitFor(() => expect(callsTo(fetch, FLOOR, 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, FLOOR, 'PUT')[0]!.body).toEqual({ floor: '125000' });
    expect(await within(card).findByText('已开启：低于 ¥12.50 自动关机')).toBeTruthy();

    fireEvent.click(within(card).getByLabelText('开启余额保底'));
    fireEvent.click(within(card).getByText('保存').closest('button')!);
    await waitFor(() => expect(callsTo(fetch, FLOOR, 'PUT')).toHaveLength(2));
    expect(callsTo(fetch, FLOOR, 'PUT')[1]!.body).toEqual({ floor: null });
    expect(await within(card).findByText('未开启')).toBeTruthy();
  });

  it('warns when the available balance is already below the floor', async () => {
    costServer((url) => (url.pathname === FLOOR ? json(200, { floor: '1000000000' }) : undefined));
    renderApp('/console/cost/balance');
    expect(await screen.findByText(/当前可用余额 ¥600\.00 低于保底金额 ¥100000\.00/)).toBeTruthy();
  });

  it('is not shown to a child account, whose parent’s floor applies', async () => {
    session.setLogin('tok', { ...user, isChild: true, childName: 'intern', finance: true });
    const fetch = costServer((url) =>
      url.pathname === '/userapi/api/v2.1/users/me/info' ? json(200, { ...user, isChild: true, childName: 'intern', finance: true }) : undefined,
    );
    renderApp('/console/cost/balance');
    expect(await screen.findByText('收支明细')).toBeTruthy();
    expect(screen.queryByText('余额保底')).toBeNull();
    expect(callsTo(fetch, FLOOR)).toHaveLength(0);
  });
});
