import { Button, Card, Empty, Flex, Input, Select, Space, Tooltip, Typography } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import {
  InstanceCategory,
  InstanceStatus,
  isPostpaid,
  type Instance,
  type InstanceCategory as Category,
  type InstanceStatus as Status,
  type InstancePage,
} from '@console/contract';
import { INSTANCE_KEYS, instancesApi, type InstanceFilter } from '../api/instances';
import { BILLING_KEYS } from '../../../api/billing';
import { formatTime } from '../../../components/orderViews';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { PageFrame } from '../../../components/PageFrame';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { InstanceRowActions } from './InstanceActionButtons';
import { useSession } from '../../../session/useSession';
import { mayBuy } from '../../../auth/permissions';
import {
  AccessCell,
  BillingCell,
  BUSY_POLL_MS,
  ConfigCell,
  detailPathOf,
  InstanceStatusTags,
  isBusy,
  purchasePathOf,
  ScheduledStopNote,
} from './instanceViews';
import { useInstanceActions } from '../hooks/useInstanceActions';
import { useChildren } from './HandModal';

/** OperateFail is display-only: nothing is ever stored in it, so it is no filter. */
const STATUS_OPTIONS = InstanceStatus.values.filter((s) => s !== 'OperateFail').map((s) => ({ value: s, label: InstanceStatus.label(s) }));

interface ListQuery extends Paging {
  status?: Status;
  search?: string;
}

function readQuery(p: URLSearchParams): ListQuery {
  const status = p.get('status');
  return {
    status: status && STATUS_OPTIONS.some((o) => o.value === status) ? (status as Status) : undefined,
    search: p.get('search')?.trim().slice(0, 50) || undefined,
    ...readPaging(p),
  };
}

function writeQuery(q: ListQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.status) p.set('status', q.status);
  if (q.search) p.set('search', q.search);
  return writePaging(q, p);
}

/**
 * Column widths (px), wide enough for their longest content on one line: a date-time "2026-11-23
 * 08:56:16" with its padding, "… 释放" under 计费, 详情 开机 关机 更多 in 操作; under 状态 a scheduled
 * stop wraps onto a second line.
 */
const COLUMN_WIDTH = { name: 190, status: 160, config: 190, access: 240, billing: 210, region: 110, created: 190, op: 220 };
const TABLE_WIDTH = Object.values(COLUMN_WIDTH).reduce((a, b) => a + b, 0);

/** While a host is unreachable the instance waits for the reconciler: look again now and then. */
export const UNKNOWN_POLL_MS = 15_000;
/** How often the header balance follows a running post-paid instance (the server charges every minute). */
export const METERED_BALANCE_MS = 60_000;

/**
 * Poll every 2 s while an operation is under way, slowly while an instance's state is unknown, and
 * not after a failed refresh (the user retries).
 */
export function pollWhileBusy(data: InstancePage | undefined, failed: boolean): number | false {
  if (failed || !data) return false;
  if (data.items.some((i) => isBusy(i.status))) return BUSY_POLL_MS;
  return data.items.some((i) => i.status === 'Unknown') ? UNKNOWN_POLL_MS : false;
}

/** The header balance follows the charges while a post-paid instance on this page runs. */
function useBalanceWhileMetered(items: Instance[] | undefined) {
  const queryClient = useQueryClient();
  const metered = Boolean(items?.some((i) => i.status === 'Running' && isPostpaid(i.cycle)));
  useEffect(() => {
    if (!metered) return;
    const timer = setInterval(() => void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money }), METERED_BALANCE_MS);
    return () => clearInterval(timer);
  }, [metered, queryClient]);
}

/**
 * The instances of one category (GPU, 镜像应用, CPU, 云桌面, 跨境电商, 云游戏): filters and paging in
 * the URL, every action confirmed with its cost, live while anything is starting or stopping.
 */
