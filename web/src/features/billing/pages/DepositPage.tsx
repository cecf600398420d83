import { Card, Col, Flex, Row, Skeleton, Statistic, theme, Typography } from 'antd';
import { SafetyCertificateOutlined } from '@ant-design/icons';
import { formatYuan } from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { StatementTable } from '../../../components/orderViews';
import { PageFrame } from '../../../components/PageFrame';
import { useMoneyQuery } from '../../../session/useSession';

/** /console/cost/deposit: the deposit held for the account, and every hold and return. */
export default function DepositPage() {
  const money = useMoneyQuery();
  const { token } = theme.useToken();
  const held = money.data ? BigInt(money.data.deposit ?? '0') : 0n;
  return (
    <PageFrame>
      <Flex vertical gap={16}>
        <Card>
          {money.isPending ? (
            <Skeleton active paragraph={{ rows: 2 }} />
          ) : money.isError ? (
            <LoadError error={money.error} onRetry={() => void money.refetch()} />
          ) : (
            <Row gutter={[32, 16]} align="middle">
              <Col xs={24} md={8}>
                <Statistic
                  title="押金余额（元）"
                  prefix={<SafetyCertificateOutlined />}
                  value={formatYuan(money.data.deposit ?? '0')}
                  styles={{ content: { color: token.colorPrimary, fontWeight: 600 } }}
                />
              </Col>
              <Col xs={24} md={16}>
                <Typography.Paragraph style={{ margin: 0 }}>
                  押金是开通部分产品时冻结的保证金，冻结期间不能用于支付。产品释放后，押金会全额退回到您的账户。
                </Typography.Paragraph>
                <Typography.Paragraph type="secondary" style={{ margin: '8px 0 0' }}>
                  {held > 0n ? `当前有 ¥${formatYuan(held)} 押金被冻结，对应产品释放后自动退还。` : '当前没有被冻结的押金。'}
                </Typography.Paragraph>
              </Col>
            </Row>
          )}
        </Card>
        <Card title="押金明细">
          <StatementTable kind="deposit" emptyText="暂无押金记录：开通需要押金的产品时，冻结和退还会记录在这里" />
        </Card>
      </Flex>
    </PageFrame>
  );
}
