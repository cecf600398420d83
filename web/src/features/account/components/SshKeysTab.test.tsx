import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { API, ERRORS, SSH_KEYS_PER_USER, type SshKey, type SshKeyCreate } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const KEYS = API.meSshKeys;
const keyPath = (id: string) => API.meSshKey.replace(':id', id);
const LAPTOP = '3c9e1f0a-1111-4d2b-8e7f-5a6b7c8d9e0f';
const CI = '3c9e1f0a-2222-4d2b-8e7f-5a6b7c8d9e0f';
const NEW = '3c9e1f0a-3333-4d2b-8e7f-5a6b7c8d9e0f';
const PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHbLw0m2XvQ3nYj8r1k5t9pQe7sZ4uV6wX2yA0bC1dE3 zhang@laptop';

const sshKey = (over: Partial<SshKey> = {}): SshKey => ({
  id: LAPTOP,
  name: '办公室笔记本',
  algorithm: 'ssh-ed25519',
  fingerprint: 'SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s',
  createdAt: '2026-11-20T02:30:00.000Z',
  lastUsedAt: '2026-11-23T08:15:00.000Z',
  ...over,
});
const ci = sshKey({ id: CI, name: 'CI 部署', algorithm: 'ssh-rsa', fingerprint: 'SHA256:Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbNm1234567', lastUsedAt: null });

/** The keys endpoints over a list the test can watch change; `refuse` answers the next POST with that error. */
function keyServer(initial: SshKey[] = [sshKey(), ci], refuse?: { status: number; body: unknown }) {
  let keys = initial;
  return costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === KEYS && method === 'GET') return json(200, { items: keys });
    if (url.pathname === KEYS && method === 'POST') {
      if (refuse) return json(refuse.status, refuse.body);
      const body = JSON.parse(String(init!.body)) as SshKeyCreate;
      const made = sshKey({ id: NEW, name: body.name, fingerprint: 'SHA256:NewKeyFingerprint0000000000000000000000000000', lastUsedAt: null });
      keys = [...keys, made];
      return json(200, made);
    }
    if (url.pathname.startsWith(`${KEYS}/`) && method === 'DELETE') {
      const id = url.pathname.slice(KEYS.length + 1);
      keys = keys.filter((k) => k.id !== id);
      return json(200, { ok: true });
    }
    return undefined;
  });
}

const rowOf = async (name: string) => (await screen.findByText(name, { selector: 'td *' })).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string | RegExp) => within(scope).getByText(text, { selector: 'button span' }).closest('button')!;
const addDialog = async () => (await screen.findByText('添加公钥', { selector: '.ant-modal-title' })).closest<HTMLElement>('.ant-modal')!;