export function InstanceListPage({ category }: { category: Category }) {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const set = (patch: Partial<ListQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const filter: InstanceFilter = { category, status: q.status, search: q.search };
  const list = usePagedQuery({
    queryKey: INSTANCE_KEYS.list(filter, q.page, q.pageSize),
    queryFn: (signal) => instancesApi.list({ filter, page: q.page, pageSize: q.pageSize }, signal),
    refetchInterval: pollWhileBusy,
  });
  useBalanceWhileMetered(list.data?.items);
  const actions = useInstanceActions();
  const filtered = Boolean(q.status || q.search);
  const name = InstanceCategory.label(category);
  const purchase = purchasePathOf(category);
  const { user } = useSession();
  const canBuy = mayBuy(user, category);
  // A main account sees which of its instances a child holds (handed over, or bought by the child).
  const children = useChildren(user?.isChild === false);
  const childNames = new Map((children.data?.items ?? []).map((c) => [c.id, c.childName]));

  return (
    <PageFrame
      extra={
        canBuy && (
          <Link to={purchase}>
            <Button type="primary" icon={<PlusOutlined />}>
              创建实例
            </Button>
          </Link>
        )
      }
    >
      <Card>
        <Flex vertical gap={16}>
          <Flex justify="space-between" align="center" wrap gap={12}>
            <Space wrap size={12}>
              <Select<Status>
                aria-label="实例状态"
                placeholder="全部状态"
                allowClear
                style={{ width: 170 }}
                value={q.status}
                onChange={(status) => set({ status })}
                options={STATUS_OPTIONS}
              />
              <Input.Search
                key={q.search ?? ''}
                aria-label="搜索实例"
                placeholder="搜索实例名称或 ID"
                allowClear
                defaultValue={q.search}
                maxLength={50}
                style={{ width: 260 }}
                onSearch={(value) => set({ search: value.trim() || undefined })}
              />
              {filtered && (
                <Button type="link" onClick={() => set({ status: undefined, search: undefined })} style={{ paddingInline: 4 }}>
                  清除筛选
                </Button>
              )}
            </Space>
            <RefreshButton list={list} />
          </Flex>

          <PagedTable<Instance>
            list={list}
            paging={q}
            onPage={(paging) => url.set({ ...url.latest(), ...paging })}
            unit="个实例"
            empty={
              filtered ? (
                <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="没有符合筛选条件的实例">
                  <Button onClick={() => set({ status: undefined, search: undefined })}>清除筛选</Button>
                </Empty>
              ) : (
                <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={`您还没有${/^[A-Za-z]/.test(name) ? ' ' : ''}${name}`}>
                  {canBuy && (
                    <Link to={purchase}>
                      <Button type="primary">立即创建</Button>
                    </Link>
                  )}
                </Empty>
              )
            }
            rowKey="id"
            // The sum of the widths: each column keeps its width and the table scrolls sideways below it,
            // so 地区, 创建时间 and the dates under 计费 are never squeezed or hidden under the fixed 操作 column.
            scroll={{ x: TABLE_WIDTH }}
            columns={[
              {
                title: '名称 / ID',
                key: 'name',
                width: COLUMN_WIDTH.name,
                fixed: 'start',
                render: (_, i) => (
                  <Flex vertical gap={2} style={{ minWidth: 0 }}>
                    <Link to={detailPathOf(i)}>
                      <Typography.Text ellipsis={{ tooltip: i.name }} style={{ color: 'inherit', maxWidth: '100%' }}>
                        {i.name}
                      </Typography.Text>
                    </Link>
                    <Typography.Text
                      type="secondary"
                      className="mono"
                      style={{ fontSize: 12 }}
                      ellipsis
                      copyable={{ text: i.id, tooltips: ['复制 ID', '已复制'] }}
                    >
                      {i.id}
                    </Typography.Text>
                    {childNames.get(i.holderId) && (
                      <Typography.Text type="secondary" style={{ fontSize: 12 }} ellipsis>
                        子账号 {childNames.get(i.holderId)} 管理
                      </Typography.Text>
                    )}
                  </Flex>
                ),
              },
              {
                title: '状态',
                key: 'status',
                width: COLUMN_WIDTH.status,
                render: (_, i) => (
                  <Flex vertical gap={4}>
                    <InstanceStatusTags instance={i} />
                    <ScheduledStopNote instance={i} onCancel={() => actions.cancelScheduledStop(i)} />
                  </Flex>
                ),
              },
              { title: '配置', key: 'config', width: COLUMN_WIDTH.config, render: (_, i) => <ConfigCell instance={i} /> },
              { title: '登录 / 访问', key: 'access', width: COLUMN_WIDTH.access, render: (_, i) => <AccessCell instance={i} /> },
              { title: '计费', key: 'billing', width: COLUMN_WIDTH.billing, render: (_, i) => <BillingCell instance={i} /> },
              {
                title: '地区',
                dataIndex: 'regionName',
                width: COLUMN_WIDTH.region,
                ellipsis: { showTitle: false },
                render: (v: string) => (
                  <Tooltip title={v} placement="topLeft">
                    {v}
                  </Tooltip>
                ),
              },
              {
                title: '创建时间',
                dataIndex: 'createdAt',
                width: COLUMN_WIDTH.created,
                render: (v: string) => <span style={{ whiteSpace: 'nowrap' }}>{formatTime(v)}</span>,
              },
              { title: '操作', key: 'op', width: COLUMN_WIDTH.op, fixed: 'end', render: (_, i) => <InstanceRowActions instance={i} actions={actions} /> },
            ]}
          />
        </Flex>
      </Card>
      {actions.holder}
    </PageFrame>
  );
}
