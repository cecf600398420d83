/**
 * Paying by Alipay or WeChat QR code, as the order pay dialog and the recharge dialog both do: the
 * wallet choice, the code with its amount and time left, polling until the gateway has answered,
 * and the state of a code that can no longer be paid.
 */
import type { CSSProperties, ReactNode } from 'react';
import { Button, Flex, QRCode, Radio, Result, theme, Typography } from 'antd';
import { AlipayCircleOutlined, WechatOutlined } from '@ant-design/icons';
import { useQuery, type QueryKey } from '@tanstack/react-query';
import { formatYuan, type PaymentMethod } from '@console/contract';
import { formatCountdown, useSecondsLeft } from './orderViews';

export type Wallet = Exclude<PaymentMethod, 'Balance'>;

/** How a QR payment is asked about while it is open: often enough that a paid code closes within seconds. */
export const QR_POLL_MS = 2000;

export const WALLET_LABEL: Record<Wallet, string> = { Alipay: '支付宝', Wechat: '微信' };

/** The wallets' own brand colours, not the console's theme. */
const WALLET_ICON: Record<Wallet, ReactNode> = {
  Alipay: <AlipayCircleOutlined style={{ color: '#1677ff' }} />,
  Wechat: <WechatOutlined style={{ color: '#52c41a' }} />,
};

/** 支付宝 / 微信支付 as buttons of the caller's Radio.Group (which may offer more, like the balance). */
export function WalletOptions({ disabled, style }: { disabled?: boolean; style?: CSSProperties }) {
  return (
    <>
      <Radio.Button value="Alipay" disabled={disabled} style={style}>
        {WALLET_ICON.Alipay} 支付宝
      </Radio.Button>
      <Radio.Button value="Wechat" disabled={disabled} style={style}>
        {WALLET_ICON.Wechat} 微信支付
      </Radio.Button>
    </>
  );
}

/**
 * One QR payment followed until it ends: asked again every 2 s while `pollWhile` says it is under
 * way, and counted down to `expiresAt`. `check` is 我已支付: ask now rather than at the next tick.
 */
export function useQrPayment<T>({
  queryKey,
  queryFn,
  pollWhile,
  expiresAt,
  initialData,
  enabled,
}: {
  queryKey: QueryKey;
  queryFn: (signal: AbortSignal) => Promise<T>;
  pollWhile: (data: T | undefined) => boolean;
  expiresAt: string | null | undefined;
  initialData?: T;
  enabled?: boolean;
}) {
  const query = useQuery({
    queryKey,
    queryFn: ({ signal }) => queryFn(signal),
    initialData,
    enabled,
    refetchInterval: (q) => (pollWhile(q.state.data) ? QR_POLL_MS : false),
  });
  const secondsLeft = useSecondsLeft(expiresAt);
  return { query, secondsLeft, expired: secondsLeft === 0, checking: query.isFetching, check: () => void query.refetch() };
}

export interface QrCodePayment {
  method: Wallet;
  /** What the code asks for, in 0.0001-yuan units. */
  amount: string;
  qrContent: string;
}

/**
 * The code to scan: the amount, the code, the time left, and 我已支付 beside the caller's other way
 * out (another method, or cancelling). `verb` says what the scan does: 请用支付宝扫码{verb}.
 */
export function QrPayPanel({
  payment,
  secondsLeft,
  verb,
  checking,
  onCheck,
  otherAction,
}: {
  payment: QrCodePayment;
  secondsLeft: number;
  verb: string;
  checking: boolean;
  onCheck: () => void;
  otherAction: ReactNode;
}) {
  const { token } = theme.useToken();
  return (
    <Flex vertical align="center" gap={12}>
      <Typography.Text>
        应付金额{' '}
        <Typography.Text strong style={{ fontSize: 24, color: token.colorPrimary }}>
          ¥{formatYuan(payment.amount)}
        </Typography.Text>
      </Typography.Text>
      <QRCode value={payment.qrContent} size={200} aria-label="支付二维码" />
      <Typography.Text type="secondary">
        请用{WALLET_LABEL[payment.method]}扫码{verb}，{formatCountdown(secondsLeft)}内有效
      </Typography.Text>
      <SandboxHint qrContent={payment.qrContent} />
      <Flex gap={8}>
        {otherAction}
        <Button type="primary" onClick={onCheck} loading={checking}>
          我已支付
        </Button>
      </Flex>
    </Flex>
  );
}

/** A code that can no longer be paid (expired, closed or cancelled): what happens to money already sent, and the way on. */
export function QrClosed({ title, subTitle, action }: { title: string; subTitle: string; action: ReactNode }) {
  return <Result status="warning" title={title} subTitle={subTitle} extra={action} />;
}

/** The embedded sandbox gateway's QR points at a page of this server: offer it as a link too. */
function SandboxHint({ qrContent }: { qrContent: string }) {
  if (!qrContent.includes('/dev/pay/sandbox/')) return null;
  return (
    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
      当前为内置沙箱支付：
      <a href={qrContent} target="_blank" rel="noreferrer">
        打开沙箱支付页
      </a>
    </Typography.Text>
  );
}
