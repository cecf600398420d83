/**
 * The 概览 tab's charts (AutoPanel): CPU, memory, GPU utilisation and memory, disks and network over the
 * chosen range, one ECharts line chart each. Loaded on demand by MonitorPanel, so ECharts reaches the
 * browser only on an instance's detail page.
 */
import { useMemo } from 'react';
import { Col, Row, Typography, theme } from 'antd';
import type { ComposeOption } from 'echarts/core';
import type { LineSeriesOption } from 'echarts/charts';
import type { GridComponentOption, LegendComponentOption, TooltipComponentOption } from 'echarts/components';
import { formatBeijing, type InstanceMetrics, type MetricPoint } from '@console/contract';
import { formatBytes } from '../../../components/format';
import { StatsChart } from '../../model';

export type MonitorOption = ComposeOption<LineSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption>;

type Value = number | null;
type Unit = 'percent' | 'bytes' | 'rate' | 'mb';

/** A value as the tooltip and axis write it. */
export function formatValue(v: Value, unit: Unit): string {
  if (v === null || Number.isNaN(v)) return '--';
  if (unit === 'percent') return `${+v.toFixed(1)}%`;
  if (unit === 'mb') return formatBytes(Math.round(v * 1024 * 1024));
  if (unit === 'rate') return `${formatBytes(Math.round(v))}/s`;
  return formatBytes(Math.round(v));
}

const share = (used: Value, size: Value): Value => (used === null || !size ? null : (100 * used) / size);

interface Line {
  name: string;
  value: (p: MetricPoint) => Value;
}

const DAY_MS = 86_400_000;

/** A moment on the time axis in Beijing time, as the console writes times. */
function timeLabel(points: readonly MetricPoint[]): (v: number) => string {
  const span = points.length ? Date.parse(points.at(-1)!.at) - Date.parse(points[0]!.at) : 0;
  // Seconds while the points span only minutes (a machine just started); the date once they span days.
  if (span < 10 * 60_000) return (v) => formatBeijing(new Date(v), 'second').slice(11);
  return (v) => formatBeijing(new Date(v)).slice(span > DAY_MS ? 5 : 11);
}

/** One chart's lines over the points: time on x, a gap where a value is missing (a stopped machine, a first sample). */
export function lineOption(points: readonly MetricPoint[], lines: readonly Line[], unit: Unit, colors: string[]): MonitorOption {
  const axis = unit === 'percent' ? { min: 0, max: 100 } : { min: 0 };
  const time = timeLabel(points);
  return {
    color: colors,
    tooltip: { trigger: 'axis', valueFormatter: (v) => formatValue(typeof v === 'number' ? v : null, unit) },
    legend: { data: lines.map((l) => l.name), top: 0, type: 'scroll' },
    grid: { left: 8, right: 16, top: 36, bottom: 8, outerBoundsMode: 'same', outerBoundsContain: 'all' },
    xAxis: {
      type: 'time',
      splitNumber: 4,
      axisLabel: { hideOverlap: true, formatter: (v: number) => time(v) },
      axisPointer: { label: { formatter: ({ value }) => time(Number(value)) } },
    },
    yAxis: { type: 'value', ...axis, axisLabel: { formatter: (v: number) => formatValue(v, unit) } },
    series: lines.map((l) => ({
      name: l.name,
      type: 'line',
      showSymbol: false,
      connectNulls: false,
      data: points.map((p) => [p.at, l.value(p)]),
    })),
  };
}

/** The cards a range shows (a card missing from some points leaves gaps there). */
const cardCount = (points: readonly MetricPoint[]) => Math.max(0, ...points.map((p) => p.gpus.length));

