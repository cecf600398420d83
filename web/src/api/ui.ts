import type { ReactNode } from 'react';
import { message, Modal, type ModalFuncProps } from 'antd';

/**
 * The UI side effects of the request layer (spec §8), injected so the layer can be tested
 * without a DOM and so it uses the App-context message/modal (themed, zh_CN) once mounted.
 */
export interface ApiUi {
  success(content: string): void;
  /** `key` lets a burst of identical failures (e.g. many 401s) show one toast. */
  error(content: ReactNode, key?: string): void;
  /** `key` as for error: a repeated warning replaces the one on screen. */
  warning(content: ReactNode, key?: string): void;
  confirm(config: ModalFuncProps): void;
  navigate(to: string): void;
  reload(): void;
  /** Path + query + hash of the page the user is on. */
  currentUrl(): string;
  isEmbedded(): boolean;
  postToParent(message: string): void;
}

export const browserUi: ApiUi = {
  success: (content) => void message.success(content),
  error: (content, key) => void message.error({ content, key }),
  warning: (content, key) => void message.warning({ content, key }),
  confirm: (config) => void Modal.confirm(config),
  navigate: (to) => window.location.assign(to),
  reload: () => window.location.reload(),
  currentUrl: () => window.location.pathname + window.location.search + window.location.hash,
  isEmbedded: () => window.self !== window.top,
  postToParent: (msg) => window.parent.postMessage(msg, '*'),
};

let current: ApiUi = browserUi;

export function getApiUi(): ApiUi {
  return current;
}

/** Replaces some of the side effects; returns a function that restores the previous ones. */
export function setApiUi(overrides: Partial<ApiUi>): () => void {
  const previous = current;
  current = { ...current, ...overrides };
  return () => {
    current = previous;
  };
}
