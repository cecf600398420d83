import { Button, Progress, Table, Typography, type TableColumnsType } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { PAGE, type BillingCycle, type GpuType } from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { Price } from '../../../components/Price';

const priceOf = (t: GpuType, cycle: BillingCycle) => t.prices.find((p) => p.cycle === cycle);

function PriceCell({ type, cycle, unit }: { type: GpuType; cycle: BillingCycle; unit?: string }) {
  const p = priceOf(type, cycle);
  return p ? <Price units={p.price} per={unit} /> : <Typography.Text type="secondary">—</Typography.Text>;
}

const name: TableColumnsType<GpuType>[number] = {
  title: '型号',
  dataIndex: 'name',
  render: (_, t) => (
    <div>
      <Typography.Text strong>{t.name}</Typography.Text>
      {t.description && (
        <Typography.Paragraph type="secondary" style={{ margin: 0, fontSize: 12, maxWidth: 280 }} ellipsis={{ rows: 2, tooltip: t.description }}>
          {t.description}
        </Typography.Paragraph>
      )}
    </div>
  ),
};
const memory: TableColumnsType<GpuType>[number] = {
  title: '显存',
  dataIndex: 'memoryGb',
  render: (v: number) => `${v} GB`,
  sorter: (a, b) => a.memoryGb - b.memoryGb,
};
const capacity: TableColumnsType<GpuType>[number] = {
  title: '空闲 / 总卡数',
  key: 'capacity',
  width: 150,
  render: (_, t) => (
    <div>
      {t.gpuFree} / {t.gpuTotal}
      <Progress percent={t.gpuTotal ? (t.gpuFree / t.gpuTotal) * 100 : 0} showInfo={false} size="small" />
    </div>
  ),
};

/**
 * The GPU models of the catalogue as a table: 'devices' for the hardware view (/apparatus), 'prices'
 * for the price list (/enterprise). Every figure is the API's; nothing is filled in by hand.
 */
export function GpuTypeTable({ query, mode }: { query: UseQueryResult<GpuType[]>; mode: 'devices' | 'prices' }) {
  const navigate = useNavigate();
  if (query.isError) return <LoadError error={query.error} onRetry={() => void query.refetch()} />;
  const rent: TableColumnsType<GpuType>[number] = {
    title: '操作',
    key: 'rent',
    width: 96,
    render: (_, t) =>
      t.unavailable ? (
        <Typography.Text type="secondary">{t.unavailable}</Typography.Text>
      ) : (
        <Button type="link" disabled={t.gpuFree <= 0} onClick={() => navigate(`${PAGE.cloudGpu}?gpuTypeId=${encodeURIComponent(t.id)}`)}>
          {t.gpuFree > 0 ? '去租用' : '已租满'}
        </Button>
      ),
  };
  const columns: TableColumnsType<GpuType> =
    mode === 'devices'
      ? [
          name,
          memory,
          { title: '架构', dataIndex: 'architecture' },
          { title: 'CUDA 算力', dataIndex: 'cudaCapability' },
          { title: 'FP32 算力', dataIndex: 'fp32Tflops', render: (v: number) => `${v} TFLOPS`, sorter: (a, b) => a.fp32Tflops - b.fp32Tflops },
          capacity,
          { title: '按时单价', key: 'hour', render: (_, t) => <PriceCell type={t} cycle="Hour" unit="卡·小时" /> },
          rent,
        ]
      : [
          name,
          memory,
          { title: 'FP32 算力', dataIndex: 'fp32Tflops', render: (v: number) => `${v} TFLOPS` },
          capacity,
          { title: '按时（每卡·小时）', key: 'hour', render: (_, t) => <PriceCell type={t} cycle="Hour" /> },
          { title: '按日（每卡·天）', key: 'day', render: (_, t) => <PriceCell type={t} cycle="Day" /> },
          { title: '按月（每卡·月）', key: 'month', render: (_, t) => <PriceCell type={t} cycle="Month" /> },
          rent,
        ];
  return (
    <Table<GpuType>
      rowKey="id"
      columns={columns}
      dataSource={query.data ?? []}
      loading={query.isPending}
      pagination={false}
      scroll={{ x: 'max-content' }}
      locale={{ emptyText: '暂无在售的 GPU 型号' }}
    />
  );
}
