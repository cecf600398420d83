import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { catalogueServer, host } from '../../../test/fixtures/catalogue';

const GPU_LIST = '/upgpu/api/v2.1/gpu/list';
const SUBS = '/userapi/api/v2.1/gpu-subscriptions';

/** The market with one full host (and one with cards), subscriptions answered as the server does. */
function fullMarket(answer = () => json(200, {})) {
  return catalogueServer((url, init) => {
    if (url.pathname === GPU_LIST)
      return json(200, {
        items: [
          host({ id: 'full', gpuFree: 0, name: 'FULL' }),
          host({ id: 'free', gpuFree: 4, name: 'FREE', regionName: '上海 A 区', roomName: '上海 A 区 1 号机房', regionId: 'sh-a' }),
        ],
        total: 2,
        page: 1,
        pageSize: 24,
      });
    if (url.pathname === SUBS && init?.method === 'POST') return answer();
    return undefined;
  });
}

const cardOf = async (name: RegExp) => screen.findByRole('article', { name });
const notifyButton = (card: HTMLElement) => within(card).queryByText('有卡时通知我')?.closest('button') ?? null;

afterEach(() => {
  vi.unstubAllGlobals();
  session.clear();
});

describe('有卡时通知我 in the GPU market', () => {
  beforeEach(() => session.setLogin('tok', user));

  it('is offered on a full host only, and subscribes to its GPU type in its region', async () => {
    const fetch = fullMarket(() =>
      json(200, {
        id: 's1',
        gpuTypeId: 'rtx4090',
        gpuName: 'RTX 4090',
        regionId: 'bj-b',
        regionName: '北京 B 区',
        gpuCount: 1,
        createdAt: '2026-11-23T09:00:00.000Z',
        notifiedAt: null,
      }),
    );
    renderApp('/stats/cloud/gpu');
    const full = await cardOf(/北京 B 区.*RTX 4090/);
    expect(notifyButton(await cardOf(/上海 A 区.*RTX 4090/))).toBeNull();
    fireEvent.click(notifyButton(full)!);
    await waitFor(() => expect(callsTo(fetch, SUBS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, SUBS, 'POST')[0]!.body).toEqual({ gpuTypeId: 'rtx4090', regionId: 'bj-b' });
    expect(await screen.findByText(/已订阅：有空闲卡时将通过站内信/)).toBeTruthy();
  });

  it('says why when the server refuses (20 waiting already)', async () => {
    fullMarket(() =>
      json(400, {
        code: 40028001,
        message: '「有卡时通知我」最多同时订阅 20 个，请先在消息中心的「有卡提醒」中取消不需要的订阅',
        detail: '已有 20 个等待中的订阅',
      }),
    );
    renderApp('/stats/cloud/gpu');
    fireEvent.click(notifyButton(await cardOf(/北京 B 区.*RTX 4090/))!);
    expect(await screen.findByText(/最多同时订阅 20 个/)).toBeTruthy();
  });
});

describe('有卡时通知我 for a visitor', () => {
  beforeEach(() => session.reload());

  it('asks to log in first and comes back to the market', async () => {
    const fetch = fullMarket();
    const router = renderApp('/stats/cloud/gpu?regionId=bj-b');
    fireEvent.click(notifyButton(await cardOf(/北京 B 区.*RTX 4090/))!);
    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
    expect(new URLSearchParams(router.state.location.search).get('redirect')).toBe('/stats/cloud/gpu?regionId=bj-b');
    expect(callsTo(fetch, SUBS, 'POST')).toHaveLength(0);
  });
});
