import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, instance, INSTANCES, instanceServer } from '../../../test/fixtures/instances';

const ONE = `${INSTANCES}/${ID}`;
const TOKEN = `${INSTANCES}/${ID}/app-token`;
const DETAIL = `/console/ipvm/detail/Gpu/${ID}?tab=access`;
const API_URL = `http://${ID}.localhost:8091`;
const comfy = () =>
  instance({ applicationId: 'comfyui', applicationName: 'ComfyUI', access: { ...instance().access!, appUrl: `http://localhost:8090/app/${ID}/` } });

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

/** The detail page of a ComfyUI instance whose token the server keeps in `current`. */
function tokenServer(first: string | null) {
  let current = first;
  let n = 0;
  return instanceServer((url, init) => {
    if (url.pathname === ONE) return json(200, comfy());
    if (url.pathname !== TOKEN) return undefined;
    if (init?.method === 'POST') current = `cui_token_${++n}`;
    if (init?.method === 'DELETE') current = null;
    return json(200, { token: current, apiUrl: API_URL });
  });
}

describe("a ComfyUI instance's API token (登录信息)", () => {
  it('is made on request and shown with its address and a copy button', async () => {
    const fetch = tokenServer(null);
    renderApp(DETAIL);
    expect(await screen.findByText('尚未生成')).toBeTruthy();
    expect(screen.getByText(API_URL)).toBeTruthy();
    fireEvent.click(screen.getByText('生成 API 令牌'));
    expect(await screen.findByText('cui_token_1')).toBeTruthy();
    expect(callsTo(fetch, TOKEN, 'POST')).toHaveLength(1);
    expect(screen.getByLabelText('复制令牌')).toBeTruthy();
  });

  it('is replaced and revoked only after a confirmation', async () => {
    const fetch = tokenServer('cui_token_0');
    renderApp(DETAIL);
    expect(await screen.findByText('cui_token_0')).toBeTruthy();

    fireEvent.click(screen.getByText('重新生成'));
    expect(await screen.findByText('重新生成 API 令牌？')).toBeTruthy();
    expect(callsTo(fetch, TOKEN, 'POST')).toHaveLength(0);
    fireEvent.click(screen.getAllByText('重新生成').at(-1)!.closest('button')!);
    expect(await screen.findByText('cui_token_1')).toBeTruthy();

    fireEvent.click(screen.getByText('吊销'));
    expect(await screen.findByText('吊销 API 令牌？')).toBeTruthy();
    expect(callsTo(fetch, TOKEN, 'DELETE')).toHaveLength(0);
    fireEvent.click(screen.getAllByText('吊销').at(-1)!.closest('button')!);
    await waitFor(() => expect(callsTo(fetch, TOKEN, 'DELETE')).toHaveLength(1));
    expect(await screen.findByText('尚未生成')).toBeTruthy();
    expect(screen.queryByText('cui_token_1')).toBeNull();
  });

  it('is not offered on an instance without ComfyUI', async () => {
    const fetch = instanceServer((url) => (url.pathname === ONE ? json(200, instance()) : undefined));
    renderApp(DETAIL);
    expect(await screen.findByText('ssh -p 30022 root@bj-b.gpu.example.com')).toBeTruthy();
    expect(screen.queryByText('API 令牌')).toBeNull();
    expect(callsTo(fetch, TOKEN)).toHaveLength(0);
  });
});
