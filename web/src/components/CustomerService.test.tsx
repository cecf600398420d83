import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import { session } from '../session/store';
import { calls, json } from '../test/http';
import { renderApp } from '../test/render';
import { catalogueServer } from '../test/fixtures/catalogue';

const SETTINGS = '/api/v1/site/settings';

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

describe('企业微信客服, from the operator’s site settings', () => {
  it('is a link to the operator’s WeChat Work address when one is set', async () => {
    catalogueServer((url) => (url.pathname === SETTINGS ? json(200, { customerServiceUrl: 'https://work.weixin.qq.com/kfid/kfc123' }) : undefined));
    renderApp('/stats/cloud/gpu');
    const link = (await screen.findByText('企业微信客服')).closest('a')!;
    expect(link.getAttribute('href')).toBe('https://work.weixin.qq.com/kfid/kfc123');
    expect(link.getAttribute('target')).toBe('_blank');
  });

  it('is not shown at all when the operator has not set one (never a placeholder that opens an error page)', async () => {
    const fetch = catalogueServer((url) => (url.pathname === SETTINGS ? json(200, { customerServiceUrl: null }) : undefined));
    renderApp('/stats/cloud/gpu');
    await screen.findByRole('note', { name: '优惠活动' });
    await waitFor(() => expect(calls(fetch, SETTINGS)).toHaveLength(1));
    await new Promise((r) => setTimeout(r, 50)); // the answer has been rendered
    expect(screen.queryByText('企业微信客服')).toBeNull();
    expect(document.querySelector('a[href*="weixin"]')).toBeNull();
  });
});
