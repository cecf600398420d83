import { BalanceSummary } from '../../../components/BalanceSummary';
import { useState } from 'react';
import { Button, Card, Flex, Segmented } from 'antd';
import { Link } from 'react-router';
import { PAGE, type StatementKind } from '@console/contract';
import { StatementTable } from '../../../components/orderViews';
import { PageFrame } from '../../../components/PageFrame';
import { InvoiceSection } from '../components/InvoiceSection';

const KINDS: { label: string; value: StatementKind }[] = [
  { label: '现金', value: 'cash' },
  { label: '赠送金', value: 'gift' },
];

/** /finance: the money coming in and going out (cash and gift credit), and invoice requests. */
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
            <StatementTable
              kind={kind}
              emptyText={kind === 'cash' ? '暂无现金收支记录：充值、支付和退款都会记录在这里' : '暂无赠送金收支记录：充值赠送和使用都会记录在这里'}
            />
          </Card>
          <InvoiceSection />
        </Flex>
      </PageFrame>
    </div>
  );
}
