import { useMemo, useState } from 'react';
import { Card, Empty, Flex, Segmented, Skeleton, Tag, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { formatMinute } from '../../../lib/time';
import { InstanceCategory, formatYuan, type InstanceCategory as Category, type Voucher } from '@console/contract';
import { billingQueries } from '../../../api/billing';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';

type Tab = 'Unused' | 'Used' | 'Expired';
const TABS: { label: string; value: Tab }[] = [
  { label: '可使用', value: 'Unused' },
  { label: '已使用', value: 'Used' },
  { label: '已过期', value: 'Expired' },
];

/** /console/cost/coupon: the vouchers of the account, usable first. */
export default function CouponPage() {
  const [tab, setTab] = useState<Tab>('Unused');
  const vouchers = useQuery(billingQueries.vouchers());
  const shown = useMemo(
    () => (vouchers.data?.items ?? []).filter((v) => (tab === 'Expired' ? v.status === 'Expired' || v.status === 'Revoked' : v.status === tab)),
    [vouchers.data, tab],
  );
  return (
    <PageFrame>
      <Card title="代金券" extra={<Segmented options={TABS} value={tab} onChange={(v) => setTab(v as Tab)} />}>
        {vouchers.isPending ? (
          <Skeleton active />
        ) : vouchers.isError ? (
          <LoadError error={vouchers.error} onRetry={() => void vouchers.refetch()} />
        ) : shown.length === 0 ? (
          <Empty description={tab === 'Unused' ? '暂无可用代金券' : '暂无记录'} />
        ) : (
          <div className="voucher-grid">
            {shown.map((v) => (
              <VoucherCard key={v.id} voucher={v} />
            ))}
          </div>
        )}
      </Card>
    </PageFrame>
  );
}

function VoucherCard({ voucher: v }: { voucher: Voucher }) {
  const usable = v.status === 'Unused';
  const scope = v.categories.length ? v.categories.map((c) => InstanceCategory.label(c as Category) || c).join('、') : '全部产品';
  return (
    <div className={`voucher-card${usable ? '' : ' voucher-card-off'}`} aria-label={`代金券 ${v.name}`}>
      <Flex align="baseline" gap={4} className="voucher-amount">
        <span>¥</span>
        <span className="voucher-amount-value">{formatYuan(v.amount).replace(/\.00$/, '')}</span>
      </Flex>
      <Typography.Text strong>{v.name}</Typography.Text>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {v.minSpend === '0' ? '无门槛' : `满 ¥${formatYuan(v.minSpend)} 可用`} · 适用：{scope}
      </Typography.Text>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        有效期至 {formatMinute(v.expiresAt)}
      </Typography.Text>
      {!usable && <Tag style={{ alignSelf: 'flex-start' }}>{v.status === 'Used' ? '已使用' : '已过期'}</Tag>}
    </div>
  );
}
