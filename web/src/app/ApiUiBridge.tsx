import { useEffect } from 'react';
import { App } from 'antd';
import { setApiUi } from '../api/ui';

/**
 * Hands the request layer antd's context-aware message and modal (themed, zh_CN) and the
 * router's navigate, once they exist. Renders nothing.
 */
export function ApiUiBridge({ navigate }: { navigate: (to: string) => void }) {
  const { message, modal } = App.useApp();
  useEffect(
    () =>
      setApiUi({
        success: (content) => void message.success(content),
        error: (content, key) => void message.error({ content, key }),
        warning: (content, key) => void message.warning({ content, key }),
        confirm: (config) => void modal.confirm(config),
        navigate,
      }),
    [message, modal, navigate],
  );
  return null;
}
