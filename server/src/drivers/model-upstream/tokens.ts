/**
 * Token counting with OpenAI's `o200k_base` encoding (gpt-tokenizer ships its ranks, no download):
 * the embedded model works on these token ids, and the gateway counts with them when an upstream
 * reports no usage.
 */
import type { ChatCompletionRequest, ChatContentPart, ChatMessage } from '@console/contract';
import { decode as decodeTokens, encode as encodeWith } from 'gpt-tokenizer/encoding/o200k_base';

/** Text that looks like a special token (`<|endoftext|>`) is ordinary text here: it never throws, never becomes a control token. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export function encode(text: string): number[] {
  return encodeWith(text, PLAIN_TEXT);
}

export function decode(tokens: readonly number[]): string {
  return decodeTokens(tokens);
}

export function countTokens(text: string): number {
  return text.length === 0 ? 0 : encode(text).length;
}

/** The text of a message: its string content, or its text parts joined (other parts, e.g. images, carry no text here). */
export function messageText(message: Pick<ChatMessage, 'content'>): string {
  const { content } = message;
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

/**
 * The chat template the embedded model reads its prompt through (ChatML, as OpenAI's chat models):
 *
 *     <|im_start|>{name or role}<|im_sep|>{content}<|im_end|>      for each message
 *     <|im_start|>assistant<|im_sep|>                               the answer follows
 *
 * Each marker is one token, so a message costs its role (or name) and content tokens plus 3, and the
 * answer's priming 3 more (`assistant` is one token) — the count OpenAI's cookbook gives for its chat
 * models.
 */
export const CHAT_TOKENS_PER_MESSAGE = 3;
export const CHAT_REPLY_PRIMING_TOKENS = 3;

export function chatPromptTokens(messages: readonly ChatMessage[]): number {
  let total = CHAT_REPLY_PRIMING_TOKENS;
  for (const message of messages) total += CHAT_TOKENS_PER_MESSAGE + countTokens(message.name ?? message.role) + countTokens(messageText(message));
  return total;
}

/**
 * What an image part is held at (the upstream, not this tokenizer, counts images): OpenAI's figure
 * for a low-detail image, and otherwise the most its tile formula charges (a 2048×768 image:
 * 85 + 8 tiles × 170), so a hold never counts an image short.
 */
export const IMAGE_TOKENS_LOW_DETAIL = 85;
export const IMAGE_TOKENS = 1445;

/** Request fields an upstream puts into the prompt besides the messages: counted by their JSON. */
const PROMPT_FIELDS = ['tools', 'functions', 'tool_choice', 'function_call', 'response_format'] as const;

/**
 * The prompt tokens a chat request may cost upstream, for the gateway's hold (a key's spend limit
 * is passed by at most one call's estimate only when nothing sent is left out): the messages as
 * chatPromptTokens counts them, plus the tokens of the JSON of what else they carry (tool calls,
 * tool_call_id, non-text parts; images at a fixed figure) and of the request's tools, functions,
 * tool_choice and response_format (a json_schema included). JSON is a little longer than what an
 * upstream renders from it: the estimate errs high.
 */
export function chatRequestPromptTokens(req: ChatCompletionRequest): number {
  let total = CHAT_REPLY_PRIMING_TOKENS;
  for (const message of req.messages) total += CHAT_TOKENS_PER_MESSAGE + messageTokens(message);
  for (const field of PROMPT_FIELDS) total += jsonTokens(req[field]);
  return total;
}

function messageTokens(message: ChatMessage): number {
  const { role, content, name, ...rest } = message;
  let total = countTokens(name ?? role) + jsonTokens(Object.keys(rest).length ? rest : undefined);
  if (typeof content === 'string') total += countTokens(content);
  else if (content) for (const part of content) total += partTokens(part);
  return total;
}

function partTokens(part: ChatContentPart): number {
  if (part.type === 'image_url') return (part.image_url as { detail?: unknown } | undefined)?.detail === 'low' ? IMAGE_TOKENS_LOW_DETAIL : IMAGE_TOKENS;
  if (part.type === 'text' && typeof part.text === 'string') return countTokens(part.text);
  return jsonTokens(part);
}

function jsonTokens(value: unknown): number {
  return value == null ? 0 : countTokens(JSON.stringify(value));
}
