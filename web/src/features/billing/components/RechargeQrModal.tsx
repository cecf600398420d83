import { useEffect } from 'react';
import { Button, Modal, Result } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { formatYuan, type Recharge } from '@console/contract';
import { BILLING_KEYS, billingApi } from '../../../api/billing';
import { QrClosed, QrPayPanel, useQrPayment, WALLET_LABEL } from '../../../components/QrPayPanel';

/** The QR code of one recharge, polled until it is paid, expires or is cancelled. */
export function RechargeQrModal({ recharge, onClose }: { recharge: Recharge; onClose: () => void }) {
  const payment = useQrPayment({
    queryKey: BILLING_KEYS.recharge(recharge.id),
    queryFn: (signal) => billingApi.recharge(recharge.id, signal),
    initialData: recharge,
    pollWhile: (r) => r?.status === 'Unpaid',
    expiresAt: recharge.expiresAt,
  });
  const current = payment.query.data ?? recharge;
  const cancel = useMutation({ mutationFn: () => billingApi.cancelRecharge(recharge.id), onSuccess: payment.check });
  useRefreshMoneyWhenSettled(current.status);

  let body;
  if (current.status === 'Paid') body = <RechargePaid recharge={current} onClose={onClose} />;
  else if (current.status !== 'Unpaid' || payment.expired)
    body = (
      <QrClosed
        title={current.status === 'Cancelled' ? '已取消支付' : '二维码已过期'}
        subTitle="如已付款，款项会在确认后自动到账；未付款请重新发起充值。"
        action={<Button onClick={onClose}>关闭</Button>}
      />
    );
  else
    body = (
      <QrPayPanel
        payment={current}
        secondsLeft={payment.secondsLeft}
        verb="充值"
        checking={payment.checking}
        onCheck={payment.check}
        otherAction={
          <Button danger loading={cancel.isPending} onClick={() => cancel.mutate()}>
            取消支付
          </Button>
        }
      />
    );

  return (
    <Modal open title={`${WALLET_LABEL[current.method]}扫码支付`} onCancel={onClose} footer={null} width={420} destroyOnHidden>
      {body}
    </Modal>
  );
}

/** Once the recharge has ended (paid, expired or cancelled), the balance and the history may have moved. */
function useRefreshMoneyWhenSettled(status: Recharge['status']) {
  const queryClient = useQueryClient();
  useEffect(() => {
    if (status === 'Unpaid') return;
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.recharges });
  }, [status, queryClient]);
}

function RechargePaid({ recharge, onClose }: { recharge: Recharge; onClose: () => void }) {
  const bonus = recharge.bonus !== '0' ? `，赠送金 +¥${formatYuan(recharge.bonus)}` : '';
  return (
    <Result
      status="success"
      title="充值成功"
      subTitle={`现金 +¥${formatYuan(recharge.amount)}${bonus}`}
      extra={
        <Button type="primary" onClick={onClose}>
          完成
        </Button>
      }
    />
  );
}
