import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { API, parseFilterBy, type Model } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const SQUARE = '/model/square';

const model = (over: Partial<Model>): Model => ({
  id: 'deepseek-chat',
  name: 'DeepSeek V3',
  provider: 'DeepSeek',
  type: 'chat',
  contextLength: 65536,
  inputPricePerMillion: '20000',
  outputPricePerMillion: '80000',
  tags: ['推理', '中文'],
  description: '通用对话模型，擅长代码与数学',
  ...over,
});
const MODELS: Model[] = [
  model({}),
  model({
    id: 'qwen-turbo',
    name: '通义千问 Turbo',
    provider: '阿里云',
    contextLength: 131072,
    inputPricePerMillion: '3000',
    outputPricePerMillion: '6005',
    tags: ['中文'],
  }),
  model({
    id: 'bge-m3',
    name: 'BGE M3',
    provider: 'BAAI',
    type: 'embedding',
    contextLength: 8192,
    inputPricePerMillion: '5000',
    outputPricePerMillion: '0',
    tags: ['向量检索'],
    description: '多语言向量模型',
  }),
];

/** The square as the server answers it: keyword and filterBy applied, every provider and tag of the catalogue. */
function squareServer(models = MODELS) {
  return costServer((url) => {
    if (url.pathname !== API.modelModels) return undefined;
    const f = parseFilterBy(url.searchParams.get('filterBy') ?? undefined);
    const keyword = url.searchParams.get('keyword')?.toLowerCase();
    const hits = models.filter(
      (m) =>
        (!keyword || `${m.id} ${m.name} ${m.description}`.toLowerCase().includes(keyword)) &&
        (!f.provider || m.provider === f.provider) &&
        (!f.type || m.type === f.type) &&
        (!f.tag || m.tags.includes(f.tag)),
    );
    return json(200, { ...page(hits, url), providers: [...new Set(models.map((m) => m.provider))], tags: [...new Set(models.flatMap((m) => m.tags))] });
  });
}

