import { useEffect, useState } from 'react';
import { App, Button } from 'antd';
import type { SmsScene } from '@console/contract';
import { userApi } from '../../api/user';

const DEFAULT_RESEND_SECONDS = 60;

/**
 * '获取验证码' with the 60 s countdown of the API. `getMobile` validates the mobile field first
 * and rejects when it is invalid, so no code is requested for a bad number.
 */
export function SmsCodeButton({ scene, getMobile }: { scene: SmsScene; getMobile: () => Promise<string> }) {
  const { message } = App.useApp();
  const [secondsLeft, setSecondsLeft] = useState(0);
  const [sending, setSending] = useState(false);

  useEffect(() => {
    if (secondsLeft <= 0) return;
    const timer = setTimeout(() => setSecondsLeft((s) => s - 1), 1000);
    return () => clearTimeout(timer);
  }, [secondsLeft]);

  async function send() {
    let mobile: string;
    try {
      mobile = await getMobile();
    } catch {
      return; // the form already shows what is wrong with the number
    }
    setSending(true);
    try {
      const sent = await userApi.sendSmsCode({ mobile, scene });
      setSecondsLeft(sent.resendIn || DEFAULT_RESEND_SECONDS);
      message.success('验证码已发送');
      if (import.meta.env.DEV) void showDevCode(mobile);
    } catch {
      // the request layer has shown the reason (e.g. 42900001 too frequent)
    } finally {
      setSending(false);
    }
  }

  /** Development only: the embedded SMS driver keeps codes in an outbox instead of texting them. */
  async function showDevCode(mobile: string) {
    const outbox = await userApi.devOutbox(mobile).catch(() => undefined);
    const code = outbox?.items[0]?.code;
    if (code) message.info(`开发环境验证码：${code}`);
  }

  return (
    <Button onClick={send} loading={sending} disabled={secondsLeft > 0} style={{ width: 132 }}>
      {secondsLeft > 0 ? `${secondsLeft} 秒后重新获取` : '获取验证码'}
    </Button>
  );
}
