import { Table, Typography } from 'antd';
import { OPERATOR_ROLE_LABELS, formatYuan, type OperatorRole } from '@console/contract';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

/** Chinese names of the fields the server's audit rows use; others show as they are. */
const FIELD_LABELS: Record<string, string> = {
  amount: '金额',
  to: '账户',
  direction: '方向',
  status: '状态',
  mobile: '手机号',
  roles: '角色',
  reason: '原因',
  userId: '用户编号',
  decision: '决定',
  key: '业务编号',
};
const VALUE_LABELS: Record<string, string> = {
  cash: '现金',
  gift: '赠送金',
  credit: '加款',
  debit: '扣款',
  pending: '待审批',
  approved: '已通过',
  rejected: '已驳回',
  approve: '通过',
  reject: '驳回',
};

/** A field's value as an operator reads it: amounts in yuan, roles and states in Chinese (compared raw). */
export function readable(key: string, v: unknown): unknown {
  if (key === 'amount' && /^-?[0-9]+$/.test(String(v))) return `¥${formatYuan(String(v))}`;
  if (key === 'roles' && Array.isArray(v)) return v.map((r) => OPERATOR_ROLE_LABELS[r as OperatorRole] ?? String(r)).join('、') || '无';
  if (typeof v === 'string' && v in VALUE_LABELS) return VALUE_LABELS[v];
  return v;
}

interface Row {
  key: string;
  before: unknown;
  after: unknown;
  changed: boolean;
}

/** The fields of `before` and `after` side by side, those that changed first and marked. */
export function diffRows(before: unknown, after: unknown): Row[] {
  const b = isRecord(before) ? before : before === null || before === undefined ? {} : { 值: before };
  const a = isRecord(after) ? after : after === null || after === undefined ? {} : { 值: after };
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const rows = keys.map((key) => ({ key, before: b[key], after: a[key], changed: show(b[key]) !== show(a[key]) }));
  return [...rows.filter((r) => r.changed), ...rows.filter((r) => !r.changed)];
}

/** An audit row's before and after, readable: one line per field, changes highlighted. */
export function AuditDiff({ before, after }: { before: unknown; after: unknown }) {
  const rows = diffRows(before, after);
  if (!rows.length) return <Typography.Text type="secondary">无前后内容</Typography.Text>;
  const cell = (v: unknown, changed: boolean, type: 'danger' | 'success') =>
    v === undefined ? (
      <Typography.Text type="secondary">（无）</Typography.Text>
    ) : (
      <Typography.Text type={changed ? type : undefined} code={changed} style={{ wordBreak: 'break-all' }}>
        {show(v)}
      </Typography.Text>
    );
  return (
    <Table<Row>
      size="small"
      rowKey="key"
      pagination={false}
      dataSource={rows}
      aria-label="变更前后"
      columns={[
        { title: '字段', dataIndex: 'key', width: 160, render: (k: string) => FIELD_LABELS[k] ?? k },
        { title: '变更前', key: 'before', render: (_, r) => cell(readable(r.key, r.before), r.changed, 'danger') },
        { title: '变更后', key: 'after', render: (_, r) => cell(readable(r.key, r.after), r.changed, 'success') },
      ]}
    />
  );
}