const cardOf = async (name: string) => screen.findByRole('article', { name });
const filterBys = (fetch: ReturnType<typeof squareServer>) => callsTo(fetch, API.modelModels).map((c) => c.url.searchParams.get('filterBy'));
const choose = (group: string, option: string) => fireEvent.click(within(screen.getByRole('radiogroup', { name: group })).getByText(option));

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('模型广场', () => {
  it('shows each model with its id, provider, type, context length and prices per million tokens', async () => {
    const fetch = squareServer();
    renderApp(SQUARE);
    const ds = await cardOf('DeepSeek V3');
    expect(within(ds).getByText('deepseek-chat')).toBeTruthy();
    expect(within(ds).getByText('DeepSeek')).toBeTruthy();
    expect(within(ds).getByText('对话')).toBeTruthy();
    expect(within(ds).getByText('64K Token')).toBeTruthy();
    expect(within(ds).getByText('¥2.00 / 百万 Token')).toBeTruthy();
    expect(within(ds).getByText('¥8.00 / 百万 Token')).toBeTruthy();
    expect(within(ds).getByText('推理')).toBeTruthy();
    // A price set to the 0.0001 yuan keeps its precision.
    const qwen = await cardOf('通义千问 Turbo');
    expect(within(qwen).getByText('128K Token')).toBeTruthy();
    expect(within(qwen).getByText('¥0.6005 / 百万 Token')).toBeTruthy();
    const bge = await cardOf('BGE M3');
    expect(within(bge).getByText('向量')).toBeTruthy();
    expect(within(bge).getByText('¥0.50 / 百万 Token')).toBeTruthy();
    expect(within(bge).queryByText('在线体验')).toBeNull();
    expect(screen.getByText('共 3 个模型')).toBeTruthy();
    expect(callsTo(fetch, API.modelModels)[0]!.url.search).toBe('?page=1&pageSize=12');
    // How to call it: the gateway of this console, and where keys are made.
    expect(screen.getByText(`${window.location.origin}/v1`)).toBeTruthy();
    expect(screen.getByText('「API KEY」').closest('a')!.getAttribute('href')).toBe('/model/key');
  });

  it('filters by provider, type and tag through filterBy and searches by keyword, each from page 1', async () => {
    const fetch = squareServer();
    const router = renderApp(`${SQUARE}?page=2`);
    await screen.findByRole('radiogroup', { name: '提供方' });
    expect(callsTo(fetch, API.modelModels)[0]!.url.searchParams.get('page')).toBe('2');

    choose('提供方', '阿里云');
    await waitFor(() => expect(filterBys(fetch).at(-1)).toBe('provider,阿里云'));
    expect(callsTo(fetch, API.modelModels).at(-1)!.url.searchParams.get('page')).toBe('1');
    await waitFor(() => expect(screen.queryByRole('article', { name: 'DeepSeek V3' })).toBeNull());
    expect(await cardOf('通义千问 Turbo')).toBeTruthy();

    choose('提供方', '全部提供方');
    choose('类型', '向量');
    await waitFor(() => expect(filterBys(fetch).at(-1)).toBe('type,embedding'));
    choose('标签', '向量检索');
    await waitFor(() => expect(filterBys(fetch).at(-1)).toBe('type,embedding,tag,向量检索'));
    expect(await cardOf('BGE M3')).toBeTruthy();
    expect(router.state.location.search).toBe('?type=embedding&tag=%E5%90%91%E9%87%8F%E6%A3%80%E7%B4%A2');

    choose('类型', '全部类型');
    choose('标签', '全部标签');
    await waitFor(() => expect(filterBys(fetch).at(-1)).toBeNull());
    fireEvent.change(screen.getByLabelText('搜索模型'), { target: { value: ' qwen ' } });
    fireEvent.keyDown(screen.getByLabelText('搜索模型'), { key: 'Enter', code: 'Enter', keyCode: 13 });
    await waitFor(() => expect(callsTo(fetch, API.modelModels).at(-1)!.url.searchParams.get('keyword')).toBe('qwen'));
    await waitFor(() => expect(screen.queryAllByRole('article').map((a) => a.getAttribute('aria-label'))).toEqual(['通义千问 Turbo']));
  });

  it('says when nothing matches and clears the filters on request', async () => {
    const fetch = squareServer();
    renderApp(`${SQUARE}?keyword=gpt-9&provider=DeepSeek`);
    expect(await screen.findByText('没有符合条件的模型')).toBeTruthy();
    expect(callsTo(fetch, API.modelModels)[0]!.url.searchParams.get('filterBy')).toBe('provider,DeepSeek');
    fireEvent.click(screen.getByText('清除筛选条件').closest('button')!);
    expect(await cardOf('DeepSeek V3')).toBeTruthy();
    expect(callsTo(fetch, API.modelModels).at(-1)!.url.search).toBe('?page=1&pageSize=12');
  });

  it('opens the online experience with the chat model chosen', async () => {
    squareServer();
    const router = renderApp(SQUARE);
    fireEvent.click(
      within(await cardOf('通义千问 Turbo'))
        .getByText('在线体验')
        .closest('button')!,
    );
    await waitFor(() => expect(router.state.location.pathname).toBe('/model/experience'));
    expect(router.state.location.search).toBe('?model=qwen-turbo');
  });

  it('shows why the models did not load and retries', async () => {
    let fail = true;
    costServer((url) => {
      if (url.pathname !== API.modelModels) return undefined;
      if (fail) return json(503, { code: 50300001, message: '模型目录暂不可用，请稍后重试' });
      return json(200, { ...page(MODELS, url), providers: [], tags: [] });
    });
    renderApp(SQUARE);
    expect(await screen.findByText('模型目录暂不可用，请稍后重试')).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByText(/^重\s*试$/).closest('button')!);
    expect(await cardOf('DeepSeek V3')).toBeTruthy();
  });
});
