import { Button, DatePicker, Flex, Form, Input, Select, Tag, Typography } from 'antd';
import type { Dayjs } from 'dayjs';
import { AUDIT_ACTION_LABELS, type AuditEntry } from '@console/contract';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { GOVERNANCE_KEYS, governanceApi, type AuditFilter } from '../api/governance';
import { AuditDiff } from './AuditDiff';
import { formatMinute } from './operatorViews';

const actionLabel = (a: string) => AUDIT_ACTION_LABELS[a] ?? a;

interface FilterForm {
  actor?: string;
  action?: string;
  target?: string;
  range?: [Dayjs | null, Dayjs | null] | null;
}

/** 审计日志: every operator action, newest first, filtered and paged by the server; a row opens its before / after. */
export function AuditLogTab({
  filter,
  paging,
  onFilter,
  onPage,
}: {
  filter: AuditFilter;
  paging: Paging;
  onFilter: (f: AuditFilter) => void;
  onPage: (next: Paging) => void;
}) {
  const list = usePagedQuery({
    queryKey: GOVERNANCE_KEYS.audit(filter, paging.page, paging.pageSize),
    queryFn: (signal) => governanceApi.audit(filter, paging.page, paging.pageSize, signal),
  });
  const submit = (v: FilterForm) =>
    onFilter({
      actor: v.actor?.trim() || undefined,
      action: v.action || undefined,
      target: v.target?.trim() || undefined,
      from: v.range?.[0]?.startOf('day').toISOString(),
      to: v.range?.[1]?.endOf('day').toISOString(),
    });
  const filtered = Object.values(filter).some(Boolean);

  return (
    <Flex vertical gap={16}>
      <Form<FilterForm>
        layout="inline"
        aria-label="筛选审计日志"
        onFinish={submit}
        initialValues={{ actor: filter.actor, action: filter.action, target: filter.target }}
      >
        <Form.Item name="actor">
          <Input placeholder="操作人手机号（本机命令行填 cli）" aria-label="操作人" allowClear style={{ width: 230 }} />
        </Form.Item>
        <Form.Item name="action">
          <Select
            placeholder="操作"
            aria-label="操作"
            allowClear
            style={{ width: 170 }}
            options={Object.entries(AUDIT_ACTION_LABELS).map(([value, label]) => ({ value, label }))}
          />
        </Form.Item>
        <Form.Item name="target">
          <Input placeholder="对象编号" aria-label="对象编号" allowClear style={{ width: 200 }} />
        </Form.Item>
        <Form.Item name="range">
          <DatePicker.RangePicker aria-label="时间范围" />
        </Form.Item>
        <Button type="primary" htmlType="submit">
          查询
        </Button>
      </Form>
      <PagedTable<AuditEntry>
        list={list}
        paging={paging}
        onPage={onPage}
        empty={filtered ? '没有符合条件的操作记录' : '暂无操作记录'}
        rowKey="id"
        scroll={{ x: 1000 }}
        expandable={{ expandedRowRender: (r) => <AuditDiff before={r.before} after={r.after} />, columnTitle: '详情' }}
        columns={[
          { title: '时间', dataIndex: 'at', width: 150, render: (v: string) => formatMinute(v) },
          {
            title: '操作人',
            dataIndex: 'actor',
            width: 130,
            render: (a: string, r) => (r.actorId ? a || '--' : <Tag>本机命令行</Tag>),
          },
          { title: '操作', dataIndex: 'action', width: 150, render: (a: string) => <Tag color="blue">{actionLabel(a)}</Tag> },
          {
            title: '对象',
            key: 'target',
            width: 260,
            render: (_, r) => (
              <Typography.Text ellipsis={{ tooltip: `${r.targetType} ${r.targetId}` }}>
                <Typography.Text type="secondary">{r.targetType}</Typography.Text> {r.targetId}
              </Typography.Text>
            ),
          },
          {
            title: '原因',
            dataIndex: 'reason',
            render: (v: string) =>
              v ? <Typography.Text ellipsis={{ tooltip: v }}>{v}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>,
          },
          { title: '来源地址', dataIndex: 'ip', width: 130 },
        ]}
      />
    </Flex>
  );
}
