/** Pieces the 用量统计 page and the model bill of a day share: the sums as cards and columns, the call log's table. */
import type { ReactNode } from 'react';
import { Card, Col, Empty, Flex, Row, Skeleton, Statistic, Tag, Typography, theme, type TableColumnType } from 'antd';
import { Link } from 'react-router';
import { formatBeijing, MODEL_CALL_STATUS_LABELS, PAGE, type ModelCall, type ModelUsageSum } from '@console/contract';
import { formatUnitPrice } from '../../../components/Price';
import type { UseQueryResult } from '@tanstack/react-query';
import { PLAYGROUND_KEY, PLAYGROUND_LABEL, type ModelCallList } from '../api/modelUsage';
import { PagedTable } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';

/** Token counts as people read them: 1234567 → "1,234,567". */
export const formatTokens = (n: number) => n.toLocaleString('en-US');

/** The name of the key a call came through; the online experience has no key of its own. */
export const keyLabel = (keyId: string, keyName: string) => (keyId === PLAYGROUND_KEY ? PLAYGROUND_LABEL : keyName || keyId.slice(0, 8));

/** A call's time taken: "850 ms", "12.3 s". */
export function formatLatency(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** 请求数 · 输入 Token · 输出 Token · 资源包抵扣 Token · 消费金额, each in a card. */
export function UsageSumCards({ sum, loading }: { sum: ModelUsageSum | undefined; loading?: boolean }) {
  const { token } = theme.useToken();
  const cards = [
    {
      title: '请求数',
      value: sum ? formatTokens(sum.requests) : '--',
      note: sum && sum.failed > 0 ? `其中失败 ${formatTokens(sum.failed)} 次（不计费）` : undefined,
    },
    { title: '输入 Token', value: sum ? formatTokens(sum.promptTokens) : '--' },
    { title: '输出 Token', value: sum ? formatTokens(sum.completionTokens) : '--' },
    { title: '资源包抵扣 Token', value: sum ? formatTokens(sum.packageTokens) : '--' },
    { title: '消费金额（元）', value: sum ? `¥${formatUnitPrice(sum.cost)}` : '--', primary: true },
  ];
  return (
    <Row gutter={[16, 16]} aria-label="用量汇总">
      {cards.map((c) => (
        <Col key={c.title} flex="1 1 180px">
          <Card size="small" style={{ height: '100%' }}>
            {loading ? (
              <Skeleton active title={false} paragraph={{ rows: 2 }} />
            ) : (
              <Statistic title={c.title} value={c.value} styles={c.primary ? { content: { color: token.colorPrimary, fontWeight: 600 } } : undefined} />
            )}
            {!loading && c.note && (
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {c.note}
              </Typography.Text>
            )}
          </Card>
        </Col>
      ))}
    </Row>
  );
}

/** The columns of a table of sums (per day, per model, per key), after the row's own first column. */
export function sumColumns<T extends ModelUsageSum>(): TableColumnType<T>[] {
  const num = (title: string, key: keyof ModelUsageSum) => ({
    title,
    dataIndex: key,
    key,
    align: 'right' as const,
    render: (v: number) => formatTokens(v),
  });
  return [
    num('请求数', 'requests'),
    num('输入 Token', 'promptTokens'),
    num('输出 Token', 'completionTokens'),
    num('资源包抵扣 Token', 'packageTokens'),
    { title: '金额（元）', dataIndex: 'cost', key: 'cost', align: 'right', render: (v: string) => <span className="amount-cell">{formatUnitPrice(v)}</span> },
  ];
}

const STATUS_COLORS: Record<ModelCall['status'], string> = { open: 'processing', ok: 'success', aborted: 'warning', error: 'error', expired: 'default' };

export function CallStatusTag({ status }: { status: ModelCall['status'] }) {
  return <Tag color={STATUS_COLORS[status]}>{MODEL_CALL_STATUS_LABELS[status]}</Tag>;
}

/** Where the first calls come from: the online experience, or a key for the API. */
export function NoCallsYet({ text = '所选时间内没有调用记录' }: { text?: string }) {
  return (
    <Empty
      image={Empty.PRESENTED_IMAGE_SIMPLE}
      description={
        <Flex vertical gap={4} align="center">
          <Typography.Text>{text}</Typography.Text>
          <Typography.Text type="secondary">
            去 <Link to={PAGE.modelExperience}>在线体验</Link> 试一试模型，或在 <Link to={PAGE.modelKey}>API KEY</Link> 创建密钥后通过 API 调用。
          </Typography.Text>
        </Flex>
      }
    />
  );
}

/** 调用明细保留 N 天，统计数据长期保留 — what the call log can still show. */
export function RetentionNote({ days }: { days: number | undefined }) {
  if (days === undefined) return null;
  return (
    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
      调用明细保留 {days} 天，统计数据长期保留
    </Typography.Text>
  );
}

/** The call log: one row a call, server paged. */
/** The call log's column widths added up: a narrower window scrolls it sideways rather than squeezing 错误信息 away. */
const CALL_COLUMNS_WIDTH = 170 + 180 + 140 + 150 + 110 + 100 + 90 + 130 + 260;

export function CallTable({
  list,
  paging,
  onPage,
  empty,
}: {
  list: UseQueryResult<ModelCallList>;
  paging: Paging;
  onPage: (next: Paging) => void;
  empty: ReactNode;
}) {
  return (
    <PagedTable<ModelCall>
      list={list}
      paging={paging}
      onPage={onPage}
      unit="次调用"
      totalNote="金额单位：元"
      empty={empty}
      rowKey="id"
      size="middle"
      scroll={{ x: CALL_COLUMNS_WIDTH }}
      aria-label="调用明细"
      columns={[
        { title: '时间', dataIndex: 'createdAt', width: 170, render: (t: string) => formatBeijing(t, 'second') },
        { title: '模型', dataIndex: 'model', width: 180, ellipsis: { showTitle: true } },
        { title: '密钥', dataIndex: 'keyName', width: 140, ellipsis: { showTitle: true }, render: (name: string, c) => keyLabel(c.keyId, name) },
        {
          title: '输入 / 输出 Token',
          key: 'tokens',
          width: 150,
          align: 'right',
          render: (_, c) => `${formatTokens(c.promptTokens)} / ${formatTokens(c.completionTokens)}`,
        },
        { title: '资源包抵扣', dataIndex: 'packageTokens', width: 110, align: 'right', render: (v: number) => (v > 0 ? formatTokens(v) : '--') },
        {
          title: '费用（元）',
          dataIndex: 'cost',
          width: 100,
          align: 'right',
          render: (v: string) => <span className="amount-cell">{formatUnitPrice(v)}</span>,
        },
        { title: '耗时', dataIndex: 'latencyMs', width: 90, align: 'right', render: (ms: number) => formatLatency(ms) },
        { title: '状态', dataIndex: 'status', width: 130, render: (s: ModelCall['status']) => <CallStatusTag status={s} /> },
        {
          title: '错误信息',
          dataIndex: 'error',
          width: 260,
          // Whole, wrapped: the message is what the caller needs to read.
          render: (e: string | null) =>
            e ? (
              <Typography.Text type="danger" style={{ wordBreak: 'break-word' }}>
                {e}
              </Typography.Text>
            ) : (
              '--'
            ),
        },
      ]}
    />
  );
}
