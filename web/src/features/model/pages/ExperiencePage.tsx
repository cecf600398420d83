import { useEffect, useRef, useState } from 'react';
import { Alert, App, Button, Card, Col, Flex, Input, Row, Space, Typography } from 'antd';
import { CodeOutlined, SendOutlined, StopOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { CONVERSATION_MESSAGES_MAX, PAGE, type ConversationMessage, type ConversationSaveRequest } from '@console/contract';
import { reactToError } from '../../../api/client';
import { ApiError } from '../../../api/errors';
import {
  answerCost,
  ChatError,
  PLAYGROUND_KEYS,
  playgroundApi,
  streamChat,
  type ChatRequest,
  type ChatRequestMessage,
  playgroundQueries,
} from '../api/modelPlayground';
import { getApiUi } from '../../../api/ui';
import { PageFrame } from '../../../components/PageFrame';
import { formatUnitPrice } from '../../../components/Price';
import { ExperienceCodeDrawer } from '../components/ExperienceCodeDrawer';
import { ExperienceConversationList } from '../components/ExperienceConversationList';
import { ExperienceMessages, type ChatEntry } from '../components/ExperienceMessages';
import { DEFAULT_SETTINGS, ExperienceSettings, type PlaygroundSettings } from '../components/ExperienceSettings';

const INPUT_MAX = 32_000;
const TITLE_CHARS = 20;

let keySeq = 0;
const newKey = () => `m${++keySeq}`;

/** What is kept of a conversation: the questions and the answers that came (whole or stopped). */
const kept = (entries: ChatEntry[]) => entries.filter((e) => e.role === 'user' || ((e.status === 'done' || e.status === 'stopped') && e.content !== ''));

/** The conversation's title: the first 20 characters of its first question. */
function conversationTitle(entries: ChatEntry[]): string {
  const first = entries.find((e) => e.role === 'user')?.content ?? '';
  const title = Array.from(first.replace(/\s+/g, ' ').trim()).slice(0, TITLE_CHARS).join('');
  return title || '新会话';
}

const toSaved = (e: ChatEntry): ConversationMessage => (e.usage ? { role: e.role, content: e.content, usage: e.usage } : { role: e.role, content: e.content });

/**
 * /model/experience — the chat playground: saved conversations on the left, the chat in the middle
 * (streamed through the OpenAI-compatible gateway, signed with the console session and charged like
 * any call), the model and its parameters on the right, 「查看代码」 for the same call with an API key.
 */
export default function ExperiencePage() {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [params] = useSearchParams();
  const urlModel = params.get('model');

  const models = useQuery(playgroundQueries.models());
  const conversations = useQuery(playgroundQueries.conversations());

  const [settings, setSettings] = useState<PlaygroundSettings>({ model: urlModel ?? '', ...DEFAULT_SETTINGS });
  const [conversationId, setConversationId] = useState<string | null>(null);
  const [entries, setEntries] = useState<ChatEntry[]>([]);
  const [input, setInput] = useState('');
  const [streaming, setStreaming] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [openingId, setOpeningId] = useState<string | null>(null);
  const [codeOpen, setCodeOpen] = useState(false);
  const abortRef = useRef<AbortController | null>(null);
  const scrollRef = useRef<HTMLDivElement>(null);

  const chatModels = (models.data?.items ?? []).filter((m) => m.type === 'chat');
  const current = chatModels.find((m) => m.id === settings.model) ?? (models.isSuccess ? chatModels[0] : undefined);
  const missingModel = models.isSuccess && urlModel && settings.model === urlModel && current?.id !== urlModel ? urlModel : null;

  // Leaving the page stops the answer (what was produced is charged, as with 停止).
  useEffect(() => () => abortRef.current?.abort(), []);
  // Follow the answer as it grows.
  useEffect(() => {
    const box = scrollRef.current;
    if (box) box.scrollTop = box.scrollHeight;
  }, [entries]);

  const remove = useMutation({
    mutationFn: (id: string) => playgroundApi.deleteConversation(id),
    onSuccess: (_, id) => {
      if (id === conversationId) startNew();
      queryClient.removeQueries({ queryKey: PLAYGROUND_KEYS.conversation(id) });
      void queryClient.invalidateQueries({ queryKey: PLAYGROUND_KEYS.conversations });
    },
  });

  function startNew() {
    setConversationId(null);
    setEntries([]);
    setNotice(null);
  }

  async function open(id: string) {
    setOpeningId(id);
    try {
      const c = await queryClient.fetchQuery({ ...playgroundQueries.conversation(id), staleTime: 0 });
      setConversationId(c.id);
      setEntries(c.messages.map((m) => ({ key: newKey(), role: m.role, content: m.content, usage: m.usage, status: 'done' })));
      setSettings({ model: c.model, system: c.system, temperature: c.temperature, maxTokens: c.maxTokens });
      setNotice(null);
    } catch (e) {
      message.error(`会话加载失败：${e instanceof Error ? e.message : '请稍后重试'}`);
    } finally {
      setOpeningId(null);
    }
  }

  /** The call the conversation makes next (and 「查看代码」 shows): system prompt first. */
  function chatRequest(history: ChatEntry[]): ChatRequest {
    const messages: ChatRequestMessage[] = [
      ...(settings.system.trim() ? [{ role: 'system' as const, content: settings.system }] : []),
      ...history.map((e) => ({ role: e.role, content: e.content })),
    ];
    return { model: current?.id ?? settings.model, messages, temperature: settings.temperature, maxTokens: settings.maxTokens };
  }

  async function save(id: string, history: ChatEntry[], s: PlaygroundSettings) {
    const body: ConversationSaveRequest = { ...s, title: conversationTitle(history), messages: history.map(toSaved) };
    try {
      await playgroundApi.saveConversation(id, body);
      void queryClient.invalidateQueries({ queryKey: PLAYGROUND_KEYS.conversations });
      queryClient.removeQueries({ queryKey: PLAYGROUND_KEYS.conversation(id) });
    } catch (e) {
      setNotice(`本次对话未能保存：${e instanceof Error ? e.message : '请稍后重试'}`);
    }
  }

  /** Asks for the answer to `history` (which ends with a question) and saves the conversation after it. */
  async function run(history: ChatEntry[]) {
    if (!current) return;
    const s: PlaygroundSettings = { ...settings, model: current.id };
    const model = current;
    const id = conversationId ?? crypto.randomUUID();
    setConversationId(id);
    const key = newKey();
    setEntries([...history, { key, role: 'assistant', content: '', status: 'streaming' }]);
    setStreaming(true);
    setNotice(null);
    const controller = new AbortController();
    abortRef.current = controller;
    let text = '';
    let answer: ChatEntry;
    try {
      const result = await streamChat(chatRequest(history), {
        signal: controller.signal,
        onDelta: (delta) => {
          text += delta;
          const content = text;
          setEntries((es) => es.map((e) => (e.key === key ? { ...e, content } : e)));
        },
      });
      const usage = result.usage && !result.stopped ? { ...result.usage, cost: answerCost(model, result.usage) } : undefined;
      answer = { key, role: 'assistant', content: result.content, usage, status: result.stopped ? 'stopped' : 'done', finishReason: result.finishReason };
    } catch (e) {
      const error = e instanceof ChatError ? e : new ChatError('回答失败，请稍后重试', 0);
      // An ended session is handled as everywhere: message, back to the login page.
      if (error.status === 401) reactToError(new ApiError('http', error.message, 401), getApiUi());
      answer = { key, role: 'assistant', content: text, status: 'error', error };
    } finally {
      abortRef.current = null;
      setStreaming(false);
    }
    const all = [...history, answer];
    setEntries(all);
    if (answer.status !== 'error' && answer.content !== '') await save(id, kept(all), s);
  }

  function send(raw = input) {
    const text = raw.trim();
    if (!text || streaming || !current) return;
    const history = kept(entries);
    if (history.length + 2 > CONVERSATION_MESSAGES_MAX) {
      setNotice(`一个会话最多 ${CONVERSATION_MESSAGES_MAX} 条消息，本会话已满，请点击「新建会话」继续`);
      return;
    }
    setInput('');
    void run([...history, { key: newKey(), role: 'user', content: text, status: 'done' }]);
  }

  function retry() {
    const history = kept(entries);
    if (history[history.length - 1]?.role === 'user') void run(history);
  }

  const stop = () => abortRef.current?.abort();

  const costSum = entries.reduce((sum, e) => sum + BigInt(e.usage?.cost ?? 0), 0n);
  const noModel = models.isSuccess && chatModels.length === 0;
  const codeHistory = kept(entries);
  const codeRequest = chatRequest(codeHistory.length ? codeHistory : [{ key: 'draft', role: 'user', content: input.trim() || '你好', status: 'done' }]);

  return (
    <PageFrame
      extra={
        <Button icon={<CodeOutlined />} onClick={() => setCodeOpen(true)} disabled={!current}>
          查看代码
        </Button>
      }
    >
      <Row gutter={[16, 16]}>
        <Col xs={24} lg={6} xl={5}>
          <ExperienceConversationList
            conversations={conversations}
            currentId={conversationId}
            busy={streaming}
            openingId={openingId}
            onNew={startNew}
            onOpen={(id) => void open(id)}
            onDelete={(id) => remove.mutateAsync(id)}
          />
        </Col>
        <Col xs={24} lg={18} xl={13}>
          <Card size="small" styles={{ body: { padding: 0 } }}>
            <Flex vertical style={{ height: 'calc(100vh - 200px)', minHeight: 480 }}>
              <div ref={scrollRef} style={{ flex: 1, overflow: 'auto', padding: 16 }}>
                <ExperienceMessages entries={entries} modelName={current?.name} busy={streaming} onExample={setInput} onRetry={retry} />
              </div>
              <div style={{ borderTop: '1px solid #f0f0f0', padding: 12 }}>
                {noModel && <Alert type="warning" showIcon style={{ marginBottom: 8 }} title="暂无可用的对话模型，请稍后再来或联系客服" />}
                {notice && <Alert type="warning" showIcon closable={{ onClose: () => setNotice(null) }} style={{ marginBottom: 8 }} title={notice} />}
                <Input.TextArea
                  aria-label="输入消息"
                  value={input}
                  onChange={(e) => setInput(e.target.value)}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                      e.preventDefault();
                      send();
                    }
                  }}
                  placeholder="输入消息，Enter 发送，Shift + Enter 换行"
                  autoSize={{ minRows: 2, maxRows: 8 }}
                  maxLength={INPUT_MAX}
                  variant="borderless"
                />
                <Flex justify="space-between" align="center" gap={8} wrap style={{ marginTop: 8 }}>
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    {costSum > 0n ? `本会话约 ¥${formatUnitPrice(costSum.toString())}，` : ''}
                    按实际 Tokens 计费，明细见 <Link to={PAGE.modelStats}>用量统计</Link>
                  </Typography.Text>
                  <Space>
                    {streaming ? (
                      <Button danger icon={<StopOutlined />} onClick={stop}>
                        停止
                      </Button>
                    ) : (
                      <Button type="primary" icon={<SendOutlined />} onClick={() => send()} disabled={!input.trim() || !current}>
                        发送
                      </Button>
                    )}
                  </Space>
                </Flex>
              </div>
            </Flex>
          </Card>
        </Col>
        <Col xs={24} xl={6}>
          <ExperienceSettings
            models={models}
            chatModels={chatModels}
            current={current}
            settings={settings}
            onChange={(patch) => setSettings((s) => ({ ...s, ...patch }))}
            missingModel={missingModel}
            disabled={streaming}
          />
        </Col>
      </Row>
      <ExperienceCodeDrawer open={codeOpen} onClose={() => setCodeOpen(false)} request={codeRequest} />
    </PageFrame>
  );
}
