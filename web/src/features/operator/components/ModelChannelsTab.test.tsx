import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { ModelChannelSaveRequest, OperatorModel, OperatorModelChannel, OperatorModelChannels, OperatorModelUpdate } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const operator = { ...user, id: 'op1', mobile: '13800000000', isOperator: true };
const LIST = '/api/v1/operator/model-channels';
const channelPath = (id: string) => `${LIST}/${id}`;
const modelPath = (id: string) => `/api/v1/operator/models/${encodeURIComponent(id)}`;

const qwen: OperatorModel = {
  id: 'qwen-mini-sim',
  name: '通义千问 Mini（模拟）',
  provider: '内置模拟',
  type: 'chat',
  contextLength: 8192,
  inputYuanPerMillion: '0.8',
  outputYuanPerMillion: '2',
  tags: ['对话', '中文'],
  description: '内置的离线模拟模型',
  sort: 10,
  active: true,
};
const gpt: OperatorModel = {
  ...qwen,
  id: 'openai/gpt-4o-mini',
  name: 'GPT-4o mini',
  inputYuanPerMillion: '1.05',
  outputYuanPerMillion: '4.2',
  tags: [],
  sort: 20,
};
const retired: OperatorModel = { ...qwen, id: 'old-sim', name: '旧模型', active: false, sort: 30 };

const embedded: OperatorModelChannel = {
  id: 'embedded',
  name: '本机模拟',
  kind: 'embedded',
  baseUrl: null,
  apiKeySet: false,
  apiKeyEnv: null,
  models: ['qwen-mini-sim'],
  modelMap: {},
  priority: 0,
  weight: 1,
  enabled: true,
  problem: null,
  health: { inUse: true, failures: 0, coolingUntil: null, lastError: null },
};
const remote: OperatorModelChannel = {
  id: 'openai-main',
  name: 'OpenAI 主账号',
  kind: 'openai',
  baseUrl: 'https://api.example.com/v1',
  apiKeySet: true,
  apiKeyEnv: 'OPENAI_KEY',
  models: ['qwen-mini-sim', 'openai/gpt-4o-mini'],
  modelMap: { 'openai/gpt-4o-mini': 'gpt-4o-mini' },
  priority: 10,
  weight: 3,
  enabled: true,
  problem: null,
  health: { inUse: true, failures: 2, coolingUntil: '2026-11-23T08:01:30.000Z', lastError: '503 busy' },
};

/** The operator's model endpoints over lists that an edit really changes. */
function modelServer(start: OperatorModelChannels = { models: [qwen, gpt, retired], channels: [embedded, remote] }) {
  let state = structuredClone(start);
  return costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, operator);
    if (url.pathname === LIST && method === 'GET') return json(200, state);
    if (url.pathname.startsWith(`${LIST}/`)) {
      const id = decodeURIComponent(url.pathname.slice(LIST.length + 1));
      if (method === 'DELETE') {
        state = { ...state, channels: state.channels.filter((c) => c.id !== id) };
        return json(200, state);
      }
      const body = JSON.parse(String(init!.body)) as ModelChannelSaveRequest;
      const old = state.channels.find((c) => c.id === id);
      const next: OperatorModelChannel = {
        ...(old ?? embedded),
        id,
        name: body.name,
        kind: body.kind,
        baseUrl: body.baseUrl ?? null,
        apiKeySet: Boolean(body.apiKey) || Boolean(old?.apiKeySet),
        models: body.models,
        modelMap: body.modelMap ?? {},
        priority: body.priority ?? 0,
        weight: body.weight ?? 1,
        enabled: body.enabled ?? true,
      };
      state = { ...state, channels: old ? state.channels.map((c) => (c.id === id ? next : c)) : [...state.channels, next] };
      return json(200, state);
    }
    if (url.pathname.startsWith('/api/v1/operator/models/')) {
      const id = decodeURIComponent(url.pathname.slice('/api/v1/operator/models/'.length));
      const body = JSON.parse(String(init!.body)) as OperatorModelUpdate;
      state = { ...state, models: state.models.map((m) => (m.id === id ? { ...m, ...body } : m)) };
      return json(200, state);
    }
    return undefined;
  });
}

const settle = () => act(async () => new Promise((r) => setTimeout(r, 50)));
const rowOf = async (text: string) => (await screen.findByText(text, undefined, { timeout: 10_000 })).closest<HTMLElement>('tr')!;
/** The dialog titled `title` (a button or an aria copy may carry the same words). */
async function dialog(title: string) {
  let found: HTMLElement | undefined;
  await waitFor(() => {
    found = screen
      .getAllByText(title)
      .map((e) => e.closest<HTMLElement>('.ant-modal'))
      .find((m): m is HTMLElement => m !== null);
    expect(found).toBeTruthy();
  });
  return found!;
}
const type = (scope: HTMLElement, label: string, value: string) => fireEvent.change(within(scope).getByLabelText(label), { target: { value } });

