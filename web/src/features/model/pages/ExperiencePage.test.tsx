import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { ApiKey, Conversation, ConversationSaveRequest, ConversationSummary, Model } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { costServer } from '../../../test/fixtures/cost';
import { user } from '../../../test/fixtures/user';

const MODELS = '/api/v1/model/models';
const CONVERSATIONS = '/api/v1/model/conversations';
const KEYS = '/api/v1/model/keys';
const CHAT = '/v1/chat/completions';

const model = (over: Partial<Model>): Model => ({
  id: 'qwen-chat',
  name: 'Qwen Chat',
  provider: '通义千问',
  type: 'chat',
  contextLength: 32768,
  inputPricePerMillion: '20000', // ¥2 / 百万
  outputPricePerMillion: '80000', // ¥8 / 百万
  tags: [],
  description: '',
  ...over,
});
const MODEL_LIST = [
  model({}),
  model({ id: 'deepseek-v3', name: 'DeepSeek V3', provider: 'DeepSeek' }),
  model({ id: 'bge-m3', name: 'BGE M3', type: 'embedding', outputPricePerMillion: '0' }),
];

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'qwen-chat', choices: [{ index: 0, delta: { content } }] })}\n\n`;
const usage = (prompt: number, completion: number) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'qwen-chat', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`;

/** The streamed answer the test feeds piece by piece; aborting the request errors the body as a browser does. */
interface Stream {
  push(text: string): void;
  close(): void;
  signal: AbortSignal;
  body: unknown;
}

const CONV_ID = '3b0e6f1c-7a52-4d8a-9c1e-2a4b5c6d7e8f';
const saved: Conversation = {
  id: CONV_ID,
  title: '旧会话：介绍一下长城',
  model: 'deepseek-v3',
  system: '你是导游',
  temperature: 1.2,
  maxTokens: 512,
  updatedAt: '2026-11-20T08:00:00.000Z',
  messages: [
    { role: 'user', content: '介绍一下长城' },
    { role: 'assistant', content: '长城是中国古代的军事防御工程。', usage: { promptTokens: 10, completionTokens: 20, cost: '2' } },
  ],
};
const summary = (c: Conversation): ConversationSummary => ({
  id: c.id,
  title: c.title,
  model: c.model,
  messageCount: c.messages.length,
  updatedAt: c.updatedAt,
});

const key: ApiKey = {
  id: 'k1',
  name: '生产环境',
  maskedKey: 'sk-abcd…wxyz',
  enabled: true,
  expired: false,
  expiresAt: null,
  spendLimit: null,
  spent: '0',
  allowedModels: [],
  allowedIps: [],
  rpmLimit: null,
  tpmLimit: null,
  lastUsedAt: null,
  createdAt: '2026-11-01T00:00:00.000Z',
};

/**
 * The model endpoints: the models, the conversations (kept across calls), the keys, and the chat
 * answered by `chat` (a stream the test drives, or a Response).
 */
function playgroundServer(opts: { chat?: () => Response; conversations?: Conversation[] } = {}) {
  const conversations = new Map((opts.conversations ?? []).map((c) => [c.id, c]));
  const streams: Stream[] = [];
  const fetch = costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === MODELS) return json(200, { items: MODEL_LIST, total: MODEL_LIST.length, page: 1, pageSize: 100, providers: [], tags: [] });
    if (url.pathname === KEYS) return json(200, { items: [key], total: 1, page: 1, pageSize: 100, limit: 50 });
    if (url.pathname === CONVERSATIONS) return json(200, { list: [...conversations.values()].map(summary) });
    if (url.pathname.startsWith(`${CONVERSATIONS}/`)) {
      const id = url.pathname.slice(CONVERSATIONS.length + 1);
      if (method === 'PUT') {
        const body = JSON.parse(String(init!.body)) as ConversationSaveRequest;
        const c = { ...body, id, updatedAt: '2026-11-23T10:00:00.000Z' };
        conversations.set(id, c);
        return json(200, c);
      }
      if (method === 'DELETE') {
        conversations.delete(id);
        return json(200, { ok: true });
      }
      const c = conversations.get(id);
      return c ? json(200, c) : json(404, { code: 40400001, message: '会话不存在' });
    }
    if (url.pathname === CHAT) {
      if (opts.chat) return opts.chat();
      const enc = new TextEncoder();
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
      const signal = init!.signal!;
      signal.addEventListener('abort', () => controller.error(new DOMException('The user aborted a request.', 'AbortError')));
      streams.push({ push: (t) => controller.enqueue(enc.encode(t)), close: () => controller.close(), signal, body: init!.body });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    }
    return undefined;
  });
  return { fetch, streams, conversations };
}

