import { BalanceSummary } from '../../components/BalanceSummary';
import { useState } from 'react';
import { Button, Card, Flex, Segmented, Typography } from 'antd';
import { FileTextOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import type { StatementKind } from '../../api/billing';
import { CustomerServiceButton } from '../../components/CustomerService';
import { StatementTable } from '../../components/orderViews';
import { PageFrame } from '../../components/PageFrame';

const KINDS: { label: string; value: StatementKind }[] = [
  { label: '现金', value: 'cash' },
  { label: '赠送金', value: 'gift' },
];

/** /finance: the money coming in and going out (cash and gift credit), and invoices. */
export default function FinancePage() {
  const [kind, setKind] = useState<StatementKind>('cash');
  return (
    <div className="finance-page">
      <PageFrame
        extra={
          <Flex gap={8}>
            <Link to={PAGE.bill}>
              <Button>查看账单</Button>
            </Link>
            <Link to={PAGE.recharge}>
              <Button type="primary">充值</Button>
            </Link>
          </Flex>
        }
      >
        <Flex vertical gap={16}>
          <BalanceSummary />
          <Card title="收支流水" extra={<Segmented aria-label="账户" options={KINDS} value={kind} onChange={(v) => setKind(v as StatementKind)} />}>
            <StatementTable key={kind} kind={kind} emptyText={kind === 'cash' ? '暂无现金收支记录：充值、支付和退款都会记录在这里' : '暂无赠送金收支记录：充值赠送和使用都会记录在这里'} />
          </Card>
          <Card title="发票">
            <Flex align="center" justify="space-between" gap={16} wrap>
              <Flex align="center" gap={16}>
                <FileTextOutlined className="finance-invoice-icon" />
                <Flex vertical gap={2}>
                  <Typography.Text strong>发票申请功能即将开放，如需发票请联系客服</Typography.Text>
                  <Typography.Text type="secondary">联系客服时请提供账号手机号和需要开票的订单号。</Typography.Text>
                </Flex>
              </Flex>
              <CustomerServiceButton type="primary" ghost />
            </Flex>
          </Card>
        </Flex>
      </PageFrame>
    </div>
  );
}

