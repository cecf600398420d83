import { Button, Card, Empty, Flex, Typography } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { formatMinute } from '../../../lib/time';
import { formatYuan, PAGE, type StorageCharge } from '@console/contract';
import { BILLING_KEYS, billingApi } from '../../../api/billing';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import { PageFrame } from '../../../components/PageFrame';
import { useUrlPaging } from '../../../routing/useUrlPaging';

/** One row a day per disk: longer pages than other lists. */
const PAGE_SIZES = [20, 50, 100];

/** /console/cost/bill/storage-details: the daily charges for data disks beyond their free size. */
export default function StorageBillDetailPage() {
  const { paging, set } = useUrlPaging({ sizes: PAGE_SIZES });
  const charges = usePagedQuery({
    queryKey: BILLING_KEYS.storageCharges(paging.page, paging.pageSize),
    queryFn: (signal) => billingApi.storageCharges(paging, signal),
  });
  return (
    <PageFrame
      extra={
        <Link to={`${PAGE.bill}?tab=storage`}>
          <Button icon={<ArrowLeftOutlined />}>返回账单</Button>
        </Link>
      }
    >
      <Flex vertical gap={16}>
        <Card title="存储如何计费">
          <ul className="plain-list">
            <li>每台实例附带免费数据盘，免费容量以购买页为准，免费部分不产生费用。</li>
            <li>超出免费容量的部分按 GB·天计价、按小时扣费：每小时开始时扣这一小时（日价的 1/24）；关机或无卡模式下照常计费，释放后停止。</li>
            <li>按量计费实例扩容后，当前小时已扣部分按剩余时间补差；包周期实例扩容会生成“数据盘扩容”订单，在“服务器账单”中查看。</li>
          </ul>
        </Card>
        <Card title="存储账单明细">
          <PagedTable<StorageCharge>
            list={charges}
            paging={paging}
            onPage={set}
            sizes={PAGE_SIZES}
            rowKey="id"
            tableLayout="auto"
            scroll={{ x: 760 }}
            columns={[
              { title: '计费时段', dataIndex: 'periodStart', width: 170, render: (t: string) => formatMinute(t) },
              {
                title: '实例',
                dataIndex: 'instanceName',
                render: (name: string, c) => name || <Typography.Text type="secondary">{c.instanceId.slice(0, 8)}</Typography.Text>,
              },
              { title: '说明', dataIndex: 'memo' },
              { title: '扣费时间', dataIndex: 'chargedAt', width: 170, render: (t: string) => formatMinute(t) },
              {
                title: '金额（元）',
                dataIndex: 'amount',
                align: 'right',
                width: 120,
                render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span>,
              },
            ]}
            empty={
              <Empty
                image={Empty.PRESENTED_IMAGE_SIMPLE}
                description={
                  <Flex vertical gap={4} align="center">
                    <Typography.Text>暂无存储账单</Typography.Text>
                    <Typography.Text type="secondary">数据盘在免费容量以内不收费；扩容超出免费容量后，每小时的费用会显示在这里。</Typography.Text>
                  </Flex>
                }
              />
            }
          />
        </Card>
      </Flex>
    </PageFrame>
  );
}
