/** The 用量统计 page's ECharts: tokens and cost per day, and each model's share. */
import { useEffect, useMemo, useRef } from 'react';
import { theme } from 'antd';
import * as echarts from 'echarts/core';
import { BarChart, LineChart, PieChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import type { ComposeOption } from 'echarts/core';
import type { BarSeriesOption, LineSeriesOption, PieSeriesOption } from 'echarts/charts';
import type { GridComponentOption, LegendComponentOption, TooltipComponentOption } from 'echarts/components';
import type { ModelStats } from '@console/contract';
import { formatTokens } from './StatsViews';

echarts.use([BarChart, LineChart, PieChart, GridComponent, LegendComponent, TooltipComponent, SVGRenderer]);

type Option = ComposeOption<BarSeriesOption | LineSeriesOption | PieSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption>;

/**
 * One chart, drawn as SVG (crisp at any zoom). It starts once its box has a size (ECharts cannot lay
 * out in a box of none, e.g. a hidden tab), follows the box's size, and is disposed with the component.
 */
export function StatsChart({ option, label, height = 300 }: { option: Option; label: string; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const latest = useRef(option);

  useEffect(() => {
    const el = box.current!;
    const observer = new ResizeObserver(([entry]) => {
      if (!entry || entry.contentRect.width === 0 || entry.contentRect.height === 0) return;
      if (chart.current) return chart.current.resize();
      chart.current = echarts.init(el, undefined, { renderer: 'svg' });
      chart.current.setOption(latest.current);
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      chart.current?.dispose();
      chart.current = null;
    };
  }, []);

  useEffect(() => {
    latest.current = option;
    chart.current?.setOption(option, { notMerge: true });
  }, [option]);

  return <div ref={box} role="img" aria-label={label} style={{ width: '100%', height }} />;
}

/** Tokens as an axis shows them: 12000 → "1.2万", 350000000 → "3.5亿". */
function shortTokens(n: number): string {
  if (n >= 1e8) return `${+(n / 1e8).toFixed(1)}亿`;
  if (n >= 1e4) return `${+(n / 1e4).toFixed(1)}万`;
  return String(n);
}

/** Cost in yuan as a number, for the chart (the tables show the exact text). */
/** Exact to 0.0001 yuan: a day of small calls may cost less than a fen. */
const yuan = (units: string) => Number(units) / 10000;

/** Input and output tokens stacked per day, and the day's cost as a line on its own axis. */
export function useDailyOption(days: ModelStats['days']): Option {
  const { colorPrimary } = theme.useToken().token;
  return useMemo(
    () => ({
      color: [colorPrimary, '#b37feb', '#fa8c16'],
      tooltip: {
        trigger: 'axis',
        valueFormatter: (v) => (typeof v === 'number' ? v.toLocaleString('en-US') : String(v)),
      },
      legend: { data: ['输入 Token', '输出 Token', '消费金额（元）'], top: 0 },
      grid: { left: 8, right: 8, top: 48, bottom: 8, outerBoundsMode: 'same', outerBoundsContain: 'all' },
      xAxis: { type: 'category', data: days.map((d) => d.date.slice(5)) },
      yAxis: [
        { type: 'value', name: 'Token', axisLabel: { formatter: (v: number) => shortTokens(v) } },
        { type: 'value', name: '元', splitLine: { show: false } },
      ],
      series: [
        { name: '输入 Token', type: 'bar', stack: 'tokens', barMaxWidth: 28, data: days.map((d) => d.promptTokens) },
        { name: '输出 Token', type: 'bar', stack: 'tokens', barMaxWidth: 28, data: days.map((d) => d.completionTokens) },
        { name: '消费金额（元）', type: 'line', yAxisIndex: 1, smooth: true, symbolSize: 6, data: days.map((d) => yuan(d.cost)) },
      ],
    }),
    [days, colorPrimary],
  );
}

export type ShareBy = 'tokens' | 'cost';

/** Each model's share of the tokens, or of the cost. */
export function useModelShareOption(models: ModelStats['models'], by: ShareBy): Option {
  const { colorPrimary } = theme.useToken().token;
  return useMemo(
    () => ({
      color: [colorPrimary, '#b37feb', '#36cfc9', '#fa8c16', '#597ef7', '#f759ab', '#73d13d', '#ffc53d', '#8c8c8c'],
      tooltip: {
        trigger: 'item',
        formatter: (p) => {
          const item = p as unknown as { name: string; percent: number; value: number };
          const value = by === 'tokens' ? `${formatTokens(item.value)} Token` : `¥${item.value.toFixed(2)}`;
          return `${item.name}<br/>${value}（${item.percent}%）`;
        },
      },
      legend: { type: 'scroll', bottom: 0 },
      series: [
        {
          name: by === 'tokens' ? 'Token' : '消费金额',
          type: 'pie',
          radius: ['40%', '68%'],
          center: ['50%', '45%'],
          avoidLabelOverlap: true,
          label: { show: false },
          data: models.map((m) => ({ name: m.model, value: by === 'tokens' ? m.promptTokens + m.completionTokens : yuan(m.cost) })).filter((d) => d.value > 0),
        },
      ],
    }),
    [models, by, colorPrimary],
  );
}
