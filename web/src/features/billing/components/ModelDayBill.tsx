import type { ReactNode } from 'react';
import { Alert, Button, Card, Flex, Skeleton, Table, Typography } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { PAGE, type ModelStats } from '@console/contract';
import { beijingToday, dayOfBillId, useModelCalls, useModelStats, CallTable, NoCallsYet, RetentionNote, sumColumns, UsageSumCards } from '../../model';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { ErrorResult } from '../../../routing/ErrorResult';
import { useUrlPaging } from '../../../routing/useUrlPaging';

/** The bill list's tab of model call bills: where 返回账单 goes. */
export const MODEL_DAY_BILLS_TAB = `${PAGE.bill}?tab=usage`;

/**
 * /console/cost/bill/model-details/YYYYMMDD: what the model calls of one Beijing day were charged —
 * the day's sums, each model's part, and the calls behind the charge.
 */
export function ModelDayBill({ id }: { id: string }) {
  const day = dayOfBillId(id);
  const back = (
    <Link to={MODEL_DAY_BILLS_TAB}>
      <Button icon={<ArrowLeftOutlined />}>返回账单</Button>
    </Link>
  );
  if (!day || day > beijingToday()) {
    return (
      <PageFrame extra={back}>
        <Card>
          <ErrorResult
            notFound
            title="账单不存在"
            subTitle={`${id} 不是有效的账单日期。模型调用账单按北京时间每日一份，请从账单列表进入。`}
            extra={
              <Link to={MODEL_DAY_BILLS_TAB}>
                <Button type="primary">查看模型调用账单</Button>
              </Link>
            }
          />
        </Card>
      </PageFrame>
    );
  }
  return <DayBill day={day} back={back} />;
}

function DayBill({ day, back }: { day: string; back: ReactNode }) {
  const { paging, set } = useUrlPaging();
  const calls = useModelCalls({ date: day, ...paging });
  const stats = useModelStats({ from: day, to: day });
  const retention = calls.data?.retentionDays;
  // Past the call log's retention the calls are gone but the long-kept stats still hold the day.
  const pruned = !!calls.data && calls.data.total === 0 && !!stats.data && stats.data.total.requests > 0;
  // The call log's sums; the stats' when the calls are gone or could not be read (the call table says why).
  const sum = calls.data && !pruned ? calls.data.sums : stats.data?.total;
  // Until it is known whether the day's calls are still kept, or while the only source still loads.
  const summing = calls.isPending || (calls.data?.total === 0 && stats.isPending) || (!calls.data && stats.isPending);

  return (
    <PageFrame
      title={`模型调用账单 · ${day}`}
      extra={
        <Flex gap={8}>
          <Link to={`${PAGE.modelStats}?range=custom&from=${day}&to=${day}`}>
            <Button>在用量统计中查看</Button>
          </Link>
          {back}
        </Flex>
      }
    >
      <Flex vertical gap={16}>
        <Typography.Text type="secondary">
          按北京时间 {day} 00:00 至 24:00 统计。资源包抵扣的 Token 由大模型 Token 包支付，其余按模型价格从余额扣费；失败的调用不收费。
        </Typography.Text>
        <UsageSumCards sum={sum} loading={summing} />
        {pruned && (
          <Alert type="info" showIcon title={`该日的调用明细已超过保留期${retention ? `（${retention} 天）` : ''}被清理，以上汇总来自长期保留的统计数据。`} />
        )}

        <Card title="按模型" size="small">
          <ModelBreakdown stats={stats} />
        </Card>

        <Card
          title={
            <Flex align="baseline" gap={12} wrap>
              <span>调用明细</span>
              <RetentionNote days={retention} />
            </Flex>
          }
          size="small"
        >
          <CallTable list={calls} paging={paging} onPage={set} empty={<NoCallsYet text={pruned ? '该日的调用明细已清理' : '这一天没有调用记录'} />} />
        </Card>
      </Flex>
    </PageFrame>
  );
}

function ModelBreakdown({ stats }: { stats: ReturnType<typeof useModelStats> }) {
  if (stats.isError) return <LoadError error={stats.error} onRetry={() => void stats.refetch()} />;
  if (stats.isPending) return <Skeleton active paragraph={{ rows: 3 }} />;
  return (
    <Table<ModelStats['models'][number]>
      aria-label="按模型汇总"
      rowKey="model"
      size="middle"
      dataSource={stats.data.models}
      pagination={false}
      scroll={{ x: 760 }}
      locale={{ emptyText: '这一天没有模型用量' }}
      columns={[{ title: '模型', dataIndex: 'model', width: 200, ellipsis: { showTitle: true } }, ...sumColumns<ModelStats['models'][number]>()]}
    />
  );
}