async function choose(scope: HTMLElement, label: string, option: string) {
  fireEvent.mouseDown(within(scope).getByLabelText(label));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

beforeEach(() => session.setLogin('tok', operator));
afterEach(() => vi.unstubAllGlobals());

describe('the operator 模型渠道 tab', () => {
  it('lists the channels with their state, cooldown and where the key comes from, and the models with yuan prices', async () => {
    modelServer();
    renderApp('/operator?tab=models');
    const row = await rowOf('OpenAI 主账号');
    expect(screen.getByRole('tab', { name: '模型渠道', selected: true })).toBeTruthy();
    expect(within(row).getByText('OpenAI 兼容接口')).toBeTruthy();
    expect(within(row).getByText('https://api.example.com/v1')).toBeTruthy();
    expect(within(row).getByText('密钥：环境变量 OPENAI_KEY')).toBeTruthy();
    expect(within(row).getByText('openai/gpt-4o-mini → gpt-4o-mini')).toBeTruthy();
    expect(within(row).getByText('10')).toBeTruthy();
    expect(within(row).getByText('3')).toBeTruthy();
    expect(within(row).getByRole('switch', { name: '启用渠道 OpenAI 主账号' }).getAttribute('aria-checked')).toBe('true');
    expect(within(row).getByText('冷却中')).toBeTruthy();
    expect(within(row).getByText(/^至 \d\d:01:30$/)).toBeTruthy();
    expect(within(await rowOf('本机模拟')).getByText('正常')).toBeTruthy();

    const model = await rowOf('GPT-4o mini');
    expect(within(model).getByText('¥1.05')).toBeTruthy();
    expect(within(model).getByText('¥4.2')).toBeTruthy();
    expect(within(model).getByText('已上架')).toBeTruthy();
    expect(within(await rowOf('旧模型')).getByText('已下架')).toBeTruthy();
    expect(screen.getByText(/models 或 modelChannels 下次变化并被应用时/)).toBeTruthy();
  });

  it('creates a channel with the body the server expects, refusing a weight of 0 and an id in use', async () => {
    const fetch = modelServer();
    renderApp('/operator?tab=models');
    await rowOf('OpenAI 主账号');
    fireEvent.click(screen.getByText('新建渠道'));
    const modal = await dialog('新建渠道');
    type(modal, '渠道编号', 'embedded');
    type(modal, '名称', '  备用上游 ');
    type(modal, 'Base URL', 'https://llm.example.com/v1');
    type(modal, 'API Key', 'env:BACKUP_KEY');
    await choose(modal, '模型', '通义千问 Mini（模拟）（qwen-mini-sim）');
    type(modal, '优先级', '5');
    type(modal, '权重', '0');
    fireEvent.click(
      within(modal)
        .getByText(/^创\s*建$/)
        .closest('button')!,
    );
    expect(await within(modal).findByText('渠道编号 embedded 已存在，请换一个，或编辑那个渠道')).toBeTruthy();
    await settle();
    expect(callsTo(fetch, channelPath('embedded'), 'PUT')).toEqual([]);

    type(modal, '渠道编号', 'backup');
    fireEvent.click(
      within(modal)
        .getByText(/^创\s*建$/)
        .closest('button')!,
    );
    expect(await within(modal).findByText('权重须为 1 到 10000 的整数；不想让渠道接收请求请停用它')).toBeTruthy();
    await settle();
    expect(callsTo(fetch, channelPath('backup'), 'PUT')).toEqual([]);

    type(modal, '权重', '2');
    fireEvent.click(
      within(modal)
        .getByText(/^创\s*建$/)
        .closest('button')!,
    );
    await waitFor(() =>
      expect(callsTo(fetch, channelPath('backup'), 'PUT').map((c) => c.body)).toEqual([
        {
          name: '备用上游',
          kind: 'openai',
          baseUrl: 'https://llm.example.com/v1',
          apiKey: 'env:BACKUP_KEY',
          models: ['qwen-mini-sim'],
          modelMap: {},
          priority: 5,
          weight: 2,
          enabled: true,
        },
      ]),
    );
    expect(within(await rowOf('备用上游')).getByText('llm.example.com/v1', { exact: false })).toBeTruthy();
  });

  it('edits a channel without sending its key unless a new one is typed, and shows a URL the schema refuses', async () => {
    const fetch = modelServer();
    renderApp('/operator?tab=models');
    fireEvent.click(within(await rowOf('OpenAI 主账号')).getByText(/^编\s*辑$/));
    const modal = await dialog('编辑渠道「OpenAI 主账号」');
    expect(within(modal).getByText(/已设置（读取服务器环境变量 OPENAI_KEY），留空则保留原密钥/)).toBeTruthy();
    type(modal, 'Base URL', 'ftp://llm.example.com');
    fireEvent.click(
      within(modal)
        .getByText(/^保\s*存$/)
        .closest('button')!,
    );
    expect(await within(modal).findByText(/Base URL 须为 http:\/\/ 或 https:\/\/ 开头的网址/)).toBeTruthy();
    await settle();
    expect(callsTo(fetch, channelPath('openai-main'), 'PUT')).toEqual([]);

    type(modal, 'Base URL', 'https://api2.example.com/v1');
    type(modal, '权重', '7');
    fireEvent.click(
      within(modal)
        .getByText(/^保\s*存$/)
        .closest('button')!,
    );
    await waitFor(() => expect(callsTo(fetch, channelPath('openai-main'), 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, channelPath('openai-main'), 'PUT')[0]!.body).toEqual({
      name: 'OpenAI 主账号',
      kind: 'openai',
      baseUrl: 'https://api2.example.com/v1',
      models: ['qwen-mini-sim', 'openai/gpt-4o-mini'],
      modelMap: { 'openai/gpt-4o-mini': 'gpt-4o-mini' },
      priority: 10,
      weight: 7,
      enabled: true,
    });
  });

  it('disables a channel after confirming, and deletes one after a warning naming the models left without a channel', async () => {
    const fetch = modelServer();
    renderApp('/operator?tab=models');
    const row = await rowOf('OpenAI 主账号');
    fireEvent.click(within(row).getByRole('switch', { name: '启用渠道 OpenAI 主账号' }));
    fireEvent.click((await screen.findByText('停用渠道「OpenAI 主账号」？')).closest('.ant-popover')!.querySelector('.ant-btn-dangerous')!);
    await waitFor(() => expect(callsTo(fetch, channelPath('openai-main'), 'PUT').map((c) => (c.body as ModelChannelSaveRequest).enabled)).toEqual([false]));
    await waitFor(() => expect(within(row).getByRole('switch', { name: '启用渠道 OpenAI 主账号' }).getAttribute('aria-checked')).toBe('false'));

    fireEvent.click(within(await rowOf('本机模拟')).getByText(/^删\s*除$/));
    const confirm = await dialog('删除渠道「本机模拟」？');
    // The remote channel is now off: the embedded one is qwen's last.
    expect(within(confirm).getByText(/以下模型将没有可用渠道，调用会返回 503：通义千问 Mini（模拟）/)).toBeTruthy();
    fireEvent.click(within(confirm).getByText('确认删除'));
    await waitFor(() => expect(callsTo(fetch, channelPath('embedded'), 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText('本机模拟')).toBeNull());
  });

  it('edits a price in yuan per million tokens (refusing a negative one) and takes a model off the square', async () => {
    const fetch = modelServer();
    renderApp('/operator?tab=models');
    fireEvent.click(within(await rowOf('GPT-4o mini')).getByText(/^编\s*辑$/));
    const modal = await dialog('编辑模型「GPT-4o mini」');
    type(modal, '输入价格（¥ / 百万 Token）', '-1');
    fireEvent.click(
      within(modal)
        .getByText(/^保\s*存$/)
        .closest('button')!,
    );
    expect(await within(modal).findByText('价格须为不小于 0 的数字（元 / 百万 Token），最多 4 位小数')).toBeTruthy();
    await settle();
    expect(callsTo(fetch, modelPath('openai/gpt-4o-mini'), 'PUT')).toEqual([]);

    type(modal, '输入价格（¥ / 百万 Token）', ' 1.5 ');
    type(modal, '输出价格（¥ / 百万 Token）', '6');
    fireEvent.click(
      within(modal)
        .getByText(/^保\s*存$/)
        .closest('button')!,
    );
    await waitFor(() =>
      expect(callsTo(fetch, modelPath('openai/gpt-4o-mini'), 'PUT').map((c) => c.body)).toEqual([{ inputYuanPerMillion: '1.5', outputYuanPerMillion: '6' }]),
    );
    expect(await within(await rowOf('GPT-4o mini')).findByText('¥1.5')).toBeTruthy();

    fireEvent.click(within(await rowOf('通义千问 Mini（模拟）')).getByText(/^下\s*架$/));
    fireEvent.click((await screen.findByText('下架模型「通义千问 Mini（模拟）」？')).closest('.ant-popover')!.querySelector('.ant-btn-dangerous')!);
    await waitFor(() => expect(callsTo(fetch, modelPath('qwen-mini-sim'), 'PUT').map((c) => c.body)).toEqual([{ active: false }]));
    expect(await within(await rowOf('通义千问 Mini（模拟）')).findByText('已下架')).toBeTruthy();
  });
});
