/**
 * Token counting with OpenAI's `o200k_base` encoding (gpt-tokenizer ships its ranks, no download):
 * the embedded model works on these token ids, and the gateway counts with them when an upstream
 * reports no usage.
 */
import type { ChatMessage } from '@console/contract';
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
