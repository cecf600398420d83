import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { API, type ApiKey, type ApiKeyCreateRequest, type ApiKeyUpdateRequest, type Model } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const KEYS = API.modelKeys;
const PROD = '7d1c4e2a-1111-4b6b-8c7d-0e1f2a3b4c5d';
const OLD = '7d1c4e2a-2222-4b6b-8c7d-0e1f2a3b4c5d';
const NEW = '7d1c4e2a-3333-4b6b-8c7d-0e1f2a3b4c5d';
const keyPath = (id: string) => `${KEYS}/${id}`;
const SECRET = 'sk-9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc';

const models: Model[] = [
  {
    id: 'deepseek-chat',
    name: 'DeepSeek V3',
    provider: 'DeepSeek',
    type: 'chat',
    contextLength: 65536,
    inputPricePerMillion: '20000',
    outputPricePerMillion: '80000',
    tags: [],
    description: '',
  },
  {
    id: 'bge-m3',
    name: 'BGE M3',
    provider: 'BAAI',
    type: 'embedding',
    contextLength: 8192,
    inputPricePerMillion: '5000',
    outputPricePerMillion: '0',
    tags: [],
    description: '',
  },
];

const apiKey = (over: Partial<ApiKey>): ApiKey => ({
  id: PROD,
  name: '生产环境',
  maskedKey: 'sk-abcd…wxyz',
  enabled: true,
  expired: false,
  expiresAt: null,
  spendLimit: '1000000',
  spent: '12345',
  allowedModels: ['deepseek-chat'],
  allowedIps: ['203.0.113.7', '10.0.0.0/8', '2001:db8::/32'],
  rpmLimit: 60,
  tpmLimit: null,
  lastUsedAt: '2026-11-23T08:00:00Z',
  createdAt: '2026-11-01T08:00:00Z',
  ...over,
});

/** The keys endpoints over a list the test can watch change. */
function keyServer(
  initial: ApiKey[] = [
    apiKey({}),
    apiKey({
      id: OLD,
      name: '旧脚本',
      maskedKey: 'sk-old1…0000',
      enabled: false,
      expired: true,
      expiresAt: '2026-01-01T00:00:00Z',
      spendLimit: null,
      spent: '0',
      allowedModels: [],
      allowedIps: [],
      rpmLimit: null,
      lastUsedAt: null,
    }),
  ],
) {
  let keys = initial;
  const fetch = costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === API.modelModels) return json(200, { ...page(models, url), providers: [], tags: [] });
    if (url.pathname === KEYS && method === 'GET') return json(200, { ...page(keys, url), limit: 50 });
    if (url.pathname === KEYS && method === 'POST') {
      const body = JSON.parse(String(init!.body)) as ApiKeyCreateRequest;
      const made = apiKey({ ...body, id: NEW, maskedKey: 'sk-9f8e…ddcc', spent: '0', lastUsedAt: null, enabled: true, expired: false });
      keys = [made, ...keys];
      return json(200, { ...made, secret: SECRET });
    }
    const id = url.pathname.startsWith(`${KEYS}/`) ? url.pathname.slice(KEYS.length + 1) : null;
    if (id && method === 'PUT') {
      const body = JSON.parse(String(init!.body)) as ApiKeyUpdateRequest;
      keys = keys.map((k) => (k.id === id ? { ...k, ...body } : k));
      return json(
        200,
        keys.find((k) => k.id === id),
      );
    }
    if (id && method === 'DELETE') {
      keys = keys.filter((k) => k.id !== id);
      return json(200, { ok: true });
    }
    return undefined;
  });
  return fetch;
}

const rowOf = async (name: string) => (await screen.findByText(name, { selector: 'td *' })).closest<HTMLElement>('tr')!;
const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const button = (scope: HTMLElement, text: string | RegExp) => within(scope).getByText(text).closest('button')!;