const llmUser = { ...user, usingLLM: true };
beforeEach(() => session.setLogin('console-token', llmUser));
afterEach(() => vi.unstubAllGlobals());

/** The welcome of a new conversation; the first mount compiles the lazy page, so allow for it. */
const welcome = (name: string) => screen.findByText(`开始与 ${name} 对话`, undefined, { timeout: 15_000 });
const inputBox = () => screen.getByRole('textbox', { name: '输入消息' });
function type(text: string) {
  fireEvent.change(inputBox(), { target: { value: text } });
  fireEvent.keyDown(inputBox(), { key: 'Enter' });
}

describe('the online experience', () => {
  it('streams the answer into view, shows its tokens and cost, and saves the conversation', async () => {
    const { fetch, streams } = playgroundServer();
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    fireEvent.change(screen.getByLabelText('系统提示词'), { target: { value: '你是一名诗人' } });
    type('写一首关于秋天的诗，要求七言绝句');

    await waitFor(() => expect(streams).toHaveLength(1));
    const [call] = callsTo(fetch, CHAT, 'POST');
    expect((call!.init!.headers as Record<string, string>).Authorization).toBe('Bearer console-token');
    expect(call!.body).toEqual({
      model: 'qwen-chat',
      messages: [
        { role: 'system', content: '你是一名诗人' },
        { role: 'user', content: '写一首关于秋天的诗，要求七言绝句' },
      ],
      temperature: 0.7,
      max_tokens: 1024,
      stream: true,
      stream_options: { include_usage: true },
    });
    // The question is in view at once, the answer grows as it arrives, 停止 replaces 发送.
    expect(screen.getByLabelText('我的消息').textContent).toBe('写一首关于秋天的诗，要求七言绝句');
    streams[0]!.push(chunk('秋风'));
    await waitFor(() => expect(screen.getByLabelText('模型回答').textContent).toContain('秋风'));
    expect(screen.getByRole('button', { name: /停止/ })).toBeTruthy();
    streams[0]!.push(chunk('萧瑟'));
    await waitFor(() => expect(screen.getByLabelText('模型回答').textContent).toContain('秋风萧瑟'));
    expect(callsTo(fetch, `${CONVERSATIONS}/`, 'PUT')).toHaveLength(0);

    streams[0]!.push(usage(12, 34) + 'data: [DONE]\n\n');
    streams[0]!.close();
    // 12 × ¥2/百万 + 34 × ¥8/百万 = ¥0.00000296… → rounded up to ¥0.0001 units: ¥0.0003
    expect(await screen.findByText(/输入 12 Tokens · 输出 34 Tokens/)).toBeTruthy();
    expect(screen.getByText('约 ¥0.0003')).toBeTruthy();
    expect(screen.getByRole('button', { name: /发送/ })).toBeTruthy();

    await waitFor(() => expect(fetch.mock.calls.some(([, init]) => init?.method === 'PUT')).toBe(true));
    const put = fetch.mock.calls.find(([, init]) => init?.method === 'PUT')!;
    const url = new URL(String(put[0]), 'http://localhost');
    expect(url.pathname).toMatch(/^\/api\/v1\/model\/conversations\/[0-9a-f-]{36}$/);
    expect(JSON.parse(String(put[1]!.body))).toEqual({
      model: 'qwen-chat',
      system: '你是一名诗人',
      temperature: 0.7,
      maxTokens: 1024,
      title: '写一首关于秋天的诗，要求七言绝句'.slice(0, 20),
      messages: [
        { role: 'user', content: '写一首关于秋天的诗，要求七言绝句' },
        { role: 'assistant', content: '秋风萧瑟', usage: { promptTokens: 12, completionTokens: 34, cost: '3' } },
      ],
    });
    // The saved conversation shows up in the list, current.
    const list = await screen.findByRole('navigation', { name: '会话列表' });
    await waitFor(() => expect(within(list).getByRole('button', { current: true }).textContent).toContain('写一首关于秋天的诗'));
  });

  it('sends the earlier turns with the next question, in the same conversation', async () => {
    const { fetch, streams } = playgroundServer();
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    type('第一问');
    await waitFor(() => expect(streams).toHaveLength(1));
    streams[0]!.push(chunk('第一答') + usage(3, 3) + 'data: [DONE]\n\n');
    await screen.findByText(/输入 3 Tokens/);
    await waitFor(() => expect(callsTo(fetch, CHAT, 'POST')).toHaveLength(1));
    type('第二问');
    await waitFor(() => expect(streams).toHaveLength(2));
    const body = JSON.parse(String(streams[1]!.body)) as { messages: unknown[] };
    expect(body.messages).toEqual([
      { role: 'user', content: '第一问' },
      { role: 'assistant', content: '第一答' },
      { role: 'user', content: '第二问' },
    ]);
    streams[1]!.push(chunk('第二答') + usage(9, 3) + 'data: [DONE]\n\n');
    await waitFor(() => expect(fetch.mock.calls.filter(([, init]) => init?.method === 'PUT')).toHaveLength(2));
    const puts = fetch.mock.calls.filter(([, init]) => init?.method === 'PUT');
    expect(String(puts[1]![0])).toBe(String(puts[0]![0]));
    expect((JSON.parse(String(puts[1]![1]!.body)) as { messages: unknown[]; title: string }).messages).toHaveLength(4);
  });

  it('stops the answer with 停止: the request is aborted and the part that came is kept', async () => {
    const { fetch, streams } = playgroundServer();
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    type('讲一个很长的故事');
    await waitFor(() => expect(streams).toHaveLength(1));
    streams[0]!.push(chunk('从前有座山'));
    await waitFor(() => expect(screen.getByLabelText('模型回答').textContent).toContain('从前有座山'));

    fireEvent.click(screen.getByRole('button', { name: /停止/ }));
    expect(streams[0]!.signal.aborted).toBe(true);
    expect(await screen.findByText('已停止生成')).toBeTruthy();
    expect(screen.getByLabelText('模型回答').textContent).toBe('从前有座山');
    expect(screen.getByRole('button', { name: /发送/ })).toBeTruthy();
    await waitFor(() => expect(fetch.mock.calls.some(([, init]) => init?.method === 'PUT')).toBe(true));
    const put = fetch.mock.calls.find(([, init]) => init?.method === 'PUT')!;
    expect((JSON.parse(String(put[1]!.body)) as ConversationSaveRequest).messages).toEqual([
      { role: 'user', content: '讲一个很长的故事' },
      { role: 'assistant', content: '从前有座山' },
    ]);
  });

  it('shows the gateway message of a 402 with a link to recharge, and saves nothing', async () => {
    const { fetch } = playgroundServer({
      chat: () =>
        json(402, {
          error: {
            message: '余额不足以支付本次调用的预估费用（约 ¥0.01）：请充值或购买大模型 Token 包后重试，或调小 max_tokens',
            type: 'insufficient_quota',
            code: 'insufficient_quota',
          },
        }),
    });
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    type('你好');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('余额不足以支付本次调用的预估费用（约 ¥0.01）');
    expect(within(alert).getByRole('link', { name: '去充值' }).getAttribute('href')).toBe('/console/recharge');
    expect(screen.getByLabelText('我的消息').textContent).toBe('你好');
    await new Promise((r) => setTimeout(r, 50));
    expect(fetch.mock.calls.some(([, init]) => init?.method === 'PUT')).toBe(false);
  });

  it('shows an error that arrives in the middle of the stream and answers again with 重试', async () => {
    const { fetch, streams } = playgroundServer();
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    type('你好');
    await waitFor(() => expect(streams).toHaveLength(1));
    streams[0]!.push(chunk('你') + 'data: {"error":{"message":"上游模型服务出错，请稍后重试","type":"api_error","code":"upstream_error"}}\n\n');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('上游模型服务出错，请稍后重试');
    expect(alert.textContent).toContain('已生成的部分不会保存');

    fireEvent.click(within(alert).getByRole('button', { name: '重试' }));
    await waitFor(() => expect(streams).toHaveLength(2));
    expect((JSON.parse(String(streams[1]!.body)) as { messages: unknown[] }).messages).toEqual([{ role: 'user', content: '你好' }]);
    streams[1]!.push(chunk('你好！') + usage(2, 2) + 'data: [DONE]\n\n');
    await screen.findByText(/输入 2 Tokens/);
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getAllByLabelText('我的消息')).toHaveLength(1);
    await waitFor(() => expect(fetch.mock.calls.some(([, init]) => init?.method === 'PUT')).toBe(true));
  });

  it('preselects the model of ?model= (the square links with it) and calls it', async () => {
    const { streams } = playgroundServer();
    renderApp('/model/experience?model=deepseek-v3');
    expect(await welcome('DeepSeek V3')).toBeTruthy();
    expect(screen.getByText(/DeepSeek · 上下文 32,768 Tokens/)).toBeTruthy();
    type('你好');
    await waitFor(() => expect(streams).toHaveLength(1));
    expect((JSON.parse(String(streams[0]!.body)) as { model: string }).model).toBe('deepseek-v3');
  });

  it('says so when ?model= is not a chat model, and uses another', async () => {
    playgroundServer();
    renderApp('/model/experience?model=bge-m3');
    expect(await screen.findByText('模型「bge-m3」不存在或不支持对话，已为您选择其他模型', undefined, { timeout: 15_000 })).toBeTruthy();
    expect(screen.getByText('开始与 Qwen Chat 对话')).toBeTruthy();
  });

  it('opens a saved conversation with its settings, and deletes one after confirmation', async () => {
    const { fetch } = playgroundServer({ conversations: [saved] });
    renderApp('/model/experience');
    const list = await screen.findByRole('navigation', { name: '会话列表' }, { timeout: 15_000 });
    fireEvent.click(within(list).getByText('旧会话：介绍一下长城'));
    expect(await screen.findByText('长城是中国古代的军事防御工程。')).toBeTruthy();
    expect(screen.getByText(/输入 10 Tokens · 输出 20 Tokens/)).toBeTruthy();
    expect((screen.getByLabelText('系统提示词') as HTMLTextAreaElement).value).toBe('你是导游');
    expect(screen.getByText(/DeepSeek · 上下文/)).toBeTruthy();

    fireEvent.click(screen.getByRole('button', { name: '删除会话 旧会话：介绍一下长城' }));
    expect(callsTo(fetch, `${CONVERSATIONS}/${CONV_ID}`, 'DELETE')).toHaveLength(0);
    fireEvent.click(await screen.findByRole('button', { name: '删除' }));
    await waitFor(() => expect(callsTo(fetch, `${CONVERSATIONS}/${CONV_ID}`, 'DELETE')).toHaveLength(1));
    // The open conversation was the one deleted: back to a new one.
    expect(await welcome('DeepSeek V3')).toBeTruthy();
    expect(await screen.findByText('暂无会话，发送第一条消息后会自动保存')).toBeTruthy();
  });

  it('shows the same call as code against the gateway, with the key prefixes and where to create a key', async () => {
    playgroundServer();
    renderApp('/model/experience');
    await welcome('Qwen Chat');
    fireEvent.change(inputBox(), { target: { value: '草稿问题' } });
    fireEvent.click(screen.getByRole('button', { name: /查看代码/ }));
    const code = await screen.findByLabelText('示例代码');
    expect(code.textContent).toContain(`base_url="${window.location.origin}/v1"`);
    expect(code.textContent).toContain('api_key=os.environ["API_KEY"]');
    expect(code.textContent).toContain('model="qwen-chat"');
    expect(code.textContent).toContain('"content": "草稿问题"');
    fireEvent.click(screen.getByText('cURL'));
    await waitFor(() => expect(screen.getByLabelText('示例代码').textContent).toContain('-H "Authorization: Bearer $API_KEY"'));
    expect(screen.getByLabelText('示例代码').textContent).toContain(`curl ${window.location.origin}/v1/chat/completions`);
    expect(await screen.findByText('生产环境：sk-abcd…wxyz')).toBeTruthy();
    expect(screen.getByRole('link', { name: '前往 API KEY 页面创建' }).getAttribute('href')).toBe('/model/key');
  });
});
