/**
 * The online experience (chat playground) of the model service: the streamed chat through the
 * OpenAI-compatible gateway under /v1 (signed with the console session), the conversations kept per
 * user, the chat models with their prices and the keys the code snippets point to.
 */
import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  type ApiKeyPage,
  type ChatCompletionChunk,
  type Conversation,
  type ConversationSaveRequest,
  type ConversationSummary,
  type Model,
  type ModelPage,
} from '@console/contract';
import { session } from '../../../session/store';
import { BASES } from '../../../api/bases';
import { api } from '../../../api/client';

export const PLAYGROUND_KEYS = {
  models: ['model', 'playground', 'chatModels'] as const,
  conversations: ['model', 'playground', 'conversations'] as const,
  conversation: (id: string) => ['model', 'playground', 'conversation', id] as const,
  keys: ['model', 'playground', 'keys'] as const,
};

export const playgroundApi = {
  /** Every chat model of the square (the catalogue is small: one page of 100). */
  chatModels: (signal?: AbortSignal) =>
    api.get<ModelPage>(API.modelModels, { filterBy: formatFilterBy({ type: 'chat' }), page: 1, pageSize: 100 }, { signal, silent: true }),
  conversations: (signal?: AbortSignal) => api.get<{ list: ConversationSummary[] }>(API.modelConversations, undefined, { signal, silent: true }),
  conversation: (id: string, signal?: AbortSignal) => api.get<Conversation>(API.modelConversation, { id }, { signal, silent: true }),
  /** Saved after each answer; the page shows a failure next to the input itself. */
  saveConversation: (id: string, body: ConversationSaveRequest) => api.put<Conversation>(API.modelConversation, { ...body, id }, { silent: true }),
  deleteConversation: (id: string) => api.delete<unknown>(API.modelConversation, { id }, { successMessage: '会话已删除' }),
  /** Only the masked prefixes: the server never returns a secret twice. */
  keys: (signal?: AbortSignal) => api.get<ApiKeyPage>(API.modelKeys, { page: 1, pageSize: 100 }, { signal, silent: true }),
};

// ---------------------------------------------------------------------------------------------
// Server-sent events

/**
 * Splits a server-sent event stream into the `data` of its events, whatever way the bytes were cut
 * into reads: `push` each decoded piece and get the events it completed; `end` returns an event the
 * stream left without its closing blank line. Comments (`: keep-alive`) and other fields are skipped;
 * several `data:` lines of one event are joined with "\n" (the SSE rules).
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];

  push(text: string): string[] {
    this.buffer += text;
    const events: string[] = [];
    for (;;) {
      const cut = this.buffer.search(/\r\n|\r|\n/);
      if (cut < 0) break;
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next read.
      if (this.buffer[cut] === '\r' && cut === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + (this.buffer.startsWith('\r\n', cut) ? 2 : 1));
      this.line(line, events);
    }
    return events;
  }

  end(): string[] {
    const events: string[] = [];
    if (this.buffer) this.line(this.buffer.replace(/\r$/, ''), events);
    this.buffer = '';
    if (this.data.length) events.push(this.data.join('\n'));
    this.data = [];
    return events;
  }

  private line(line: string, events: string[]) {
    if (line === '') {
      if (this.data.length) events.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}

// ---------------------------------------------------------------------------------------------
// The streamed chat

export interface ChatRequestMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatRequestMessage[];
  temperature: number;
  maxTokens: number;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatResult {
  content: string;
  /** Absent when the stream ended without the usage chunk. */
  usage?: ChatUsage;
  finishReason: string | null;
  /** The user stopped it: `content` is what arrived before (charged for, without a usage here). */
  stopped: boolean;
}

/** Why a chat call failed, in the gateway's words (`{ error: { message, type, code } }`). */
export class ChatError extends Error {
  override readonly name = 'ChatError';
  constructor(
    message: string,
    /** HTTP status; 0 for a network failure, and for an error event in the middle of the stream. */
    readonly status: number,
    readonly type?: string,
    readonly code?: string,
    /** The answer had started: what arrived before the error is kept. */
    readonly midStream = false,
  ) {
    super(message);
  }
}

/** The chat completions endpoint of the gateway, on the console's own API origin. */
export const chatCompletionsUrl = () => `${BASES.main.url}/v1/chat/completions`;

/** What a code snippet sets as the client's base URL: the gateway's absolute address. */
export function gatewayBaseUrl(): string {
  const base = new URL(BASES.main.url || '/', window.location.origin);
  return `${base.origin}${base.pathname.replace(/\/$/, '')}/v1`;
}