async function fillAndSubmit(name: string, publicKey: string) {
  const d = await addDialog();
  fireEvent.change(within(d).getByLabelText('名称'), { target: { value: name } });
  fireEvent.change(within(d).getByLabelText('公钥'), { target: { value: publicKey } });
  fireEvent.click(button(d, /^添\s*加$/));
  return d;
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('SSH 公钥 (account page, sshKeys tab)', () => {
  it('lists the keys with their type, fingerprint and times, and says what a key is for', async () => {
    keyServer();
    renderApp('/console/account?tab=sshKeys');
    expect(await screen.findByText('SSH 公钥', { selector: '.ant-tabs-tab-active .ant-tabs-tab-btn' })).toBeTruthy();
    expect(screen.getByText('添加后，可用实例「登录信息」中的公钥登录命令免密登录你有权管理的实例')).toBeTruthy();
    const laptop = await rowOf('办公室笔记本');
    expect(within(laptop).getByText('ssh-ed25519')).toBeTruthy();
    expect(within(laptop).getByText('SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s')).toBeTruthy();
    expect(within(laptop).getAllByText(/^2026-11-\d\d \d\d:\d\d$/)).toHaveLength(2); // added, last used
    const rsa = await rowOf('CI 部署');
    expect(within(rsa).getByText('ssh-rsa')).toBeTruthy();
    expect(within(rsa).getByText('—')).toBeTruthy();
    expect(screen.getByText(`已添加 2 / ${SSH_KEYS_PER_USER} 个`)).toBeTruthy();
  });

  it('with no keys says so and adds one, sending what was typed', async () => {
    const fetch = keyServer([]);
    renderApp('/console/account?tab=sshKeys');
    const empty = (await screen.findByText('还没有公钥')).closest<HTMLElement>('.ant-empty')!;
    fireEvent.click(button(empty, '添加公钥'));
    const d = await addDialog();
    expect(within(d).getByPlaceholderText('ssh-ed25519 AAAA... user@host')).toBeTruthy();
    expect(within(d).getByText('粘贴 ~/.ssh/id_ed25519.pub 的内容；没有密钥时用 ssh-keygen -t ed25519 生成')).toBeTruthy();

    await fillAndSubmit('我的笔记本', PUBLIC_KEY);
    await waitFor(() => expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, KEYS, 'POST')[0]!.body).toEqual({ name: '我的笔记本', publicKey: PUBLIC_KEY });
    expect(await screen.findByText('公钥「我的笔记本」已添加')).toBeTruthy();
    expect(await rowOf('我的笔记本')).toBeTruthy();
    await waitFor(() => expect(screen.queryByText('添加公钥', { selector: '.ant-modal-title' })).toBeNull());
  });

  it('checks the form before sending', async () => {
    const fetch = keyServer();
    renderApp('/console/account?tab=sshKeys');
    await rowOf('办公室笔记本');
    fireEvent.click(button(document.body, '添加公钥'));
    const d = await addDialog();
    fireEvent.click(button(d, /^添\s*加$/));
    expect(await within(d).findByText('请填写名称')).toBeTruthy();
    expect(await within(d).findByText('请粘贴公钥')).toBeTruthy();
    expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(0);
  });

  it('shows the server’s reason for refusing a key under the field and keeps the dialog open', async () => {
    const refusal = { code: ERRORS.SSH_KEY_INVALID.code, message: '公钥格式不正确：请粘贴 .pub 文件的一整行' };
    const fetch = keyServer([], { status: 400, body: refusal });
    renderApp('/console/account?tab=sshKeys');
    fireEvent.click(button((await screen.findByText('还没有公钥')).closest<HTMLElement>('.ant-empty')!, '添加公钥'));
    const d = await fillAndSubmit('私钥', '-----BEGIN OPENSSH PRIVATE KEY-----');
    await waitFor(() => expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(1));
    expect(await within(d).findByText(refusal.message)).toBeTruthy();
    expect(screen.getByText('添加公钥', { selector: '.ant-modal-title' })).toBeTruthy();
    expect((within(d).getByLabelText('公钥') as HTMLTextAreaElement).value).toBe('-----BEGIN OPENSSH PRIVATE KEY-----');
  });

  it('deletes a key only after the confirmation', async () => {
    const fetch = keyServer();
    renderApp('/console/account?tab=sshKeys');
    fireEvent.click(within(await rowOf('办公室笔记本')).getByText('删除'));
    expect(await screen.findByText('删除公钥「办公室笔记本」？')).toBeTruthy();
    expect(screen.getByText(/不能再用这个公钥登录实例/)).toBeTruthy();
    expect(callsTo(fetch, keyPath(LAPTOP), 'DELETE')).toHaveLength(0);
    fireEvent.click((await screen.findAllByText(/^删\s*除$/, { selector: '.ant-popconfirm button span' })).at(-1)!);
    await waitFor(() => expect(callsTo(fetch, keyPath(LAPTOP), 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText('办公室笔记本', { selector: 'td *' })).toBeNull());
    expect(await rowOf('CI 部署')).toBeTruthy();
    expect(await screen.findByText(`已添加 1 / ${SSH_KEYS_PER_USER} 个`)).toBeTruthy();
  });

  it('cannot add beyond the limit', async () => {
    keyServer(
      Array.from({ length: SSH_KEYS_PER_USER }, (_, n) => sshKey({ id: `3c9e1f0a-${String(n).padStart(4, '0')}-4d2b-8e7f-5a6b7c8d9e0f`, name: `key-${n}` })),
    );
    renderApp('/console/account?tab=sshKeys');
    expect(await screen.findByText(`已添加 ${SSH_KEYS_PER_USER} / ${SSH_KEYS_PER_USER} 个`)).toBeTruthy();
    expect(button(document.body, '添加公钥').disabled).toBe(true);
  });

  it('a list that fails to load offers 重试', async () => {
    let fail = true;
    costServer((url) =>
      url.pathname === KEYS ? (fail ? json(503, { code: 50300001, message: '服务暂不可用' }) : json(200, { items: [sshKey()] })) : undefined,
    );
    renderApp('/console/account?tab=sshKeys');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    fail = false;
    fireEvent.click(button(document.body, /^重\s*试$/));
    expect(await rowOf('办公室笔记本')).toBeTruthy();
  });

  it('is a tab a child account has too', async () => {
    session.setLogin('tok', { ...user, isChild: true, childName: 'kid' });
    keyServer();
    renderApp('/console/account?tab=sshKeys');
    expect(await rowOf('办公室笔记本')).toBeTruthy();
  });
});
