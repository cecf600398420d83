import { Badge, Button, Card, Flex, Popconfirm, Segmented, Table, Tag, Typography, type TableColumnsType } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { GPU_SUBSCRIPTION_LIMIT, NoticeKindLabel, PAGE, type GpuSubscription, type NoticeMessage } from '@console/contract';
import { NOTICE_KEYS, noticesApi, noticeQueries } from '../../../api/notices';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { formatTime } from '../../../components/orderViews';
import { useUnreadQuery } from '../../../layouts/NoticeBell';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';

interface MessageQuery extends Paging {
  /** Only the unread ones. */
  unread: boolean;
}

function readQuery(p: URLSearchParams): MessageQuery {
  return { unread: p.get('filter') === 'unread', ...readPaging(p) };
}

function writeQuery(q: MessageQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.unread) p.set('filter', 'unread');
  return writePaging(q, p);
}

export const NOTICE_SETTINGS = `${PAGE.account}?tab=notices`;

/** /console/message: the 站内信 of notices, newest first, read one by one or all at once; and the 有卡时通知我 subscriptions. */
export default function MessagePage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const unread = useUnreadQuery();
  const list = usePagedQuery({
    queryKey: NOTICE_KEYS.list(q.unread, q.page, q.pageSize),
    queryFn: (signal) => noticesApi.list(q, signal),
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: NOTICE_KEYS.messages });
  const markRead = useMutation({ mutationFn: (id: string) => noticesApi.markRead(id), onSettled: refresh });
  const markAll = useMutation({ mutationFn: () => noticesApi.markAllRead(), onSettled: refresh });
  const unreadCount = unread.data?.count ?? 0;

  /** Opening a message reads it; its link, if any, leads to what it is about. */
  const open = (m: NoticeMessage) => {
    if (!m.readAt) markRead.mutate(m.id);
    if (m.link) navigate(m.link);
  };

  const columns: TableColumnsType<NoticeMessage> = [
    {
      title: '消息',
      key: 'message',
      render: (_, m) => (
        <Flex vertical gap={4}>
          <Flex gap={8} align="center">
            {!m.readAt && <Badge status="processing" aria-label="未读" />}
            <Typography.Link strong={!m.readAt} onClick={() => open(m)}>
              {m.title}
            </Typography.Link>
            <Tag>{NoticeKindLabel[m.kind]}</Tag>
          </Flex>
          <Typography.Text type={m.readAt ? 'secondary' : undefined}>{m.body}</Typography.Text>
        </Flex>
      ),
    },
    { title: '时间', dataIndex: 'createdAt', width: 180, render: (v: string) => formatTime(v) },
    {
      title: '操作',
      key: 'actions',
      width: 120,
      render: (_, m) =>
        m.readAt ? (
          <Typography.Text type="secondary">已读</Typography.Text>
        ) : (
          <Button
            type="link"
            size="small"
            style={{ paddingInline: 0 }}
            loading={markRead.isPending && markRead.variables === m.id}
            onClick={() => markRead.mutate(m.id)}
          >
            标记已读
          </Button>
        ),
    },
  ];

  return (
    <PageFrame extra={<RefreshButton list={list} />}>
      <Flex vertical gap={16}>
        <Card>
          <Flex vertical gap={16}>
            <Flex justify="space-between" align="center" wrap gap={12}>
              <Segmented<'all' | 'unread'>
                aria-label="消息筛选"
                value={q.unread ? 'unread' : 'all'}
                onChange={(v) => url.set({ ...url.latest(), unread: v === 'unread', page: 1 })}
                options={[
                  { value: 'all', label: '全部消息' },
                  { value: 'unread', label: unreadCount ? `未读（${unreadCount}）` : '未读' },
                ]}
              />
              <Flex gap={12} align="center">
                <Link to={NOTICE_SETTINGS}>通知设置</Link>
                <Button disabled={unreadCount === 0} loading={markAll.isPending} onClick={() => markAll.mutate()}>
                  全部标记已读
                </Button>
              </Flex>
            </Flex>
            <PagedTable<NoticeMessage>
              rowKey="id"
              columns={columns}
              list={list}
              paging={q}
              onPage={(paging) => url.set({ ...url.latest(), ...paging })}
              unit="条消息"
              empty={q.unread ? '没有未读消息' : '暂无消息：余额不足、欠费关机、到期与释放提醒、有卡通知等会发到这里'}
            />
          </Flex>
        </Card>
        <SubscriptionsCard />
      </Flex>
    </PageFrame>
  );
}

/** 有卡提醒: what the user waits for (cancellable) and what came true lately. */
function SubscriptionsCard() {
  const queryClient = useQueryClient();
  const subs = useQuery(noticeQueries.subscriptions());
  const cancel = useMutation({
    mutationFn: (id: string) => noticesApi.unsubscribe(id),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: NOTICE_KEYS.subscriptions }),
  });
  const waiting = subs.data?.items.filter((s) => !s.notifiedAt).length ?? 0;
  const columns: TableColumnsType<GpuSubscription> = [
    { title: 'GPU 型号', dataIndex: 'gpuName' },
    { title: '地区', dataIndex: 'regionName' },
    { title: '单机空闲卡数', dataIndex: 'gpuCount', render: (n: number) => `≥ ${n} 卡` },
    { title: '订阅时间', dataIndex: 'createdAt', render: (v: string) => formatTime(v) },
    {
      title: '状态',
      key: 'state',
      render: (_, s) => (s.notifiedAt ? <Tag color="green">已于 {formatTime(s.notifiedAt)} 通知</Tag> : <Tag color="processing">等待有卡</Tag>),
    },
    {
      title: '操作',
      key: 'actions',
      width: 100,
      render: (_, s) =>
        s.notifiedAt ? null : (
          <Popconfirm title="取消这个有卡提醒？" okText="取消订阅" cancelText="保留" onConfirm={() => cancel.mutateAsync(s.id).catch(() => undefined)}>
            <Button type="link" size="small" style={{ paddingInline: 0 }}>
              取消订阅
            </Button>
          </Popconfirm>
        ),
    },
  ];
  return (
    <Card
      title="有卡提醒"
      extra={
        <Typography.Text type="secondary">
          等待中 {waiting} / {subs.data?.limit ?? GPU_SUBSCRIPTION_LIMIT} 个
        </Typography.Text>
      }
    >
      {subs.isError ? (
        <LoadError error={subs.error} onRetry={() => void subs.refetch()} />
      ) : (
        <Table<GpuSubscription>
          rowKey="id"
          columns={columns}
          dataSource={subs.data?.items}
          loading={subs.isPending}
          pagination={false}
          locale={{ emptyText: <>没有有卡提醒：在算力市场已租满的主机上，或开机提示 GPU 被占用时，点「有卡时通知我」订阅</> }}
        />
      )}
    </Card>
  );
}
