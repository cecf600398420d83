import { Empty, Flex, Table, Typography } from 'antd';
import { ArrowRightOutlined } from '@ant-design/icons';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { InstanceCategory, type InstanceOperation } from '@console/contract';
import { INSTANCE_KEYS, instancesApi, type OperationFilter } from '../../../api/instances';
import { LoadError } from '../../../components/LoadError';
import { formatTime } from '../../../components/orderViews';
import { detailPathOf, InstanceStatusTag } from './instanceViews';

export const LOG_PAGE_SIZES = [10, 20, 50];

/**
 * Operations on instances, newest first as the server sends them, paged by the server. Controlled:
 * the caller keeps page and size (in the URL on the log page, in state on an instance's tab).
 */
export function OperationLogTable({
  filter,
  page,
  pageSize,
  onChange,
  showInstance = true,
  emptyText = '暂无操作记录',
}: {
  filter: OperationFilter;
  page: number;
  pageSize: number;
  onChange: (page: number, pageSize: number) => void;
  showInstance?: boolean;
  emptyText?: string;
}) {
  const logs = useQuery({
    queryKey: INSTANCE_KEYS.logs(filter, page, pageSize),
    queryFn: ({ signal }) => instancesApi.logs({ filter, page, pageSize }, signal),
    placeholderData: keepPreviousData,
  });
  if (logs.isError && !logs.data) return <LoadError error={logs.error} onRetry={() => void logs.refetch()} />;
  return (
    <Table<InstanceOperation>
      rowKey="id"
      loading={logs.isPending || (logs.isFetching && logs.isPlaceholderData)}
      dataSource={logs.data?.items}
      scroll={{ x: showInstance ? 1100 : 860 }}
      tableLayout="fixed"
      locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={emptyText} /> }}
      pagination={{
        current: page,
        pageSize,
        total: logs.data?.total ?? 0,
        showSizeChanger: true,
        pageSizeOptions: LOG_PAGE_SIZES,
        showTotal: (t) => `共 ${t} 条`,
        onChange: (next, size) => onChange(size === pageSize ? next : 1, size),
      }}
      columns={[
        { title: '时间', dataIndex: 'createdAt', width: 170, render: (v: string) => formatTime(v) },
        ...(showInstance
          ? [
              {
                title: '实例',
                key: 'instance',
                width: 220,
                render: (_: unknown, o: InstanceOperation) => (
                  <Flex vertical gap={2} style={{ minWidth: 0 }}>
                    <Link to={detailPathOf({ id: o.instanceId, category: o.category })}>
                      <Typography.Text ellipsis={{ tooltip: o.instanceName }} style={{ color: 'inherit', maxWidth: '100%' }}>
                        {o.instanceName}
                      </Typography.Text>
                    </Link>
                    <Typography.Text type="secondary" style={{ fontSize: 12 }} ellipsis>
                      {InstanceCategory.label(o.category)} · <span className="mono">{o.instanceId}</span>
                    </Typography.Text>
                  </Flex>
                ),
              },
            ]
          : []),
        { title: '操作', dataIndex: 'actionLabel', width: 120 },
        {
          title: '操作人',
          dataIndex: 'actorName',
          width: 120,
          render: (name: string, o) => (o.actorId ? name : <Typography.Text type="secondary">{name || '系统'}</Typography.Text>),
        },
        {
          title: '状态变化',
          key: 'status',
          width: 250,
          render: (_, o) => (
            <Flex align="center" gap={6} wrap>
              {o.fromStatus ? <InstanceStatusTag status={o.fromStatus} live={false} /> : <Typography.Text type="secondary">--</Typography.Text>}
              <ArrowRightOutlined style={{ color: '#8c8c8c', fontSize: 12 }} aria-label="变为" />
              <InstanceStatusTag status={o.toStatus} live={false} />
            </Flex>
          ),
        },
        {
          title: '详情',
          dataIndex: 'detail',
          render: (d: string) => (d ? <Typography.Text ellipsis={{ tooltip: d }}>{d}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>),
        },
      ]}
    />
  );
}
