import { useMemo, useRef, useState } from 'react';
import { Button, Card, Col, DatePicker, Flex, Row, Segmented, Select, Space, Table, Tabs, Typography } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import dayjs, { type Dayjs } from 'dayjs';
import { MODEL_STATS_MAX_DAYS, type ModelStats } from '@console/contract';
import {
  beijingToday,
  dayBillPath,
  lastDays,
  MODEL_USAGE_KEYS,
  PLAYGROUND_KEY,
  PLAYGROUND_LABEL,
  useModelCalls,
  useModelKeyOptions,
  useModelOptions,
  useModelStats,
  type ModelStatsFilter,
  type NamedOption,
} from '../api/modelUsage';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { StatsChart, useDailyOption, useModelShareOption, type ShareBy } from '../components/StatsCharts';
import { CallTable, keyLabel, NoCallsYet, RetentionNote, sumColumns, UsageSumCards } from '../components/StatsViews';

type Range = 'today' | '7d' | '30d' | 'custom';
type SumTab = 'day' | 'model' | 'key';

const PRESET_DAYS: Record<Exclude<Range, 'custom'>, number> = { today: 1, '7d': 7, '30d': 30 };
const DAY = /^\d{4}-\d{2}-\d{2}$/;

interface StatsQuery extends Paging {
  range: Range;
  /** Custom range only: Beijing days, both included. */
  from: string;
  to: string;
  model: string;
  keyId: string;
  tab: SumTab;
  /** The call log's day; empty: the latest calls. */
  date: string;
}

const isDay = (v: string | null): v is string => !!v && DAY.test(v) && dayjs(v).format('YYYY-MM-DD') === v;
/** Days from `from` to `to`, both included. */
const spanDays = (from: string, to: string) => dayjs(to).diff(dayjs(from), 'day') + 1;

function readQuery(p: URLSearchParams): StatsQuery {
  const range = p.get('range');
  const from = p.get('from');
  const to = p.get('to');
  const customOk = range === 'custom' && isDay(from) && isDay(to) && from <= to && spanDays(from, to) <= MODEL_STATS_MAX_DAYS;
  const tab = p.get('tab');
  const date = p.get('date');
  return {
    range: customOk ? 'custom' : range === 'today' || range === '30d' ? range : '7d',
    from: customOk ? from : '',
    to: customOk ? to : '',
    model: p.get('model') ?? '',
    keyId: p.get('keyId') ?? '',
    tab: tab === 'model' || tab === 'key' ? tab : 'day',
    date: isDay(date) ? date : '',
    ...readPaging(p),
  };
}

function writeQuery(q: StatsQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.range !== '7d') p.set('range', q.range);
  if (q.range === 'custom') {
    p.set('from', q.from);
    p.set('to', q.to);
  }
  if (q.model) p.set('model', q.model);
  if (q.keyId) p.set('keyId', q.keyId);
  if (q.tab !== 'day') p.set('tab', q.tab);
  if (q.date) p.set('date', q.date);
  return writePaging(q, p);
}

/** The days a query covers: a preset counts back from today (Beijing). */
function rangeOf(q: StatsQuery): { from: string; to: string } {
  return q.range === 'custom' ? { from: q.from, to: q.to } : lastDays(PRESET_DAYS[q.range]);
}

/** /model/stats: what the model service was used for, over a range of days, and the calls themselves. */
export default function StatsPage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  /** A new filter starts the call log again at its first page. */
  const set = (patch: Partial<StatsQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const range = rangeOf(q);
  const filter: ModelStatsFilter = { ...range, model: q.model || undefined, keyId: q.keyId || undefined };
  const stats = useModelStats(filter);
  const queryClient = useQueryClient();
  const callLog = useRef<HTMLDivElement>(null);
  const filtered = !!(q.model || q.keyId);

  const showCallsOf = (date: string) => {
    set({ date });
    callLog.current?.scrollIntoView?.({ behavior: 'smooth', block: 'start' });
  };

  return (
    <PageFrame
      extra={
        <Button
          icon={<ReloadOutlined />}
          loading={stats.isFetching && !stats.isPending}
          onClick={() => void queryClient.invalidateQueries({ queryKey: MODEL_USAGE_KEYS.all })}
        >
          刷新
        </Button>
      }
    >
      <Flex vertical gap={16}>
        <Card size="small">
          <Filters query={q} range={range} stats={stats.data} onChange={set} />
        </Card>

        {stats.isError ? (
          <Card>
            <LoadError error={stats.error} onRetry={() => void stats.refetch()} />
          </Card>
        ) : stats.data && stats.data.total.requests === 0 ? (
          <Card>
            <NoCallsYet />
            {filtered && (
              <Flex justify="center">
                <Button onClick={() => set({ model: '', keyId: '' })}>清除模型和密钥筛选</Button>
              </Flex>
            )}
          </Card>
        ) : (
          <>
            <UsageSumCards sum={stats.data?.total} loading={stats.isPending} />
            {stats.data && (
              <>
                <Charts stats={stats.data} />
                <SumTables stats={stats.data} tab={q.tab} onTab={(tab) => url.set({ ...url.latest(), tab })} onChange={set} onShowCalls={showCallsOf} />
              </>
            )}
          </>
        )}

        <div ref={callLog}>
          <CallLog query={q} onChange={set} onPage={(paging) => url.set({ ...url.latest(), ...paging })} />
        </div>
      </Flex>
    </PageFrame>
  );
}

