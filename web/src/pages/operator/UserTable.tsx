import { Empty, Flex, Input, Table, Tag, Typography } from 'antd';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { AccountType, type AccountType as Account } from '@console/contract';
import { operatorApi, type OperatorUser } from '../../api/account';
import { LoadError } from '../../components/LoadError';
import { CertStatusTag, CertTypeTag, formatMinute, OPERATOR_KEYS, serverPaging } from './operatorViews';

const yes = (on: boolean, label: string, color?: string) => (on ? <Tag color={color}>{label}</Tag> : <Typography.Text type="secondary">--</Typography.Text>);

/** Main accounts (children are counted, not listed) with their certification state; searched on the server. */
export function UserTable({
  q,
  page,
  pageSize,
  onSearch,
  onPage,
}: {
  q: string;
  page: number;
  pageSize: number;
  onSearch: (q: string) => void;
  onPage: (page: number, pageSize: number) => void;
}) {
  const list = useQuery({
    queryKey: OPERATOR_KEYS.users(q, page, pageSize),
    queryFn: () => operatorApi.users({ q: q || undefined, page, pageSize }),
    placeholderData: keepPreviousData,
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
      {list.isError && !list.data ? (
        <LoadError error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <Table<OperatorUser>
          rowKey="id"
          loading={list.isPending || (list.isFetching && list.isPlaceholderData)}
          dataSource={list.data?.items}
          scroll={{ x: 1120 }}
          tableLayout="fixed"
          // A user's `children` is a count of child accounts, not rows of a tree.
          expandable={{ childrenColumnName: 'childRows' }}
          locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={q ? `没有找到与“${q}”匹配的用户` : '暂无用户'} /> }}
          pagination={serverPaging(page, pageSize, list.data?.total, onPage)}
          columns={[
            { title: '手机号', dataIndex: 'mobile', width: 130, render: (m: string) => m || '--' },
            { title: '邮箱', dataIndex: 'email', width: 200, render: (e: string) => (e ? <Typography.Text ellipsis={{ tooltip: e }}>{e}</Typography.Text> : '--') },
            { title: '账号类型', dataIndex: 'accountType', width: 100, render: (t: string) => (t in AccountType.map ? AccountType.label(t as Account) : t || '--') },
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
      )}
    </Flex>
  );
}
