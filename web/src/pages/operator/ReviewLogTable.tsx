import { Empty, Table, Tag, Typography } from 'antd';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { operatorApi, type ReviewLogEntry } from '../../api/account';
import { LoadError } from '../../components/LoadError';
import { formatMinute, OPERATOR_KEYS, serverPaging } from './operatorViews';

const KIND_LABEL: Record<ReviewLogEntry['kind'], string> = { personal: '个人认证', enterprise: '企业认证', student: '学生认证' };

/** Every decision, newest first: the verification service's on personal certifications and the operators'. */
export function ReviewLogTable({ page, pageSize, onPage }: { page: number; pageSize: number; onPage: (page: number, pageSize: number) => void }) {
  const list = useQuery({
    queryKey: OPERATOR_KEYS.log(page, pageSize),
    queryFn: () => operatorApi.log(page, pageSize),
    placeholderData: keepPreviousData,
  });
  if (list.isError && !list.data) return <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  return (
    <Table<ReviewLogEntry>
      rowKey="id"
      loading={list.isPending || (list.isFetching && list.isPlaceholderData)}
      dataSource={list.data?.items}
      scroll={{ x: 860 }}
      tableLayout="fixed"
      locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="暂无审核记录" /> }}
      pagination={serverPaging(page, pageSize, list.data?.total, onPage)}
      columns={[
        { title: '时间', dataIndex: 'createdAt', width: 150, render: (v: string) => formatMinute(v) },
        { title: '类型', dataIndex: 'kind', width: 100, render: (k: ReviewLogEntry['kind']) => KIND_LABEL[k] ?? k },
        { title: '用户手机号', dataIndex: 'userMobile', width: 130, render: (m: string) => m || '--' },
        {
          title: '决定',
          dataIndex: 'decision',
          width: 80,
          render: (d: ReviewLogEntry['decision']) => (d === 'approve' ? <Tag color="success">通过</Tag> : <Tag color="error">驳回</Tag>),
        },
        {
          title: '原因',
          dataIndex: 'reason',
          render: (r: string) => (r ? <Typography.Text ellipsis={{ tooltip: r }}>{r}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>),
        },
        { title: '操作人', dataIndex: 'actor', width: 140, render: (a: string) => a || '--' },
      ]}
    />
  );
}