function Filters({
  query: q,
  range,
  stats,
  onChange,
}: {
  query: StatsQuery;
  range: { from: string; to: string };
  stats: ModelStats | undefined;
  onChange: (patch: Partial<StatsQuery>) => void;
}) {
  const keys = useModelKeyOptions();
  const models = useModelOptions();
  const today = beijingToday();
  // Names the stats know (a deleted key, a model taken off the square) stay choosable.
  const keyOptions = withExtra(
    keys.data ?? [{ value: PLAYGROUND_KEY, label: PLAYGROUND_LABEL }],
    (stats?.keys ?? []).map((k) => ({ value: k.keyId, label: keyLabel(k.keyId, k.keyName) })),
    q.keyId,
  );
  const modelOptions = withExtra(
    models.data ?? [],
    (stats?.models ?? []).map((m) => ({ value: m.model, label: m.model })),
    q.model,
  );
  const [pickingFrom, setPickingFrom] = useState<Dayjs | null>(null);

  return (
    <Flex wrap gap={12} align="center">
      <Segmented<Range>
        aria-label="时间范围"
        value={q.range}
        onChange={(value) => onChange(value === 'custom' ? { range: 'custom', ...range } : { range: value, from: '', to: '' })}
        options={[
          { value: 'today', label: '今天' },
          { value: '7d', label: '近 7 天' },
          { value: '30d', label: '近 30 天' },
          { value: 'custom', label: '自定义' },
        ]}
      />
      <DatePicker.RangePicker
        aria-label="自定义日期"
        allowClear={false}
        value={[dayjs(range.from), dayjs(range.to)]}
        onCalendarChange={(dates) => setPickingFrom(dates?.[0] ?? null)}
        onOpenChange={(open) => !open && setPickingFrom(null)}
        disabledDate={(d) => {
          if (d.format('YYYY-MM-DD') > today) return true;
          // At most MODEL_STATS_MAX_DAYS days at once, counted from the first day picked.
          return !!pickingFrom && Math.abs(d.diff(pickingFrom, 'day')) >= MODEL_STATS_MAX_DAYS;
        }}
        onChange={(dates) => {
          if (dates?.[0] && dates[1]) onChange({ range: 'custom', from: dates[0].format('YYYY-MM-DD'), to: dates[1].format('YYYY-MM-DD') });
        }}
      />
      <Select
        aria-label="模型"
        placeholder="全部模型"
        allowClear
        showSearch={{ optionFilterProp: 'label' }}
        style={{ width: 240 }}
        value={q.model || undefined}
        onChange={(model?: string) => onChange({ model: model ?? '' })}
        options={modelOptions}
        loading={models.isPending}
        notFoundContent="没有匹配的模型"
      />
      <Select
        aria-label="密钥"
        placeholder="全部密钥"
        allowClear
        showSearch={{ optionFilterProp: 'label' }}
        style={{ width: 200 }}
        value={q.keyId || undefined}
        onChange={(keyId?: string) => onChange({ keyId: keyId ?? '' })}
        options={keyOptions}
        loading={keys.isPending}
        notFoundContent="没有匹配的密钥"
      />
      {(q.model || q.keyId) && (
        <Button type="link" onClick={() => onChange({ model: '', keyId: '' })} style={{ paddingInline: 4 }}>
          清除筛选
        </Button>
      )}
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        按北京时间统计 · {range.from === range.to ? range.from : `${range.from} 至 ${range.to}`}
      </Typography.Text>
    </Flex>
  );
}

/** The listed options, then those only the stats (or the URL) name, each value once. */
function withExtra(listed: NamedOption[], extra: NamedOption[], current: string): NamedOption[] {
  const all = [...listed];
  for (const o of [...extra, ...(current ? [{ value: current, label: current }] : [])]) {
    if (!all.some((a) => a.value === o.value)) all.push(o);
  }
  return all;
}

function Charts({ stats }: { stats: ModelStats }) {
  const [by, setBy] = useState<ShareBy>('tokens');
  const daily = useDailyOption(stats.days);
  const share = useModelShareOption(stats.models, by);
  return (
    <Row gutter={[16, 16]}>
      <Col xs={24} xl={16}>
        <Card title="每日用量" size="small">
          <StatsChart option={daily} label="每日输入、输出 Token 与消费金额" />
        </Card>
      </Col>
      <Col xs={24} xl={8}>
        <Card
          title="模型占比"
          size="small"
          extra={
            <Segmented<ShareBy>
              size="small"
              aria-label="占比依据"
              value={by}
              onChange={setBy}
              options={[
                { value: 'tokens', label: '按 Token' },
                { value: 'cost', label: '按金额' },
              ]}
            />
          }
        >
          <StatsChart option={share} label={by === 'tokens' ? '各模型 Token 占比' : '各模型消费金额占比'} />
        </Card>
      </Col>
    </Row>
  );
}

