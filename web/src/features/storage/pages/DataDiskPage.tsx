import { useState } from 'react';
import { Button, Flex, Progress, Tag, Tooltip, Typography, type TableColumnsType } from 'antd';
import { Link } from 'react-router';
import { BillingCycle, InstanceCategory, PAGE, type DataDisk, type DataDiskPage as DiskPage } from '@console/contract';
import { STORAGE_KEYS, storageApi } from '../api/storage';
import { formatTime } from '../../../components/orderViews';
import { PagedListPage } from '../../../components/PagedListPage';
import { formatUnitPrice, Price } from '../../../components/Price';
import { ExpandDiskModal, type DiskTarget, BUSY_POLL_MS, InstanceStatusTag, detailPathOf, isBusy } from '../../instances';

const targetOf = (d: DataDisk): DiskTarget => ({
  id: d.instanceId,
  name: d.instanceName,
  sizeGb: d.sizeGb,
  freeGb: d.freeGb,
  prepaid: d.prepaid,
  expireAt: d.expireAt,
  blocked: d.expandBlocked,
});

function Usage({ disk: d }: { disk: DataDisk }) {
  if (d.usedGb === null) return <Typography.Text type="secondary">--</Typography.Text>;
  const percent = d.sizeGb > 0 ? Math.round((d.usedGb / d.sizeGb) * 100) : 0;
  return (
    <Flex vertical gap={0}>
      <span>
        {d.usedGb} / {d.sizeGb} GB
      </span>
      <Progress percent={percent} size="small" showInfo={false} status={percent >= 90 ? 'exception' : 'normal'} aria-label={`已用 ${percent}%`} />
    </Flex>
  );
}

/** 扩容 (disabled with the reason while it cannot be done) and the instance's disk tab. */
function DiskActions({ disk: d, onExpand }: { disk: DataDisk; onExpand: (d: DataDisk) => void }) {
  return (
    <Flex gap={0} wrap>
      <Tooltip title={d.expandBlocked ?? undefined}>
        <Button type="link" size="small" disabled={d.expandBlocked !== null} onClick={() => onExpand(d)} aria-label={`扩容 ${d.instanceName}`}>
          扩容
        </Button>
      </Tooltip>
      <Link to={detailPathOf({ id: d.instanceId, category: d.category }) + '?tab=disk'} className="bill-op-link">
        详情
      </Link>
    </Flex>
  );
}

/**
 * /console/gpudata/disk — the data disk of every instance: size, free and used space, what is
 * charged and what it costs a day; 扩容 from here or from the instance.
 */
export default function DataDiskPage() {
  const [expanding, setExpanding] = useState<DataDisk | null>(null);
  const columns: TableColumnsType<DataDisk> = [
    {
      title: '所属实例',
      key: 'instance',
      width: 200,
      render: (_, d) => (
        <Flex vertical gap={2}>
          <Link to={detailPathOf({ id: d.instanceId, category: d.category })}>{d.instanceName}</Link>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {InstanceCategory.label(d.category)}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '实例状态', key: 'status', width: 140, render: (_, d) => <InstanceStatusTag status={d.status} /> },
    { title: '容量', key: 'size', width: 100, render: (_, d) => `${d.sizeGb} GB` },
    { title: '免费容量', key: 'free', width: 100, render: (_, d) => `${d.freeGb} GB` },
    { title: '已用', key: 'used', width: 150, render: (_, d) => <Usage disk={d} /> },
    { title: '计费容量', key: 'chargeable', width: 100, render: (_, d) => `${d.chargeableGb} GB` },
    {
      title: '每天费用',
      key: 'cost',
      width: 170,
      render: (_, d) =>
        d.prepaid ? (
          <Flex vertical gap={0}>
            <Tag style={{ width: 'fit-content' }}>{BillingCycle.label(d.cycle)}</Tag>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              已含在周期费用内，到期 {formatTime(d.expireAt)}
            </Typography.Text>
          </Flex>
        ) : BigInt(d.dailyPrice) > 0n ? (
          <Price units={d.dailyPrice} per="天" size="sm" />
        ) : (
          <Typography.Text type="secondary">免费</Typography.Text>
        ),
    },
    { title: '操作', key: 'op', width: 140, fixed: 'end', render: (_, d) => <DiskActions disk={d} onExpand={setExpanding} /> },
  ];

  return (
    <PagedListPage<DataDisk, DiskPage>
      queryKey={STORAGE_KEYS.diskList}
      queryFn={(paging, signal) => storageApi.disks(paging, signal)}
      // While an expansion (or any operation) runs, follow it.
      poll={{ busy: (d) => isBusy(d.status), ms: BUSY_POLL_MS }}
      notice={(data) => ({
        title: '每个实例自带一块数据盘，超出免费容量的部分按容量计费',
        description: (
          <span>
            按量计费实例的数据盘费用按小时从余额扣除{data ? `（¥${formatUnitPrice(data.pricePerGbDay)}/GB/天，每小时扣其 1/24）` : ''}，关机后仍计费，明细见
            <Link to={PAGE.storageBillDetail}>存储账单</Link>；包周期实例的数据盘已包含在周期费用内。扩容需先关机，只能扩大不能缩小。
          </span>
        ),
      })}
      empty={{ text: '还没有数据盘：创建实例后自带数据盘', to: PAGE.cloudGpu, action: '去创建实例' }}
      unit="块数据盘"
      table={{ rowKey: 'instanceId', scroll: { x: 1150 }, columns }}
    >
      {expanding && <ExpandDiskModal key={expanding.instanceId} target={targetOf(expanding)} onClose={() => setExpanding(null)} />}
    </PagedListPage>
  );
}
