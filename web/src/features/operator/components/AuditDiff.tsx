import { Table, Typography } from 'antd';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

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
        { title: '字段', dataIndex: 'key', width: 160 },
        { title: '变更前', key: 'before', render: (_, r) => cell(r.before, r.changed, 'danger') },
        { title: '变更后', key: 'after', render: (_, r) => cell(r.after, r.changed, 'success') },
      ]}
    />
  );
}
