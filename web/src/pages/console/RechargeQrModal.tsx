import { useEffect, useState } from 'react';
import { Button, Flex, Modal, QRCode, Result, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatYuan, type Recharge } from '@console/contract';
import { billingApi } from '../../api/billing';
import { MONEY_QUERY_KEY } from '../../session/useSession';

const POLL_MS = 2000;

function useSecondsLeft(until: string): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return Math.max(0, Math.floor((Date.parse(until) - now) / 1000));
}

/** The QR code of one recharge, polled until it is paid, expires or is cancelled. */
export function RechargeQrModal({ recharge, onClose }: { recharge: Recharge; onClose: () => void }) {
  const queryClient = useQueryClient();
  const state = useQuery({
    queryKey: ['recharge', recharge.id],
    queryFn: ({ signal }) => billingApi.recharge(recharge.id, signal),
    initialData: recharge,
    refetchInterval: (q) => (q.state.data?.status === 'Unpaid' ? POLL_MS : false),
  });
  const current = state.data;
  const left = useSecondsLeft(current.expiresAt);
  const cancel = useMutation({ mutationFn: () => billingApi.cancelRecharge(recharge.id), onSuccess: () => void state.refetch() });

  useEffect(() => {
    if (current.status !== 'Unpaid') {
      void queryClient.invalidateQueries({ queryKey: MONEY_QUERY_KEY });
      void queryClient.invalidateQueries({ queryKey: ['recharges'] });
    }
  }, [current.status, queryClient]);

  const wallet = current.method === 'Alipay' ? '支付宝' : '微信';
  return (
    <Modal open title={`${wallet}扫码支付`} onCancel={onClose} footer={null} width={420} destroyOnHidden>
      {current.status === 'Paid' ? (
        <Result
          status="success"
          title="充值成功"
          subTitle={`现金 +¥${formatYuan(current.amount)}${current.bonus !== '0' ? `，赠送金 +¥${formatYuan(current.bonus)}` : ''}`}
          extra={<Button type="primary" onClick={onClose}>完成</Button>}
        />
      ) : current.status !== 'Unpaid' || left === 0 ? (
        <Result
          status="warning"
          title={current.status === 'Cancelled' ? '已取消支付' : '二维码已过期'}
          subTitle="如已付款，款项会在确认后自动到账；未付款请重新发起充值。"
          extra={<Button onClick={onClose}>关闭</Button>}
        />
      ) : (
        <Flex vertical align="center" gap={12}>
          <Typography.Text>
            应付金额 <Typography.Text strong style={{ fontSize: 24, color: '#722ed1' }}>¥{formatYuan(current.amount)}</Typography.Text>
          </Typography.Text>
          <QRCode value={current.qrContent} size={200} aria-label="支付二维码" />
          <Typography.Text type="secondary">
            请用{wallet}扫码，{Math.floor(left / 60)} 分 {String(left % 60).padStart(2, '0')} 秒内有效
          </Typography.Text>
          <SandboxHint qrContent={current.qrContent} />
          <Flex gap={8}>
            <Button onClick={() => void state.refetch()} loading={state.isFetching}>
              我已支付
            </Button>
            <Button danger loading={cancel.isPending} onClick={() => cancel.mutate()}>
              取消支付
            </Button>
          </Flex>
        </Flex>
      )}
    </Modal>
  );
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
