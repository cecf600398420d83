import { Flex, Tag, Tooltip, Typography } from 'antd';
import { ArrowRightOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { InstanceCategory, type InstanceOperation } from '@console/contract';
import { INSTANCE_KEYS, instancesApi, type OperationFilter } from '../api/instances';
import { formatTime } from '../../../components/orderViews';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { detailPathOf, InstanceStatusTag } from './instanceViews';

/**
 * Operations on instances, newest first as the server sends them, paged by the server. Controlled:
 * the caller keeps the paging in the URL (with the filters on the log page, beside the tab on an instance's).
 */
export function OperationLogTable({
  filter,
  paging,
  onPage,
  showInstance = true,
  emptyText = '暂无操作记录',
}: {
  filter: OperationFilter;
  paging: Paging;
  onPage: (next: Paging) => void;
  showInstance?: boolean;
  emptyText?: string;
}) {
  const logs = usePagedQuery({
    queryKey: INSTANCE_KEYS.logs(filter, paging.page, paging.pageSize),
    queryFn: (signal) => instancesApi.logs({ filter, page: paging.page, pageSize: paging.pageSize }, signal),
  });
  return (
    <PagedTable<InstanceOperation>
      list={logs}
      paging={paging}
      onPage={onPage}
      empty={emptyText}
      rowKey="id"
      scroll={{ x: showInstance ? 1100 : 860 }}
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
        { title: '状态变化', key: 'status', width: 250, render: (_, o) => <StatusChange operation={o} /> },
        {
          title: '详情',
          dataIndex: 'detail',
          render: (d: string) =>
            d ? <Typography.Text ellipsis={{ tooltip: d }}>{d}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>,
        },
      ]}
    />
  );
}

/** A released instance has no status left: the end of its release reads 销毁中 → 已释放. */
const RELEASED = 'done:destroy';

/**
 * How the operation moved the instance: "from → to", or just the status when it stayed where it was
 * (a rename, a renewal), never "运行中 → 运行中".
 */
function StatusChange({ operation: o }: { operation: InstanceOperation }) {
  const arrow = <ArrowRightOutlined style={{ color: '#8c8c8c', fontSize: 12 }} aria-label="变为" />;
  if (o.action === RELEASED)
    return (
      <Flex align="center" gap={6} wrap>
        {o.fromStatus && <InstanceStatusTag status={o.fromStatus} live={false} />}
        {o.fromStatus && arrow}
        <Tag style={{ marginInlineEnd: 0 }}>已释放</Tag>
      </Flex>
    );
  if (o.fromStatus === o.toStatus)
    return (
      <Tooltip title="状态未变">
        <span>
          <InstanceStatusTag status={o.toStatus} live={false} />
        </span>
      </Tooltip>
    );
  return (
    <Flex align="center" gap={6} wrap>
      {o.fromStatus ? <InstanceStatusTag status={o.fromStatus} live={false} /> : <Typography.Text type="secondary">--</Typography.Text>}
      {arrow}
      <InstanceStatusTag status={o.toStatus} live={false} />
    </Flex>
  );
}