function SumTables({
  stats,
  tab,
  onTab,
  onChange,
  onShowCalls,
}: {
  stats: ModelStats;
  tab: SumTab;
  onTab: (tab: SumTab) => void;
  onChange: (patch: Partial<StatsQuery>) => void;
  onShowCalls: (date: string) => void;
}) {
  const days = useMemo(() => stats.days.filter((d) => d.requests > 0).reverse(), [stats.days]);
  const pagination = { pageSize: 10, hideOnSinglePage: true, showSizeChanger: false } as const;
  const link = { type: 'link' as const, size: 'small' as const, style: { paddingInline: 0 } };
  const sums = sumColumns<ModelStats['days'][number]>();
  return (
    <Card size="small">
      <Tabs
        activeKey={tab}
        onChange={(t) => onTab(t as SumTab)}
        items={[
          {
            key: 'day',
            label: '按天',
            children: (
              <Table
                aria-label="按天汇总"
                rowKey="date"
                size="middle"
                dataSource={days}
                pagination={pagination}
                scroll={{ x: 860 }}
                columns={[
                  { title: '日期', dataIndex: 'date', width: 120 },
                  ...sums,
                  {
                    title: '操作',
                    key: 'op',
                    width: 150,
                    render: (_, d) => (
                      <Space size={12}>
                        <Button {...link} onClick={() => onShowCalls(d.date)}>
                          调用明细
                        </Button>
                        <Link to={dayBillPath(d.date)}>当日账单</Link>
                      </Space>
                    ),
                  },
                ]}
              />
            ),
          },
          {
            key: 'model',
            label: '按模型',
            children: (
              <Table
                aria-label="按模型汇总"
                rowKey="model"
                size="middle"
                dataSource={stats.models}
                pagination={pagination}
                scroll={{ x: 860 }}
                columns={[
                  { title: '模型', dataIndex: 'model', width: 200, ellipsis: { showTitle: true } },
                  ...sumColumns<ModelStats['models'][number]>(),
                  {
                    title: '操作',
                    key: 'op',
                    width: 110,
                    render: (_, m) => (
                      <Button {...link} onClick={() => onChange({ model: m.model })}>
                        只看此模型
                      </Button>
                    ),
                  },
                ]}
              />
            ),
          },
          {
            key: 'key',
            label: '按密钥',
            children: (
              <Table
                aria-label="按密钥汇总"
                rowKey="keyId"
                size="middle"
                dataSource={stats.keys}
                pagination={pagination}
                scroll={{ x: 860 }}
                columns={[
                  { title: '密钥', dataIndex: 'keyName', width: 180, ellipsis: { showTitle: true }, render: (name: string, k) => keyLabel(k.keyId, name) },
                  ...sumColumns<ModelStats['keys'][number]>(),
                  {
                    title: '操作',
                    key: 'op',
                    width: 110,
                    render: (_, k) => (
                      <Button {...link} onClick={() => onChange({ keyId: k.keyId })}>
                        只看此密钥
                      </Button>
                    ),
                  },
                ]}
              />
            ),
          },
        ]}
      />
    </Card>
  );
}

/** The calls themselves, newest first: of one day when one is picked, under the same model and key filters. */
function CallLog({ query: q, onChange, onPage }: { query: StatsQuery; onChange: (patch: Partial<StatsQuery>) => void; onPage: (paging: Paging) => void }) {
  const list = useModelCalls({ page: q.page, pageSize: q.pageSize, date: q.date || undefined, model: q.model || undefined, keyId: q.keyId || undefined });
  const today = beijingToday();
  const filtered = !!(q.date || q.model || q.keyId);
  return (
    <Card
      title={
        <Flex align="baseline" gap={12} wrap>
          <span>调用明细</span>
          <RetentionNote days={list.data?.retentionDays} />
        </Flex>
      }
      extra={
        <DatePicker
          aria-label="调用日期"
          placeholder="全部日期"
          value={q.date ? dayjs(q.date) : null}
          disabledDate={(d) => d.format('YYYY-MM-DD') > today}
          onChange={(d) => onChange({ date: d ? d.format('YYYY-MM-DD') : '' })}
        />
      }
    >
      <CallTable
        list={list}
        paging={q}
        onPage={onPage}
        empty={q.date ? `${q.date} 没有符合条件的调用明细` : filtered ? '没有符合条件的调用明细' : '暂无调用明细'}
      />
    </Card>
  );
}
