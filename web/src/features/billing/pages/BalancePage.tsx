import { BalanceSummary } from '../../../components/BalanceSummary';
import { useState } from 'react';
import { Button, Card, Flex, Segmented, Table, Tag, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import dayjs from 'dayjs';
import { formatMinute } from '../../../lib/time';
import { PAGE, formatYuan, type StatementKind } from '@console/contract';
import { BILLING_KEYS, billingApi, billingQueries } from '../../../api/billing';
import { StatementTable } from '../../../components/orderViews';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { useSession } from '../../../session/useSession';
import { BalanceFloorCard } from '../components/BalanceFloorCard';

const GIFT_SOURCE: Record<string, string> = { recharge_bonus: '充值赠送', welcome: '新人赠送', compensation: '平台补偿' };

const KINDS: { label: string; value: StatementKind }[] = [
  { label: '现金', value: 'cash' },
  { label: '赠送金', value: 'gift' },
  { label: '代金券', value: 'voucher' },
];

/** /console/cost/balance: what the account holds and every movement behind it. */
export default function BalancePage() {
  const navigate = useNavigate();
  // 余额保底 is the main account's: a child spends its parent's balance under the parent's floor.
  const main = useSession().user?.isChild === false;
  return (
    <PageFrame
      extra={
        <Button type="primary" onClick={() => navigate(PAGE.recharge)}>
          充值
        </Button>
      }
    >
      <Flex vertical gap={16}>
        <BalanceSummary />
        {main && <BalanceFloorCard />}
        <GiftCredit />
        <Statement />
      </Flex>
    </PageFrame>
  );
}

/** Claim the welcome credit, or renew items waiting for renewal (spec §3/§4 gift actions). */
function GiftActions({ renewable }: { renewable: boolean }) {
  const queryClient = useQueryClient();
  const eligibility = useQuery(billingQueries.giftEligibility());
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.gifts });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  };
  const obtain = useMutation({ mutationFn: billingApi.obtainGift, onSuccess: refresh });
  const renew = useMutation({ mutationFn: billingApi.renewGifts, onSuccess: refresh });
  return (
    <Flex gap={8} align="center">
      {eligibility.data?.eligible && (
        <Button type="primary" size="small" loading={obtain.isPending} onClick={() => obtain.mutate()}>
          领取新人赠送金 ¥{formatYuan(eligibility.data.amount)}
        </Button>
      )}
      {renewable && (
        <Button size="small" loading={renew.isPending} onClick={() => renew.mutate()}>
          续期待续期的赠送金
        </Button>
      )}
    </Flex>
  );
}

function GiftCredit() {
  const gifts = useQuery(billingQueries.gifts());
  if (gifts.isError) return <LoadError error={gifts.error} onRetry={() => void gifts.refetch()} />;
  return (
    <Card
      title="赠送金明细"
      extra={
        gifts.data && (
          <Flex gap={16} align="center">
            <GiftActions renewable={gifts.data.renewStatus} />
            <Typography.Text type="secondary">有效合计 ¥{formatYuan(gifts.data.remain)}</Typography.Text>
          </Flex>
        )
      }
    >
      <Table
        rowKey="id"
        size="small"
        loading={gifts.isPending}
        dataSource={gifts.data?.items}
        pagination={false}
        locale={{ emptyText: '暂无赠送金：充值即返赠送金' }}
        columns={[
          { title: '来源', dataIndex: 'source', render: (s: string) => GIFT_SOURCE[s] ?? s },
          { title: '金额（元）', dataIndex: 'amount', align: 'right', render: (v: string) => formatYuan(v) },
          { title: '剩余（元）', dataIndex: 'remain', align: 'right', render: (v: string) => formatYuan(v) },
          { title: '到期时间', dataIndex: 'expireAt', render: (v: string) => formatMinute(v) },
          {
            title: '状态',
            key: 'state',
            render: (_, g) =>
              dayjs(g.expireAt).isBefore(dayjs()) ? <Tag>已过期</Tag> : g.status === 1 ? <Tag color="green">生效中</Tag> : <Tag color="orange">待续期</Tag>,
          },
        ]}
      />
    </Card>
  );
}

function Statement() {
  const [kind, setKind] = useState<StatementKind>('cash');
  return (
    <Card title="收支明细" extra={<Segmented options={KINDS} value={kind} onChange={(v) => setKind(v as StatementKind)} />}>
      <StatementTable kind={kind} emptyText="暂无收支记录" />
    </Card>
  );
}
