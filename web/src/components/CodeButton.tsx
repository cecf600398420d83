import { useEffect, useState } from 'react';
import { App, Button } from 'antd';
import { userApi } from '../api/user';
import type { CodeSent } from '@console/contract';

const DEFAULT_RESEND_SECONDS = 60;

/**
 * '获取验证码' with the countdown the API asks for. `getTarget` validates the mobile or e-mail field
 * first and rejects when it is invalid, so no code is requested for a bad address.
 */
export function CodeButton({ getTarget, send }: { getTarget: () => Promise<string>; send: (target: string) => Promise<CodeSent> }) {
  const { message } = App.useApp();
  const [secondsLeft, setSecondsLeft] = useState(0);
  const [sending, setSending] = useState(false);

  useEffect(() => {
    if (secondsLeft <= 0) return;
    const timer = setTimeout(() => setSecondsLeft((s) => s - 1), 1000);
    return () => clearTimeout(timer);
  }, [secondsLeft]);

  async function onClick() {
    let target: string;
    try {
      target = await getTarget();
    } catch {
      return; // the form already shows what is wrong with the address
    }
    setSending(true);
    try {
      const sent = await send(target);
      setSecondsLeft(sent.resendIn || DEFAULT_RESEND_SECONDS);
      message.success('验证码已发送');
      if (import.meta.env.DEV) void showDevCode(target);
    } catch {
      // the request layer has shown the reason (e.g. CODE_TOO_FREQUENT)
    } finally {
      setSending(false);
    }
  }

  /** Development only: the embedded SMS and mail drivers keep codes in an outbox instead of sending them. */
  async function showDevCode(target: string) {
    const outbox = await userApi.devOutbox(target).catch(() => undefined);
    const code = outbox?.items[0]?.code;
    if (code) message.info(`开发环境验证码：${code}`);
  }

  return (
    <Button onClick={onClick} loading={sending} disabled={secondsLeft > 0} style={{ width: 132 }}>
      {secondsLeft > 0 ? `${secondsLeft} 秒后重新获取` : '获取验证码'}
    </Button>
  );
}
