import { Tag, Typography } from 'antd';
import { OPERATOR_KEYS, operatorApi } from '../../account';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { formatMinute } from './operatorViews';
import type { ReviewLogEntry } from '@console/contract';

const KIND_LABEL: Record<ReviewLogEntry['kind'], string> = { personal: '个人认证', enterprise: '企业认证', student: '学生认证' };

/** Every decision, newest first: the verification service's on personal certifications and the operators'. */
export function ReviewLogTable({ paging, onPage }: { paging: Paging; onPage: (next: Paging) => void }) {
  const list = usePagedQuery({
    queryKey: OPERATOR_KEYS.log(paging.page, paging.pageSize),
    queryFn: () => operatorApi.log(paging.page, paging.pageSize),
  });
  return (
    <PagedTable<ReviewLogEntry>
      list={list}
      paging={paging}
      onPage={onPage}
      empty="暂无审核记录"
      rowKey="id"
      scroll={{ x: 860 }}
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
          render: (r: string) =>
            r ? <Typography.Text ellipsis={{ tooltip: r }}>{r}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>,
        },
        { title: '操作人', dataIndex: 'actor', width: 140, render: (a: string) => a || '--' },
      ]}
    />
  );
}
