import { useMemo } from 'react';
import { Flex, Table, Typography } from 'antd';
import { Link } from 'react-router';
import { PAGE, type ModelStats } from '@console/contract';
import { formatUnitPrice } from '../../../components/Price';
import { dayBillPath, lastDays, useModelStats, formatTokens, NoCallsYet } from '../../model';
import { LoadError } from '../../../components/LoadError';
import { RefreshButton } from '../../../components/PagedTable';

/** How far back the bill list looks; older days are in 用量统计. */
export const MODEL_DAY_BILL_DAYS = 30;

type Day = ModelStats['days'][number];

/** The bill list's 模型调用账单: one row a Beijing day with calls in the last 30 days, newest first. */
export function ModelDayBillList() {
  const range = lastDays(MODEL_DAY_BILL_DAYS);
  const stats = useModelStats(range);
  const days = useMemo(() => (stats.data?.days ?? []).filter((d) => d.requests > 0).reverse(), [stats.data]);

  if (stats.isError && !stats.data) return <LoadError error={stats.error} onRetry={() => void stats.refetch()} />;
  return (
    <Flex vertical gap={16}>
      <Flex justify="space-between" align="center" wrap gap={12}>
        <Typography.Text type="secondary">
          模型调用按 Token 实时扣费，每天（北京时间）汇总为一份账单。这里列出近 {MODEL_DAY_BILL_DAYS} 天有调用的日期，更早的用量请到{' '}
          <Link to={`${PAGE.modelStats}?range=30d`}>用量统计</Link> 查看。
        </Typography.Text>
        <RefreshButton list={stats} />
      </Flex>
      <Table<Day>
        aria-label="每日模型调用账单"
        rowKey="date"
        loading={stats.isPending}
        dataSource={days}
        pagination={{ pageSize: 10, hideOnSinglePage: true, showSizeChanger: false, showTotal: (t) => `共 ${t} 天 · 金额单位：元` }}
        scroll={{ x: 760 }}
        locale={{ emptyText: stats.isPending ? ' ' : <NoCallsYet text={`近 ${MODEL_DAY_BILL_DAYS} 天没有模型调用账单`} /> }}
        columns={[
          { title: '日期', dataIndex: 'date', width: 130, render: (d: string) => <Link to={dayBillPath(d)}>{d}</Link> },
          { title: '请求数', dataIndex: 'requests', align: 'right', render: (n: number) => formatTokens(n) },
          { title: 'Token', key: 'tokens', align: 'right', render: (_, d) => formatTokens(d.promptTokens + d.completionTokens) },
          { title: '资源包抵扣', dataIndex: 'packageTokens', align: 'right', render: (n: number) => (n > 0 ? formatTokens(n) : '--') },
          { title: '金额', dataIndex: 'cost', align: 'right', render: (v: string) => <span className="amount-cell">{formatUnitPrice(v)}</span> },
          {
            title: '操作',
            key: 'op',
            width: 90,
            render: (_, d) => (
              <Link to={dayBillPath(d.date)} className="bill-op-link">
                详情
              </Link>
            ),
          },
        ]}
      />
    </Flex>
  );
}
