import { Card, Col, Row, Skeleton, Statistic, theme } from 'antd';
import { formatYuan } from '@console/contract';
import { useMoneyQuery } from '../session/useSession';
import { LoadError } from './LoadError';

/** Available balance and what it is made of (cash, gift credit, vouchers), as the balance and finance pages show it. */
export function BalanceSummary() {
  const money = useMoneyQuery();
  const { token } = theme.useToken();
  if (money.isError) return <LoadError error={money.error} onRetry={() => void money.refetch()} />;
  return (
    <Card>
      {money.isPending ? (
        <Skeleton active paragraph={{ rows: 1 }} />
      ) : (
        <Row gutter={[24, 16]}>
          <Col xs={12} md={6}>
            <Statistic
              title="可用余额（元）"
              value={formatYuan(money.data.available ?? money.data.cash)}
              styles={{ content: { color: token.colorPrimary, fontWeight: 600 } }}
            />
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
