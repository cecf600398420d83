/**
 * 数据盘扩容: the new total size, quoted live. Prepaid instances pay the added GB for the time left
 * until expiry as a ChangeDataDisk order in the pay dialog (the disk grows once it is paid);
 * post-paid ones pay nothing up front, the daily data-disk charge follows the new size.
 */
import { useState } from 'react';
import { Alert, Space, Typography } from 'antd';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { MAX_DATA_DISK_GB, formatYuan } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { INSTANCE_KEYS } from '../api/instances';
import { STORAGE_KEYS, storageApi, storageQueries } from '../../storage';
import { formatTime } from '../../../components/orderViews';
import { UnitNumberInput } from '../../../components/UnitNumberInput';
import { BILLING_KEYS } from '../../../api/billing';
import { QuoteOrderModal } from './QuoteOrderModal';

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
  const queryClient = useQueryClient();
  const [size, setSize] = useState(Math.min(t.sizeGb + STEP_GB, MAX_DATA_DISK_GB));

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.logsAll });
    void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.disks });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  };

  const quote = useQuery({
    ...storageQueries.diskPrice(t.id, size),
    placeholderData: keepPreviousData,
    retry: false,
  });

  const max = quote.data?.maxGb ?? MAX_DATA_DISK_GB;
  return (
    <QuoteOrderModal
      title={`数据盘扩容「${t.name}」`}
      okText={t.prepaid ? '提交订单' : '确认扩容'}
      okDisabled={t.blocked !== null}
      notice={t.blocked && <Alert type="warning" showIcon title={t.blocked} description="数据盘扩容需在实例关机（或无卡模式关机）后进行。" />}
      details={[
        { key: 'current', label: '当前容量', children: `${t.sizeGb} GB（免费 ${t.freeGb} GB）` },
        { key: 'billing', label: '计费方式', children: t.prepaid ? `包周期，到期 ${formatTime(t.expireAt)}` : '按量计费' },
      ]}
      quote={quote}
      priced={(q) => q.quote}
      errorText={(e) => `询价失败：${isApiError(e) && e.detail ? e.detail : e.message}`}
      totalLabel={(q) => (q.prepaid ? '应付金额' : '现在支付')}
      totalTestId="expand-total"
      footer={(q) => (
        <Typography.Text type="secondary" data-testid="expand-note">
          {q.prepaid
            ? `按剩余 ${q.remainingHours} 小时折算，支付后扩容至 ${q.newGb} GB；续费时按新容量计价。`
            : BigInt(q.dailyPriceAfter) > 0n
              ? `按量计费实例扩容无需预付：扩容至 ${q.newGb} GB 后，超出免费 ${q.freeGb} GB 的部分每天 ¥${formatYuan(q.dailyPriceAfter)}，按小时扣费，关机后仍计费，释放后停止。`
              : `按量计费实例扩容无需预付：扩容至 ${q.newGb} GB 后仍在免费容量内，不收费。`}
        </Typography.Text>
      )}
      create={() => storageApi.expandDisk(t.id, size).then((r) => r.order)}
      paidText={`扩容订单已支付，数据盘正在扩容至 ${size} GB`}
      doneText={`扩容已开始，完成后数据盘为 ${size} GB`}
      unpaidText="扩容订单尚未支付，可在账单页继续支付"
      onChange={refresh}
      onClose={onClose}
    >
      <Space align="center" wrap>
        <Typography.Text>扩容至</Typography.Text>
        <UnitNumberInput label="扩容后容量" unit="GB" min={t.sizeGb + 1} max={max} value={size} onChange={setSize} />
        <Typography.Text type="secondary">
          {t.sizeGb + 1}–{max} GB，只能扩大不能缩小
        </Typography.Text>
      </Space>
    </QuoteOrderModal>
  );
}
