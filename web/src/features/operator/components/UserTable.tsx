import { Flex, Input, Tag, Typography } from 'antd';
import { AccountType, type AccountType as Account, type OperatorUser } from '@console/contract';
import { OPERATOR_KEYS, operatorApi } from '../../account';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { CertStatusTag, CertTypeTag, formatMinute } from './operatorViews';

const yes = (on: boolean, label: string, color?: string) => (on ? <Tag color={color}>{label}</Tag> : <Typography.Text type="secondary">--</Typography.Text>);

/** Main accounts (children are counted, not listed) with their certification state; searched on the server. */
export function UserTable({ q, paging, onSearch, onPage }: { q: string; paging: Paging; onSearch: (q: string) => void; onPage: (next: Paging) => void }) {
  const list = usePagedQuery({
    queryKey: OPERATOR_KEYS.users(q, paging.page, paging.pageSize),
    queryFn: () => operatorApi.users({ q: q || undefined, page: paging.page, pageSize: paging.pageSize }),
  });

  return (
    <Flex vertical gap={16}>
      <Input.Search
        // Remount on a URL change (back button) so the box shows the search that is in effect.
        key={q}
        defaultValue={q}
        aria-label="搜索用户"
        placeholder="手机号 / 邮箱 / 姓名"
        allowClear
        enterButton="搜索"
        maxLength={50}
        style={{ maxWidth: 360 }}
        onSearch={(value) => onSearch(value.trim())}
      />
      <PagedTable<OperatorUser>
        list={list}
        paging={paging}
        onPage={onPage}
        empty={q ? `没有找到与“${q}”匹配的用户` : '暂无用户'}
        rowKey="id"
        scroll={{ x: 1120 }}
        // A user's `children` is a count of child accounts, not rows of a tree.
        expandable={{ childrenColumnName: 'childRows' }}
        columns={[
          { title: '手机号', dataIndex: 'mobile', width: 130, render: (m: string) => m || '--' },
          {
            title: '邮箱',
            dataIndex: 'email',
            width: 200,
            render: (e: string) => (e ? <Typography.Text ellipsis={{ tooltip: e }}>{e}</Typography.Text> : '--'),
          },
          {
            title: '账号类型',
            dataIndex: 'accountType',
            width: 100,
            render: (t: string) => (t in AccountType.map ? AccountType.label(t as Account) : t || '--'),
          },
          {
            title: '认证',
            key: 'cert',
            width: 190,
            render: (_, u) => (
              <Flex gap={4} wrap>
                <CertTypeTag type={u.certType} />
                {u.certStatus !== 'Init' && <CertStatusTag status={u.certStatus} />}
              </Flex>
            ),
          },
          { title: '学生', dataIndex: 'isStudent', width: 80, render: (v: boolean) => yes(v, '学生', 'cyan') },
          { title: '子账号数', dataIndex: 'children', width: 90, align: 'right' },
          { title: '运营', dataIndex: 'isOperator', width: 80, render: (v: boolean) => yes(v, '运营', 'purple') },
          { title: '停用', dataIndex: 'disabled', width: 80, render: (v: boolean) => yes(v, '已停用', 'error') },
          { title: '注册时间', dataIndex: 'createdAt', width: 150, render: (v: string) => formatMinute(v) },
        ]}
      />
    </Flex>
  );
}
