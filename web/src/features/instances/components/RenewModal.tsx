/**
 * 续费: more of a prepaid instance's own cycle. The dialog quotes the chosen duration live, then
 * creates an Unpaid Renew order and hands it to the pay dialog; once paid, expireAt moves forward.
 */
import { useState } from 'react';
import { Space, Typography } from 'antd';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { BillingCycleUnit, type Instance } from '@console/contract';
import { instancesApi, instanceQueries } from '../api/instances';
import { formatTime } from '../../../components/orderViews';
import { UnitNumberInput } from '../../../components/UnitNumberInput';
import { RENEW_MAX_DURATION, prepaidTermItems, renewedExpiry } from './instanceViews';
import { QuoteOrderModal } from './QuoteOrderModal';

export function RenewModal({ instance: i, onClose, onRenewed }: { instance: Instance; onClose: () => void; onRenewed: () => void }) {
  const [duration, setDuration] = useState(1);
  const unit = BillingCycleUnit[i.cycle];

  const quote = useQuery({
    ...instanceQueries.renewPrice(i.id, duration),
    placeholderData: keepPreviousData,
    retry: false,
  });

  return (
    <QuoteOrderModal
      title={`续费实例「${i.name}」`}
      okText="确认续费"
      details={[{ key: 'id', label: '实例 ID', children: <span className="mono">{i.id}</span> }, ...prepaidTermItems(i)]}
      quote={quote}
      totalLabel="续费金额"
      totalTestId="renew-total"
      footer={() => (
        <Typography.Text type="secondary">
          续费后到期时间：<span data-testid="renew-expiry">{formatTime(renewedExpiry(i, duration))}</span>
        </Typography.Text>
      )}
      create={() => instancesApi.renew(i.id, duration)}
      paidText="续费成功"
      unpaidText="续费订单尚未支付，可在账单页继续支付"
      onDone={onRenewed}
      onClose={onClose}
    >
      <Space align="center">
        <Typography.Text>续费时长</Typography.Text>
        <UnitNumberInput label="续费时长" unit={unit} min={1} max={RENEW_MAX_DURATION} value={duration} onChange={setDuration} width={120} />
        <Typography.Text type="secondary">
          1–{RENEW_MAX_DURATION} {unit}
        </Typography.Text>
      </Space>
    </QuoteOrderModal>
  );
}