/** The charts of an instance's figures, by title: each with the option it draws. */
export function monitorCharts(m: Pick<InstanceMetrics, 'points'>, colors: string[]): { title: string; option: MonitorOption }[] {
  const pts = m.points;
  const cards = Array.from({ length: cardCount(pts) }, (_, i) => i);
  const gpuLines = (value: (g: MetricPoint['gpus'][number]) => number): Line[] =>
    cards.map((i) => ({ name: `GPU ${i}`, value: (p) => (p.gpus[i] ? value(p.gpus[i]) : null) }));
  const charts = [
    { title: 'CPU 使用率', option: lineOption(pts, [{ name: 'CPU', value: (p) => p.cpuPercent }], 'percent', colors) },
    {
      title: '内存使用率',
      option: lineOption(pts, [{ name: '内存', value: (p) => share(p.memoryUsedBytes, p.memoryLimitBytes) }], 'percent', colors),
    },
  ];
  if (cards.length) {
    charts.push(
      {
        title: 'GPU 使用率',
        option: lineOption(
          pts,
          gpuLines((g) => g.utilisation),
          'percent',
          colors,
        ),
      },
      {
        title: 'GPU 显存',
        option: lineOption(
          pts,
          gpuLines((g) => g.memoryUsedMb),
          'mb',
          colors,
        ),
      },
    );
  }
  charts.push(
    {
      title: '磁盘使用率',
      option: lineOption(
        pts,
        [
          { name: '数据盘', value: (p) => share(p.dataDiskUsedBytes, p.dataDiskSizeBytes) },
          { name: '系统盘', value: (p) => share(p.systemDiskUsedBytes, p.systemDiskSizeBytes) },
        ],
        'percent',
        colors,
      ),
    },
    {
      title: '网络流量',
      option: lineOption(
        pts,
        [
          { name: '下行（接收）', value: (p) => p.netRxBytesPerSec },
          { name: '上行（发送）', value: (p) => p.netTxBytesPerSec },
        ],
        'rate',
        colors,
      ),
    },
  );
  return charts;
}

/** The latest figures in words, above each chart (what a glance needs without hovering). */
function latestText(title: string, p: MetricPoint | undefined): string {
  if (!p) return '';
  switch (title) {
    case 'CPU 使用率':
      return formatValue(p.cpuPercent, 'percent');
    case '内存使用率':
      return p.memoryUsedBytes === null ? '--' : `${formatBytes(p.memoryUsedBytes)} / ${p.memoryLimitBytes ? formatBytes(p.memoryLimitBytes) : '--'}`;
    case 'GPU 使用率':
      return p.gpus.map((g) => formatValue(g.utilisation, 'percent')).join(' · ');
    case 'GPU 显存':
      return p.gpus.map((g) => `${formatValue(g.memoryUsedMb, 'mb')}${g.memoryTotalMb ? ` / ${formatValue(g.memoryTotalMb, 'mb')}` : ''}`).join(' · ');
    case '磁盘使用率':
      return `数据盘 ${p.dataDiskUsedBytes === null ? '--' : formatBytes(p.dataDiskUsedBytes)}，系统盘 ${p.systemDiskUsedBytes === null ? '--' : formatBytes(p.systemDiskUsedBytes)}`;
    default:
      return `↓ ${formatValue(p.netRxBytesPerSec, 'rate')}  ↑ ${formatValue(p.netTxBytesPerSec, 'rate')}`;
  }
}

export default function MonitorCharts({ metrics }: { metrics: InstanceMetrics }) {
  const { colorPrimary } = theme.useToken().token;
  const charts = useMemo(
    () => monitorCharts(metrics, [colorPrimary, '#13c2c2', '#fa8c16', '#52c41a', '#eb2f96', '#2f54eb', '#faad14', '#a0d911']),
    [metrics, colorPrimary],
  );
  const last = metrics.points.at(-1);
  return (
    <Row gutter={[16, 16]}>
      {charts.map((c) => (
        <Col key={c.title} xs={24} lg={12}>
          <Typography.Text strong>{c.title}</Typography.Text>
          <Typography.Text type="secondary" style={{ marginLeft: 8 }}>
            {latestText(c.title, last)}
          </Typography.Text>
          <StatsChart option={c.option} label={c.title} height={220} />
        </Col>
      ))}
    </Row>
  );
}
