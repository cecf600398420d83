import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { actionPath, ID2, instance, instanceServer, listOf } from '../../../test/fixtures/instances';

const SUBS = '/userapi/api/v2.1/gpu-subscriptions';
const stopped = instance({
  id: ID2,
  name: '推理机-2',
  status: 'Stopped',
  actions: allowedActions('Stopped'),
  startedAt: null,
  stoppedAt: '2026-11-23T11:00:00.000Z',
});

const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('a start refused for busy cards', () => {
  it('offers 有卡时通知我: a subscription for the instance’s GPU type, region and card count', async () => {
    const fetch = instanceServer(
      (url, init) => {
        if (init?.method !== 'POST') return undefined;
        if (url.pathname === actionPath(ID2, 'start'))
          return json(409, { code: 40920002, message: '该主机的 GPU 已被占用，可迁移到其他主机（免费）、选择无卡模式开机，或稍后再试' });
        if (url.pathname === SUBS)
          return json(200, {
            id: 's1',
            gpuTypeId: 'rtx4090',
            gpuName: 'RTX 4090',
            regionId: 'bj-b',
            regionName: '北京 B 区',
            gpuCount: 2,
            createdAt: '2026-11-23T12:00:00.000Z',
            notifiedAt: null,
          });
        return undefined;
      },
      listOf(() => [stopped]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(button((await screen.findByText('推理机-2')).closest<HTMLElement>('tr')!, '开机'));
    fireEvent.click(button(await dialogOf('确认开机？'), '开机'));
    const failed = await dialogOf('开机失败');
    fireEvent.click(button(failed, '有卡时通知我'));
    await waitFor(() => expect(callsTo(fetch, SUBS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, SUBS, 'POST')[0]!.body).toEqual({ gpuTypeId: 'rtx4090', regionId: 'bj-b', gpuCount: 2 });
    expect(await screen.findByText(/已订阅：有空闲卡时将通过站内信/)).toBeTruthy();
    expect(callsTo(fetch, actionPath(ID2, 'startNoCard'), 'POST')).toHaveLength(0);
  });
});
