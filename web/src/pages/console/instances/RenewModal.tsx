/**
 * 续费: more of a prepaid instance's own cycle. The dialog quotes the chosen duration live, then
 * creates an Unpaid Renew order and hands it to the pay dialog; once paid, expireAt moves forward.
 */
import { useRef, useState } from 'react';
import { Alert, App, Descriptions, Flex, InputNumber, Modal, Skeleton, Space, Typography } from 'antd';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { BillingCycle, BillingCycleUnit, type Instance, type Order, type OrderStatus } from '@console/contract';
import { INSTANCE_KEYS, instancesApi } from '../../../api/instances';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { formatTime, invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { RENEW_MAX_DURATION, renewedExpiry } from './instanceViews';

export function RenewModal({ instance: i, onClose, onRenewed }: { instance: Instance; onClose: () => void; onRenewed: () => void }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [duration, setDuration] = useState(1);
  const [paying, setPaying] = useState<Order | null>(null);
  /** Where the order in the pay dialog ended up (null: still unpaid), so its closing says the right thing. */
  const outcome = useRef<OrderStatus | null>(null);
  const unit = BillingCycleUnit[i.cycle];

  const quote = useQuery({
    queryKey: INSTANCE_KEYS.renewPrice(i.id, duration),
    queryFn: ({ signal }) => instancesApi.renewPrice(i.id, { duration }, signal),
    placeholderData: keepPreviousData,
    retry: false,
  });

  const renew = useMutation({
    mutationFn: () => instancesApi.renew(i.id, duration),
    onSuccess: (order) => {
      invalidateOrderViews(queryClient);
      outcome.current = null;
      setPaying(order);
    },
  });

  if (paying) {
    return (
      <OrderPayModal
        order={paying}
        onSettled={(status) => {
          outcome.current = status;
          if (status !== 'Success') return;
          void message.success('续费成功');
          onRenewed();
          onClose();
        }}
        onClose={() => {
          if (outcome.current === null) void message.info('续费订单尚未支付，可在账单页继续支付');
          onClose();
        }}
      />
    );
  }

  const fresh = quote.data && !quote.isPlaceholderData;
  return (
    <Modal
      open
      title={`续费实例「${i.name}」`}
      okText="确认续费"
      cancelText="取消"
      okButtonProps={{ disabled: !fresh }}
      confirmLoading={renew.isPending}
      onOk={() => renew.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={520}
    >
      <Flex vertical gap={16}>
        <Descriptions
          column={1}
          size="small"
          items={[
            { key: 'id', label: '实例 ID', children: <span className="mono">{i.id}</span> },
            { key: 'cycle', label: '计费方式', children: `${BillingCycle.label(i.cycle)}（包周期，预付费）` },
            { key: 'expire', label: '当前到期时间', children: formatTime(i.expireAt) },
          ]}
        />
        <Space align="center">
          <Typography.Text>续费时长</Typography.Text>
          <Space.Compact>
            <InputNumber
              aria-label="续费时长"
              min={1}
              max={RENEW_MAX_DURATION}
              precision={0}
              value={duration}
              onChange={(v) => v !== null && setDuration(v)}
              style={{ width: 120 }}
            />
            <Space.Addon>{unit}</Space.Addon>
          </Space.Compact>
          <Typography.Text type="secondary">
            1–{RENEW_MAX_DURATION} {unit}
          </Typography.Text>
        </Space>
        {quote.isError ? (
          <Alert type="error" showIcon title={`询价失败：${quote.error.message}`} />
        ) : !quote.data ? (
          <Skeleton active paragraph={{ rows: 2 }} />
        ) : (
          <Flex vertical gap={8}>
            <ul className="quote-lines" aria-label="费用明细">
              {quote.data.lines.map((line, n) => (
                <li key={n}>
                  <span className="quote-line-name">{line.name}</span>
                  {/* Deductions (cycle discount, voucher) are negative lines. */}
                  <span className={`quote-line-amount${line.amount.startsWith('-') ? ' is-deduction' : ''}`}>
                    {line.amount.startsWith('-') ? '-' : ''}
                    <Price units={line.amount.replace(/^-/, '')} size="sm" />
                  </span>
                </li>
              ))}
            </ul>
            <Flex justify="space-between" align="baseline">
              <Typography.Text>续费金额</Typography.Text>
              <span aria-label="续费金额" data-testid="renew-total">
                <Price units={quote.data.total} size="lg" />
              </span>
            </Flex>
            <Typography.Text type="secondary">
              续费后到期时间：<span data-testid="renew-expiry">{formatTime(renewedExpiry(i, duration))}</span>
            </Typography.Text>
          </Flex>
        )}
      </Flex>
    </Modal>
  );
}