/** The request body the gateway gets (OpenAI's wire names); the code snippets reproduce it. */
export function chatBody(req: ChatRequest, stream = true) {
  return {
    model: req.model,
    messages: req.messages,
    temperature: req.temperature,
    max_tokens: req.maxTokens,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

const STATUS_MESSAGES: Record<number, string> = {
  401: '登录已过期，请重新登录',
  402: '余额不足，请充值后重试',
  403: '当前账号没有使用大模型服务的权限',
  404: '模型不存在或已下线，请换一个模型',
  429: '请求过于频繁，请稍后再试',
};

function errorOf(payload: unknown): { message?: string; type?: string; code?: string } {
  if (typeof payload !== 'object' || payload === null || !('error' in payload)) return {};
  const e = (payload as { error: unknown }).error;
  if (typeof e === 'string') return { message: e };
  if (typeof e !== 'object' || e === null) return {};
  const { message, type, code } = e as Record<string, unknown>;
  return {
    message: typeof message === 'string' && message ? message : undefined,
    type: typeof type === 'string' ? type : undefined,
    code: typeof code === 'string' || typeof code === 'number' ? String(code) : undefined,
  };
}

async function httpChatError(res: Response): Promise<ChatError> {
  let payload: unknown;
  try {
    payload = JSON.parse(await res.text());
  } catch {
    payload = undefined;
  }
  const e = errorOf(payload);
  const fallback = STATUS_MESSAGES[res.status] ?? (res.status >= 500 ? '模型服务暂时不可用，请稍后重试' : `请求失败（HTTP ${res.status}）`);
  return new ChatError(e.message ?? fallback, res.status, e.type, e.code);
}

/**
 * Sends the conversation to the gateway and reads the streamed answer: `onDelta` gets the text as
 * it arrives; resolves with the whole answer and the usage of the final chunk. When `signal` aborts
 * (停止) it resolves with what arrived until then and `stopped`. Rejects with a ChatError: HTTP
 * error, error event, broken stream.
 */
export async function streamChat(req: ChatRequest, opts: { signal?: AbortSignal; onDelta: (text: string) => void }): Promise<ChatResult> {
  const { signal } = opts;
  const result: ChatResult = { content: '', finishReason: null, stopped: false };
  const stopped = () => ({ ...result, stopped: true });
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'text/event-stream' };
  const token = session.getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(chatCompletionsUrl(), { method: 'POST', headers, body: JSON.stringify(chatBody(req)), signal });
  } catch {
    if (signal?.aborted) return stopped();
    throw new ChatError('网络异常，请检查网络连接后重试', 0);
  }
  if (!res.ok) throw await httpChatError(res);
  if (!res.body) throw new ChatError('服务器没有返回内容，请稍后重试', res.status);

  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let done = false;
  // Whatever the fetch does with the signal, a pending read ends when the user stops.
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', onAbort, { once: true });

  const handle = (data: string) => {
    if (done) return;
    if (data === '[DONE]') {
      done = true;
      return;
    }
    let chunk: Partial<ChatCompletionChunk> & { error?: unknown };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      throw new ChatError('服务器返回的数据格式不正确，请稍后重试', 0, undefined, undefined, result.content !== '');
    }
    if (chunk.error !== undefined && chunk.error !== null) {
      const e = errorOf(chunk);
      throw new ChatError(e.message ?? '模型服务出错，回答中断，请重试', 0, e.type, e.code, true);
    }
    const choice = chunk.choices?.[0];
    const text = choice?.delta?.content;
    if (text) {
      result.content += text;
      opts.onDelta(text);
    }
    if (choice?.finish_reason) result.finishReason = choice.finish_reason;
    if (chunk.usage) result.usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
  };

  try {
    while (!done) {
      if (signal?.aborted) return stopped();
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch {
        if (signal?.aborted) return stopped();
        throw new ChatError('连接中断，回答不完整，请重试', 0, undefined, undefined, true);
      }
      if (signal?.aborted) return stopped();
      if (read.done) {
        parser.push(decoder.decode());
        parser.end().forEach(handle);
        if (!done && !result.usage && !result.finishReason) throw new ChatError('连接中断，回答不完整，请重试', 0, undefined, undefined, true);
        break;
      }
      parser.push(decoder.decode(read.value, { stream: true })).forEach(handle);
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (done) void reader.cancel().catch(() => undefined);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Money

/**
 * What an answer costs at list price, in 0.0001 yuan: prompt and completion tokens at the model's
 * per-million prices, rounded up to a whole unit. 大模型 Token 包 may pay for it instead.
 */
export function answerCost(model: Pick<Model, 'inputPricePerMillion' | 'outputPricePerMillion'>, usage: ChatUsage): string {
  const total = BigInt(usage.promptTokens) * BigInt(model.inputPricePerMillion) + BigInt(usage.completionTokens) * BigInt(model.outputPricePerMillion);
  return ((total + 999_999n) / 1_000_000n).toString();
}

/** One factory per endpoint read by the page: key and request travel together. */
export const playgroundQueries = {
  models: () => queryOptions({ queryKey: PLAYGROUND_KEYS.models, queryFn: ({ signal }) => playgroundApi.chatModels(signal) }),
  conversations: () => queryOptions({ queryKey: PLAYGROUND_KEYS.conversations, queryFn: ({ signal }) => playgroundApi.conversations(signal) }),
  conversation: (id: string) => queryOptions({ queryKey: PLAYGROUND_KEYS.conversation(id), queryFn: ({ signal }) => playgroundApi.conversation(id, signal) }),
  keys: () => queryOptions({ queryKey: PLAYGROUND_KEYS.keys, queryFn: ({ signal }) => playgroundApi.keys(signal) }),
};
