import { Flex, Skeleton, Typography } from 'antd';
import { GiftOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { formatYuan } from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { CustomerServiceButton } from '../../../components/CustomerService';

/** "0.18" → "18%". */
function percent(rate: string): string {
  return `${Number((Number(rate) * 100).toFixed(2))}%`;
}

/** The promotion of spec §1, with the figures the operator configured (none shown if none set). */
export function PromoBanner() {
  const promotion = useQuery(catalogueQueries.promotion());
  const p = promotion.data;
  const title = { level: 4 as const, style: { color: '#fff', margin: 0 } };
  return (
    <div className="promo-banner" role="note" aria-label="优惠活动">
      <Flex gap={32} wrap align="center" justify="space-between">
        <Flex gap={32} wrap align="center">
          {promotion.isPending && <Skeleton.Input active size="small" style={{ width: 320 }} />}
          {p && Number(p.rechargeBonusRate) > 0 && (
            <Typography.Title {...title}>
              <GiftOutlined /> 充值返 {percent(p.rechargeBonusRate)} 赠送金
            </Typography.Title>
          )}
          {p && p.newUserVoucher !== '0' && (
            <Typography.Title {...title}>新用户领 {formatYuan(p.newUserVoucher).replace(/\.00$/, '')} 元代金券</Typography.Title>
          )}
        </Flex>
        <CustomerServiceButton ghost>企业微信客服</CustomerServiceButton>
      </Flex>
    </div>
  );
}