async function pickModel(option: string) {
  fireEvent.mouseDown(screen.getByLabelText('可用模型'));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('API KEY 页', () => {
  it('lists the keys with their state, spend, limits and the count against the limit, and shows how to call the gateway', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    expect(await screen.findByText('已创建 2 / 50 个密钥')).toBeTruthy();
    const prod = await rowOf('生产环境');
    expect(within(prod).getByText('sk-abcd…wxyz')).toBeTruthy();
    expect(within(prod).getByLabelText('启用 生产环境').getAttribute('aria-checked')).toBe('true');
    expect(within(prod).getByText('¥1.2345')).toBeTruthy();
    expect(within(prod).getByText('¥100.00')).toBeTruthy();
    expect(within(prod).getByText('deepseek-chat')).toBeTruthy();
    expect(within(prod).getByText('+1')).toBeTruthy(); // the third IP range behind +1
    expect(within(prod).getByText('60 / 不限')).toBeTruthy();
    expect(within(prod).getByText('永不过期')).toBeTruthy();
    const old = await rowOf('旧脚本');
    expect(within(old).getByLabelText('启用 旧脚本').getAttribute('aria-checked')).toBe('false');
    expect(within(old).getByText('已过期')).toBeTruthy();
    expect(within(old).getByText('全部模型')).toBeTruthy();
    expect(within(old).getByText('从未使用')).toBeTruthy();
    expect(callsTo(fetch, KEYS)[0]!.url.search).toBe('?page=1&pageSize=10');

    const curl = await screen.findByLabelText('curl 调用示例');
    expect(curl.textContent).toContain(`curl ${window.location.origin}/v1/chat/completions`);
    expect(curl.textContent).toContain('Authorization: Bearer sk-...');
    await waitFor(() => expect(curl.textContent).toContain('"model": "deepseek-chat"'));
  });

  it('creates a key: refuses a bad IP line with the contract’s message, sends yuan as 0.0001 units, and shows the secret once', async () => {
    const writeText = vi.fn(async () => undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const fetch = keyServer();
    renderApp('/model/key');
    await rowOf('生产环境');
    fireEvent.click(button(document.body, '新建密钥'));
    const d = await dialogOf('新建密钥');
    fireEvent.change(within(d).getByLabelText('密钥名称'), { target: { value: ' 测试脚本 ' } });
    await pickModel('DeepSeek V3（deepseek-chat）');
    fireEvent.change(within(d).getByLabelText('IP 白名单'), { target: { value: '10.0.0.0/8\n300.1.1.1\n' } });
    fireEvent.change(within(d).getByLabelText('消费上限（元）'), { target: { value: '12.5' } });
    fireEvent.change(within(d).getByLabelText('每分钟请求数上限'), { target: { value: '120' } });
    fireEvent.click(button(d, /创\s*建/));
    expect(await within(d).findByText('第 2 行：300.1.1.1 不是有效的 IP 地址或 CIDR 网段（如 203.0.113.7、10.0.0.0/8、2001:db8::/32）')).toBeTruthy();
    expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(0);

    fireEvent.change(within(d).getByLabelText('IP 白名单'), { target: { value: '10.0.0.0/8\n 2001:db8::/32 \n' } });
    fireEvent.click(button(d, /创\s*建/));
    await waitFor(() => expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, KEYS, 'POST')[0]!.body).toEqual({
      name: '测试脚本',
      allowedModels: ['deepseek-chat'],
      allowedIps: ['10.0.0.0/8', '2001:db8::/32'],
      expiresAt: null,
      spendLimit: '125000',
      rpmLimit: 120,
      tpmLimit: null,
    });

    const secret = await dialogOf('密钥只显示这一次，请立即复制保存');
    expect((within(secret).getByLabelText('完整密钥') as HTMLInputElement).value).toBe(SECRET);
    fireEvent.click(button(secret, /^复\s*制$/));
    await waitFor(() => expect(writeText).toHaveBeenCalledWith(SECRET));
    expect(await screen.findByText('已创建 3 / 50 个密钥')).toBeTruthy();
    fireEvent.click(button(secret, '我已保存，关闭'));
    await waitFor(() => expect(screen.queryByDisplayValue(SECRET)).toBeNull());
    // The list shows only the masked key from now on.
    expect(within(await rowOf('测试脚本')).getByText('sk-9f8e…ddcc')).toBeTruthy();
    expect(screen.queryByText(SECRET)).toBeNull();
  });

  it('refuses a spend limit that is not an amount of yuan', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    await rowOf('生产环境');
    fireEvent.click(button(document.body, '新建密钥'));
    const d = await dialogOf('新建密钥');
    fireEvent.change(within(d).getByLabelText('密钥名称'), { target: { value: '测试' } });
    fireEvent.change(within(d).getByLabelText('消费上限（元）'), { target: { value: '1.23456' } });
    fireEvent.click(button(d, /创\s*建/));
    expect(await within(d).findByText('消费上限须为金额（元），最多 4 位小数，如 100 或 49.5')).toBeTruthy();
    expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(0);
  });

  it('sets an expiry with the date picker, sent as an ISO time with its offset', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    await rowOf('生产环境');
    fireEvent.click(button(document.body, '新建密钥'));
    const d = await dialogOf('新建密钥');
    fireEvent.change(within(d).getByLabelText('密钥名称'), { target: { value: '临时' } });
    fireEvent.mouseDown(within(d).getByLabelText('过期时间'));
    fireEvent.click(within(d).getByLabelText('过期时间'));
    fireEvent.click((await screen.findAllByText('30 天后')).at(-1)!);
    const before = Date.now();
    fireEvent.click(button(d, /创\s*建/));
    await waitFor(() => expect(callsTo(fetch, KEYS, 'POST')).toHaveLength(1));
    const { expiresAt } = callsTo(fetch, KEYS, 'POST')[0]!.body as ApiKeyCreateRequest;
    expect(expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}([+-]\d{2}:\d{2}|Z)$/);
    expect(Math.abs(Date.parse(expiresAt!) - (before + 30 * 86400_000))).toBeLessThan(120_000);
  });

  it('deletes a key only after a confirmation that it stops working at once', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    fireEvent.click(button(await rowOf('生产环境'), /删\s*除/));
    const confirm = await dialogOf('删除密钥「生产环境」？');
    expect(within(confirm).getByText(/立即失效/)).toBeTruthy();
    expect(callsTo(fetch, keyPath(PROD), 'DELETE')).toHaveLength(0);
    fireEvent.click(button(confirm, '确认删除'));
    await waitFor(() => expect(callsTo(fetch, keyPath(PROD), 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText('生产环境', { selector: 'td *' })).toBeNull());
    expect(await screen.findByText('已创建 1 / 50 个密钥')).toBeTruthy();
  });

  it('disables a key after a confirmation and enables one with the switch', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    fireEvent.click(within(await rowOf('生产环境')).getByLabelText('启用 生产环境'));
    expect(await screen.findByText('停用后使用该密钥的请求立即被拒绝，可随时重新启用。')).toBeTruthy();
    expect(callsTo(fetch, keyPath(PROD), 'PUT')).toHaveLength(0);
    fireEvent.click((await screen.findAllByText(/^停\s*用$/, { selector: '.ant-popconfirm button span' })).at(-1)!);
    await waitFor(() => expect(callsTo(fetch, keyPath(PROD), 'PUT').map((c) => c.body)).toEqual([{ enabled: false }]));
    await waitFor(async () =>
      expect(
        within(await rowOf('生产环境'))
          .getByLabelText('启用 生产环境')
          .getAttribute('aria-checked'),
      ).toBe('false'),
    );

    fireEvent.click(within(await rowOf('旧脚本')).getByLabelText('启用 旧脚本'));
    await waitFor(() => expect(callsTo(fetch, keyPath(OLD), 'PUT').map((c) => c.body)).toEqual([{ enabled: true }]));
  });

  it('edits a key sending only what changed, so an expired key keeps its old expiry', async () => {
    const fetch = keyServer();
    renderApp('/model/key');
    fireEvent.click(button(await rowOf('旧脚本'), '编辑'));
    const d = await dialogOf('编辑密钥「旧脚本」');
    expect((within(d).getByLabelText('密钥名称') as HTMLInputElement).value).toBe('旧脚本');
    // Its expiry 2026-01-01T00:00Z shows as Beijing time in the picker, whatever the browser zone.
    expect((within(d).getByLabelText('过期时间') as HTMLInputElement).value).toBe('2026-01-01 08:00');
    fireEvent.change(within(d).getByLabelText('密钥名称'), { target: { value: '旧脚本（停用）' } });
    fireEvent.change(within(d).getByLabelText('消费上限（元）'), { target: { value: '0.0001' } });
    fireEvent.click(button(d, /保\s*存/));
    await waitFor(() => expect(callsTo(fetch, keyPath(OLD), 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, keyPath(OLD), 'PUT')[0]!.body).toEqual({ name: '旧脚本（停用）', spendLimit: '1' });
    expect(await rowOf('旧脚本（停用）')).toBeTruthy();
  });

  it('shows the server’s refusal when the account may not use the model service', async () => {
    costServer((url) =>
      url.pathname === KEYS
        ? json(403, { code: 40300002, message: '当前账号没有此操作的权限，请联系主账号开通' })
        : url.pathname === API.modelModels
          ? json(200, { ...page(models, url), providers: [], tags: [] })
          : undefined,
    );
    renderApp('/model/key');
    expect(await screen.findByText('当前账号没有此操作的权限，请联系主账号开通')).toBeTruthy();
    expect(button(document.body, '新建密钥').hasAttribute('disabled')).toBe(true);
  });
});
