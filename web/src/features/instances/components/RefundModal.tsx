/**
 * 退订: release a prepaid instance early and get back the unused whole days of what was paid, in
 * the proportion of cash and gift credit it was paid with (the server's quote; vouchers are not
 * returned). The instance and its data are destroyed: the user confirms that explicitly.
 */
import { useState } from 'react';
import { Alert, App, Checkbox, Descriptions, Flex, Modal, Skeleton, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Instance } from '@console/contract';
import { instancesApi, instanceQueries } from '../api/instances';
import { formatTime, invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { QuoteTotal } from './QuoteOrderModal';

export function RefundModal({ instance: i, onClose, onSettled }: { instance: Instance; onClose: () => void; onSettled: (answer?: unknown) => void }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [agreed, setAgreed] = useState(false);
  const quote = useQuery({
    ...instanceQueries.refundPrice(i.id),
    retry: false,
    gcTime: 0,
  });
  const refund = useMutation({
    mutationFn: () => instancesApi.refund(i.id),
    onSettled: (answer) => onSettled(answer?.instance),
    onSuccess: (done) => {
      invalidateOrderViews(queryClient);
      void message.success(`已退订，退款订单 ${done.orderUid}`);
      onClose();
    },
  });
  const q = quote.data;
  return (
    <Modal
      open
      title={`退订实例「${i.name}」`}
      okText="确认退订并释放"
      okButtonProps={{ danger: true, disabled: !q || !agreed }}
      cancelText="取消"
      confirmLoading={refund.isPending}
      onOk={() => refund.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={560}
    >
      {quote.isError ? (
        <Alert type="error" showIcon title={`不能退订：${quote.error.message}`} />
      ) : !q ? (
        <Skeleton active paragraph={{ rows: 4 }} />
      ) : (
        <Flex vertical gap={16}>
          <Descriptions
            column={1}
            size="small"
            bordered
            items={[
              {
                key: 'id',
                label: '实例',
                children: (
                  <span>
                    {i.name}（<span className="mono">{i.id}</span>）
                  </span>
                ),
              },
              { key: 'expire', label: '到期时间', children: formatTime(q.expireAt) },
              {
                key: 'paid',
                label: '已付金额',
                children: (
                  <span data-testid="refund-paid">
                    <Price units={q.paid} size="sm" />
                    {BigInt(q.paidVoucher) > 0n && (
                      <>
                        （其中代金券 <Price units={q.paidVoucher} size="sm" />
                        ，不退）
                      </>
                    )}
                  </span>
                ),
              },
              {
                key: 'days',
                label: '已使用 / 已付',
                children: <span data-testid="refund-days">{`${q.usedDays} 天 / ${q.totalDays} 天，未使用 ${q.unusedDays} 天`}</span>,
              },
              { key: 'refundable', label: '可退金额', children: <Price units={q.refundable} size="sm" /> },
              {
                key: 'fee',
                label: '手续费',
                children: (
                  <span data-testid="refund-fee">
                    <Price units={q.fee} size="sm" />（{Number(q.feeRate) * 100}%）
                  </span>
                ),
              },
              {
                key: 'cash',
                label: '退回现金余额',
                children: (
                  <span data-testid="refund-cash">
                    <Price units={q.toCash} size="sm" />
                  </span>
                ),
              },
              {
                key: 'gift',
                label: '退回赠送金',
                children: (
                  <span data-testid="refund-gift">
                    <Price units={q.toGift} size="sm" />
                  </span>
                ),
              },
            ]}
          />
          <QuoteTotal label="实退金额" units={q.refund} testId="refund-total" strong />
          <Typography.Text type="secondary">退订规则：{q.rule}</Typography.Text>
          <Alert type="warning" showIcon title="退订后实例将立即释放，系统盘和数据盘的数据将被销毁，无法恢复。请先备份需要保留的数据。" />
          <Checkbox checked={agreed} onChange={(e) => setAgreed(e.target.checked)}>
            我已了解：实例「{i.name}」及其全部数据将被销毁
          </Checkbox>
        </Flex>
      )}
    </Modal>
  );
}
