/**
 * 日转月 and 转长期租用: the dialog quotes the conversion live (the Month price less the unused value
 * of the current Day period; or the Week/Month price of a post-paid instance), states the rule, then
 * creates the order and hands it to the pay dialog. Paid, the instance has its new cycle and expiry.
 */
import { useRef, useState } from 'react';
import { Alert, App, Descriptions, Flex, InputNumber, Modal, Radio, Skeleton, Space, Typography } from 'antd';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { BillingCycle, type Instance, type Order, type OrderStatus } from '@console/contract';
import { INSTANCE_KEYS, instancesApi } from '../../../api/instances';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { formatTime, invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';

export type ConvertMode = 'dayToMonth' | 'transfer';

const TITLE: Record<ConvertMode, string> = { dayToMonth: '日转月', transfer: '转长期租用' };

export function ConvertModal({ instance: i, mode, onClose, onConverted }: { instance: Instance; mode: ConvertMode; onClose: () => void; onConverted: () => void }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [cycle, setCycle] = useState<'Week' | 'Month'>('Month');
  const [duration, setDuration] = useState(1);
  const [paying, setPaying] = useState<Order | null>(null);
  const outcome = useRef<OrderStatus | null>(null);
  const title = TITLE[mode];

  const quote = useQuery({
    queryKey: mode === 'dayToMonth' ? INSTANCE_KEYS.dayToMonthPrice(i.id) : INSTANCE_KEYS.transferPrice(i.id, cycle, duration),
    queryFn: ({ signal }) => (mode === 'dayToMonth' ? instancesApi.dayToMonthPrice(i.id, signal) : instancesApi.transferPrice(i.id, { cycle, duration }, signal)),
    placeholderData: keepPreviousData,
    retry: false,
  });

  const create = useMutation({
    mutationFn: () => (mode === 'dayToMonth' ? instancesApi.dayToMonth(i.id) : instancesApi.transfer(i.id, { cycle, duration })),
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
          void message.success(`${title}成功`);
          onConverted();
          onClose();
        }}
        onClose={() => {
          if (outcome.current === null) void message.info(`${title}订单尚未支付，可在账单页继续支付`);
          onClose();
        }}
      />
    );
  }

  const fresh = quote.data && !quote.isPlaceholderData;
  return (
    <Modal
      open
      title={`${title}「${i.name}」`}
      okText={`确认${title}`}
      cancelText="取消"
      okButtonProps={{ disabled: !fresh }}
      confirmLoading={create.isPending}
      onOk={() => create.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={540}
    >
      <Flex vertical gap={16}>
        <Descriptions
          column={1}
          size="small"
          items={[
            { key: 'id', label: '实例 ID', children: <span className="mono">{i.id}</span> },
            { key: 'cycle', label: '当前计费方式', children: BillingCycle.label(i.cycle) },
            ...(mode === 'dayToMonth' ? [{ key: 'expire', label: '当前到期时间', children: formatTime(i.expireAt) }] : []),
          ]}
        />
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
            <Space.Compact>
              <InputNumber aria-label="租用时长" min={1} max={12} precision={0} value={duration} onChange={(v) => v !== null && setDuration(v)} style={{ width: 100 }} />
              <Space.Addon>{cycle === 'Week' ? '周' : '月'}</Space.Addon>
            </Space.Compact>
          </Space>
        )}
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
                  <span className={`quote-line-amount${line.amount.startsWith('-') ? ' is-deduction' : ''}`}>
                    {line.amount.startsWith('-') ? '-' : ''}
                    <Price units={line.amount.replace(/^-/, '')} size="sm" />
                  </span>
                </li>
              ))}
            </ul>
            <Flex justify="space-between" align="baseline">
              <Typography.Text>应付金额</Typography.Text>
              <span aria-label="应付金额" data-testid="convert-total">
                <Price units={quote.data.total} size="lg" />
              </span>
            </Flex>
            <Typography.Text type="secondary">
              支付后到期时间：<span data-testid="convert-expiry">{formatTime(quote.data.expireAt)}</span>
            </Typography.Text>
            <Alert type="info" showIcon title={quote.data.rule} />
          </Flex>
        )}
      </Flex>
    </Modal>
  );
}
