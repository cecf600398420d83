/**
 * 日转月 and 转长期租用: the dialog quotes the conversion live (the Month price less the unused value
 * of the current Day period; or the Week/Month price of a post-paid instance), states the rule, then
 * creates the order and hands it to the pay dialog. Paid, the instance has its new cycle and expiry.
 */
import { useState } from 'react';
import { Alert, Radio, Space, Typography } from 'antd';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { BillingCycle, type Instance } from '@console/contract';
import { instancesApi, instanceQueries } from '../api/instances';
import { formatTime } from '../../../components/orderViews';
import { UnitNumberInput } from '../../../components/UnitNumberInput';
import { QuoteOrderModal } from './QuoteOrderModal';

export type ConvertMode = 'dayToMonth' | 'transfer';

const TITLE: Record<ConvertMode, string> = { dayToMonth: '日转月', transfer: '转长期租用' };

export function ConvertModal({
  instance: i,
  mode,
  onClose,
  onConverted,
}: {
  instance: Instance;
  mode: ConvertMode;
  onClose: () => void;
  onConverted: () => void;
}) {
  const [cycle, setCycle] = useState<'Week' | 'Month'>('Month');
  const [duration, setDuration] = useState(1);
  const title = TITLE[mode];

  const quote = useQuery({
    ...instanceQueries.conversionPrice(i.id, mode === 'transfer' ? { cycle, duration } : null),
    placeholderData: keepPreviousData,
    retry: false,
  });

  return (
    <QuoteOrderModal
      title={`${title}「${i.name}」`}
      okText={`确认${title}`}
      width={540}
      details={[
        { key: 'id', label: '实例 ID', children: <span className="mono">{i.id}</span> },
        { key: 'cycle', label: '当前计费方式', children: BillingCycle.label(i.cycle) },
        ...(mode === 'dayToMonth' ? [{ key: 'expire', label: '当前到期时间', children: formatTime(i.expireAt) }] : []),
      ]}
      quote={quote}
      totalLabel="应付金额"
      totalTestId="convert-total"
      footer={(q) => (
        <>
          <Typography.Text type="secondary">
            支付后到期时间：<span data-testid="convert-expiry">{formatTime(q.expireAt)}</span>
          </Typography.Text>
          <Alert type="info" showIcon title={q.rule} />
        </>
      )}
      create={() => (mode === 'dayToMonth' ? instancesApi.dayToMonth(i.id) : instancesApi.transfer(i.id, { cycle, duration }))}
      paidText={`${title}成功`}
      unpaidText={`${title}订单尚未支付，可在账单页继续支付`}
      onDone={onConverted}
      onClose={onClose}
    >
      {mode === 'transfer' && (
        <Space align="center" wrap>
          <Radio.Group
            aria-label="长期租用方式"
            value={cycle}
            onChange={(e) => setCycle(e.target.value as 'Week' | 'Month')}
            options={[
              { value: 'Week', label: '包周' },
              { value: 'Month', label: '包月' },
            ]}
            optionType="button"
          />
          <UnitNumberInput label="租用时长" unit={cycle === 'Week' ? '周' : '月'} min={1} max={12} value={duration} onChange={setDuration} width={100} />
        </Space>
      )}
    </QuoteOrderModal>
  );
}
