import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, within } from '@testing-library/react';
import type { StorageCharge } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

const charge: StorageCharge = {
  id: 't1',
  instanceId: 'a1b2c3d4-0000-4000-8000-000000000001',
  instanceName: '训练机-1',
  periodStart: '2026-11-22T08:00:00Z',
  memo: '训练机-1 数据盘扩容 150 GB（1 天）',
  amount: '10500',
  chargedAt: '2026-11-23T08:00:01Z',
};

describe('storage bill detail', () => {
  it('lists the daily data-disk charges the server reports', async () => {
    const fetch = costServer((url) =>
      url.pathname === '/billing/api/v1/storage/charges' ? json(200, { items: [charge], total: 1, page: 1, pageSize: 20 }) : undefined,
    );
    renderApp('/console/cost/bill/storage-details');
    const row = (await screen.findByText('训练机-1 数据盘扩容 150 GB（1 天）')).closest('tr')!;
    expect(within(row).getByText('1.05')).toBeTruthy();
    expect(within(row).getByText('训练机-1')).toBeTruthy();
    expect(callsTo(fetch, '/billing/api/v1/storage/charges')[0]!.url.searchParams.get('page')).toBe('1');
  });

  it('says when nothing was charged', async () => {
    costServer((url) => (url.pathname === '/billing/api/v1/storage/charges' ? json(200, { items: [], total: 0, page: 1, pageSize: 20 }) : undefined));
    renderApp('/console/cost/bill/storage-details');
    expect(await screen.findByText('暂无存储账单')).toBeTruthy();
  });
});
