import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { session } from '../../../session/store';
import { calls, fakeServer, json } from '../../../test/http';
import { renderApp } from '../../../test/render';

const AGREEMENTS = '/api/v1/site/agreements';

const USER_TEXT = ['欢迎使用星河算力。', '', '## 一、账号注册', '', '- 使用本人手机号注册；', '- 妥善保管密码。', '', '请勿<b>滥用</b>服务。'].join('\n');

/** The operator's documents, as the server answers them. */
function agreementServer() {
  return fakeServer((url) => {
    if (url.pathname === `${AGREEMENTS}/user`) return json(200, { kind: 'user', title: '用户协议', content: USER_TEXT });
    if (url.pathname === `${AGREEMENTS}/privacy`) return json(200, { kind: 'privacy', title: '隐私政策', content: '## 我们收集的信息\n\n手机号。' });
    return undefined;
  });
}

beforeEach(() => session.reload()); // a visitor: no session
afterEach(() => vi.unstubAllGlobals());

describe('the 用户协议 and 隐私政策 pages', () => {
  it('shows the operator’s 用户协议 to a visitor, with its headings, lists and paragraphs, and nothing of it as markup', async () => {
    const fetch = agreementServer();
    const router = renderApp('/agreement/user');
    expect(await screen.findByRole('heading', { name: '一、账号注册' })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/agreement/user'); // public: no login asked
    expect(screen.getByRole('heading', { name: '用户协议' })).toBeTruthy();
    expect(screen.getByText('欢迎使用星河算力。')).toBeTruthy();
    expect(screen.getAllByRole('listitem').map((li) => li.textContent)).toEqual(['使用本人手机号注册；', '妥善保管密码。']);
    // Text stays text: the operator's document cannot inject markup.
    expect(screen.getByText('请勿<b>滥用</b>服务。')).toBeTruthy();
    expect(document.querySelector('b')).toBeNull();
    expect(calls(fetch, `${AGREEMENTS}/user`)).toHaveLength(1);
  });

  it('links to the other document', async () => {
    agreementServer();
    const router = renderApp('/agreement/user');
    fireEvent.click(await screen.findByRole('link', { name: '查看《隐私政策》' }));
    expect(await screen.findByRole('heading', { name: '我们收集的信息' })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/agreement/privacy');
    expect(screen.getByRole('heading', { name: '隐私政策' })).toBeTruthy();
  });

  it('says so when the document cannot be loaded, and loads it again on 重试', async () => {
    let fail = true;
    fakeServer((url) => {
      if (url.pathname !== `${AGREEMENTS}/privacy`) return undefined;
      return fail ? json(502, { code: 50200001, message: '服务暂不可用' }) : json(200, { kind: 'privacy', title: '隐私政策', content: '手机号。' });
    });
    renderApp('/agreement/privacy');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: /重\s*试/ }));
    await waitFor(() => expect(screen.getByText('手机号。')).toBeTruthy());
  });
});
