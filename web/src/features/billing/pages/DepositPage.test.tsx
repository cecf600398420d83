import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the deposit page', () => {
  it('shows the deposit held, what a deposit is, and its own statement', async () => {
    const fetch = costServer();
    renderApp('/console/cost/deposit');
    expect(await screen.findByText('当前没有被冻结的押金。')).toBeTruthy();
    expect(screen.getByText(/押金是开通部分产品时冻结的保证金/)).toBeTruthy();
    expect(await screen.findByText(/暂无押金记录/)).toBeTruthy();
    await waitFor(() => expect(callsTo(fetch, '/billing/api/v1/user/statement').map((c) => c.url.searchParams.get('kind'))).toEqual(['deposit']));
  });
});
