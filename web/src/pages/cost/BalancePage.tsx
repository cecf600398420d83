import { useState } from 'react';
import { Button, Card, Col, Flex, Row, Segmented, Skeleton, Statistic, Table, Tag, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import dayjs from 'dayjs';
import { PAGE, formatYuan } from '@console/contract';
import { billingApi, type StatementKind, type StatementPage } from '../../api/billing';
import { LoadError } from '../../components/LoadError';
import { PageFrame } from '../../components/PageFrame';
import { MONEY_QUERY_KEY, useMoneyQuery } from '../../session/useSession';

/** What each kind of ledger transfer means to the account holder. */
export const TRANSFER_LABEL: Record<string, string> = {
  gateway_in: '充值到账',
  gift_grant: '赠送金发放',
  voucher_grant: '代金券发放',
  compensation: '平台补偿',
  order: '订单支付',
  refund: '退款',
  gift_expire: '赠送金过期',
  voucher_expire: '代金券过期',
};

const GIFT_SOURCE: Record<string, string> = { recharge_bonus: '充值赠送', welcome: '新人赠送', compensation: '平台补偿' };

const KINDS: { label: string; value: StatementKind }[] = [
  { label: '现金', value: 'cash' },
  { label: '赠送金', value: 'gift' },
  { label: '代金券', value: 'voucher' },
];

/** /console/cost/balance: what the account holds and every movement behind it. */
export default function BalancePage() {
  const navigate = useNavigate();
  return (
    <PageFrame extra={<Button type="primary" onClick={() => navigate(PAGE.recharge)}>充值</Button>}>
      <Flex vertical gap={16}>
        <Balances />
        <GiftCredit />
        <Statement />
      </Flex>
    </PageFrame>
  );
}

function Balances() {
  const money = useMoneyQuery();
  if (money.isError) return <LoadError error={money.error} onRetry={() => void money.refetch()} />;
  return (
    <Card>
      {money.isPending ? (
        <Skeleton active paragraph={{ rows: 1 }} />
      ) : (
        <Row gutter={[24, 16]}>
          <Col xs={12} md={6}>
            <Statistic title="可用余额（元）" value={formatYuan(money.data.available ?? money.data.cash)} styles={{ content: { color: '#722ed1', fontWeight: 600 } }} />
          </Col>
          <Col xs={12} md={6}>
            <Statistic title="现金（元）" value={formatYuan(money.data.cash)} />
          </Col>
          <Col xs={12} md={6}>
            <Statistic title="赠送金（元）" value={formatYuan(money.data.gift ?? '0')} />
          </Col>
          <Col xs={12} md={6}>
            <Statistic title="代金券（元）" value={formatYuan(money.data.voucher ?? '0')} />
          </Col>
        </Row>
      )}
    </Card>
  );
}

/** Claim the welcome credit, or renew items waiting for renewal (spec §3/§4 gift actions). */
function GiftActions({ renewable }: { renewable: boolean }) {
  const queryClient = useQueryClient();
  const eligibility = useQuery({ queryKey: ['gifts', 'eligibility'], queryFn: ({ signal }) => billingApi.giftEligibility(signal) });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['gifts'] });
    void queryClient.invalidateQueries({ queryKey: MONEY_QUERY_KEY });
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
  const gifts = useQuery({ queryKey: ['gifts'], queryFn: ({ signal }) => billingApi.gifts(signal) });
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
          { title: '到期时间', dataIndex: 'expireAt', render: (v: string) => dayjs(v).format('YYYY-MM-DD HH:mm') },
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
  const [page, setPage] = useState(1);
  const list = useQuery({ queryKey: ['statement', kind, page], queryFn: ({ signal }) => billingApi.statement({ kind, page, pageSize: 10 }, signal) });
  return (
    <Card
      title="收支明细"
      extra={
        <Segmented
          options={KINDS}
          value={kind}
          onChange={(v) => {
            setKind(v as StatementKind);
            setPage(1);
          }}
        />
      }
    >
      {list.isError ? (
        <LoadError error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <Table<StatementPage['items'][number]>
          rowKey="id"
          loading={list.isPending}
          dataSource={list.data?.items}
          locale={{ emptyText: '暂无收支记录' }}
          pagination={{ current: page, pageSize: 10, total: list.data?.total ?? 0, onChange: setPage, showTotal: (t) => `共 ${t} 条` }}
          columns={[
            { title: '时间', dataIndex: 'createdAt', render: (v: string) => dayjs(v).format('YYYY-MM-DD HH:mm:ss') },
            { title: '类型', dataIndex: 'kind', render: (k: string) => TRANSFER_LABEL[k] ?? k },
            { title: '说明', dataIndex: 'memo' },
            {
              title: '金额（元）',
              dataIndex: 'amount',
              align: 'right',
              render: (v: string) => (
                <Typography.Text type={v.startsWith('-') ? undefined : 'success'}>
                  {v.startsWith('-') ? '' : '+'}
                  {formatYuan(v)}
                </Typography.Text>
              ),
            },
            { title: '余额（元）', dataIndex: 'balanceAfter', align: 'right', render: (v: string) => formatYuan(v) },
          ]}
        />
      )}
    </Card>
  );
}
