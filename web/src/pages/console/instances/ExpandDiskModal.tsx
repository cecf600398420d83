/**
 * 数据盘扩容: the new total size, quoted live. Prepaid instances pay the added GB for the time left
 * until expiry as a ChangeDataDisk order in the pay dialog (the disk grows once it is paid);
 * post-paid ones pay nothing up front, the daily data-disk charge follows the new size.
 */
import { useRef, useState } from 'react';
import { Alert, App, Descriptions, Flex, InputNumber, Modal, Skeleton, Space, Typography } from 'antd';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { MAX_DATA_DISK_GB, formatYuan, type Order, type OrderStatus } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { INSTANCE_KEYS } from '../../../api/instances';
import { STORAGE_KEYS, storageApi } from '../../../api/storage';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { formatTime, invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { MONEY_QUERY_KEY } from '../../../session/useSession';

/** What the dialog needs of an instance: from the instance itself or from a row of the data-disk list. */
export interface DiskTarget {
  id: string;
  name: string;
  sizeGb: number;
  freeGb: number;
  prepaid: boolean;
  expireAt: string | null;
  /** Why it cannot be expanded now (running, expired…); null when it can. */
  blocked: string | null;
}

/** The size first offered: 100 GB more, within the limit. */
const STEP_GB = 100;

export function ExpandDiskModal({ target: t, onClose }: { target: DiskTarget; onClose: () => void }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [size, setSize] = useState(Math.min(t.sizeGb + STEP_GB, MAX_DATA_DISK_GB));
  const [paying, setPaying] = useState<Order | null>(null);
  /** Where the order in the pay dialog ended up (null: still unpaid), so its closing says the right thing. */
  const outcome = useRef<OrderStatus | null>(null);

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.logsAll });
    void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.disks });
    void queryClient.invalidateQueries({ queryKey: MONEY_QUERY_KEY });
  };

  const quote = useQuery({
    queryKey: STORAGE_KEYS.diskPrice(t.id, size),
    queryFn: ({ signal }) => storageApi.diskPrice(t.id, size, signal),
    placeholderData: keepPreviousData,
    retry: false,
  });

  const expand = useMutation({
    mutationFn: () => storageApi.expandDisk(t.id, size),
    onSuccess: ({ order }) => {
      refresh();
      if (order) {
        invalidateOrderViews(queryClient);
        outcome.current = null;
        setPaying(order);
        return;
      }
      void message.success(`扩容已开始，完成后数据盘为 ${size} GB`);
      onClose();
    },
  });

  if (paying) {
    return (
      <OrderPayModal
        order={paying}
        onSettled={(status) => {
          outcome.current = status;
          refresh();
          if (status !== 'Success') return;
          void message.success(`扩容订单已支付，数据盘正在扩容至 ${size} GB`);
          onClose();
        }}
        onClose={() => {
          if (outcome.current === null) void message.info('扩容订单尚未支付，可在账单页继续支付');
          onClose();
        }}
      />
    );
  }

  const q = quote.data;
  const fresh = q && !quote.isPlaceholderData && !quote.isError;
  const max = q?.maxGb ?? MAX_DATA_DISK_GB;
  return (
    <Modal
      open
      title={`数据盘扩容「${t.name}」`}
      okText={t.prepaid ? '提交订单' : '确认扩容'}
      cancelText="取消"
      okButtonProps={{ disabled: !fresh || t.blocked !== null }}
      confirmLoading={expand.isPending}
      onOk={() => expand.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={520}
    >
      <Flex vertical gap={16}>
        {t.blocked && <Alert type="warning" showIcon title={t.blocked} description="数据盘扩容需在实例关机（或无卡模式关机）后进行。" />}
        <Descriptions
          column={1}
          size="small"
          items={[
            { key: 'current', label: '当前容量', children: `${t.sizeGb} GB（免费 ${t.freeGb} GB）` },
            { key: 'billing', label: '计费方式', children: t.prepaid ? `包周期，到期 ${formatTime(t.expireAt)}` : '按量计费' },
          ]}
        />
        <Space align="center" wrap>
          <Typography.Text>扩容至</Typography.Text>
          <Space.Compact>
            <InputNumber
              aria-label="扩容后容量"
              min={t.sizeGb + 1}
              max={max}
              precision={0}
              value={size}
              onChange={(v) => v !== null && setSize(v)}
              style={{ width: 140 }}
            />
            <Space.Addon>GB</Space.Addon>
          </Space.Compact>
          <Typography.Text type="secondary">
            {t.sizeGb + 1}–{max} GB，只能扩大不能缩小
          </Typography.Text>
        </Space>
        {quote.isError ? (
          <Alert type="error" showIcon title={`询价失败：${isApiError(quote.error) && quote.error.detail ? quote.error.detail : quote.error.message}`} />
        ) : !q ? (
          <Skeleton active paragraph={{ rows: 2 }} />
        ) : (
          <Flex vertical gap={8}>
            <ul className="quote-lines" aria-label="费用明细">
              {q.quote.lines.map((line, n) => (
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
              <Typography.Text>{q.prepaid ? '应付金额' : '现在支付'}</Typography.Text>
              <span data-testid="expand-total">
                <Price units={q.quote.total} size="lg" />
              </span>
            </Flex>
            <Typography.Text type="secondary" data-testid="expand-note">
              {q.prepaid
                ? `按剩余 ${q.remainingHours} 小时折算，支付后扩容至 ${q.newGb} GB；续费时按新容量计价。`
                : BigInt(q.dailyPriceAfter) > 0n
                  ? `按量计费实例扩容无需预付：扩容至 ${q.newGb} GB 后，超出免费 ${q.freeGb} GB 的部分每天 ¥${formatYuan(q.dailyPriceAfter)}，关机后仍计费。`
                  : `按量计费实例扩容无需预付：扩容至 ${q.newGb} GB 后仍在免费容量内，不收费。`}
            </Typography.Text>
          </Flex>
        )}
      </Flex>
    </Modal>
  );
}
