import { describe, expect, it } from 'vitest';
import { renderHook } from '@testing-library/react';
import * as echarts from 'echarts/core';
import { useDailyOption, useModelShareOption } from './StatsCharts';
import { stats, sum } from '../../../test/fixtures/modelStats';

type Series = { name: string; type: string; stack?: string; yAxisIndex?: number; data: unknown[] };

describe('the usage charts', () => {
  it('stack input and output tokens per day, every day of the range, with the cost in yuan on its own axis', () => {
    const days = stats('2026-11-23', '2026-11-25', { '2026-11-25': { requests: 2, promptTokens: 2200, completionTokens: 500, cost: '8345' } }).days;
    const option = renderHook(() => useDailyOption(days)).result.current;
    expect((option.xAxis as { data: string[] }).data).toEqual(['11-23', '11-24', '11-25']);
    const series = option.series as Series[];
    expect(series.map((s) => [s.name, s.type, s.stack ?? null, s.data])).toEqual([
      ['输入 Token', 'bar', 'tokens', [0, 0, 2200]],
      ['输出 Token', 'bar', 'tokens', [0, 0, 500]],
      ['消费金额（元）', 'line', null, [0, 0, 0.8345]],
    ]);
    expect(series[2]!.yAxisIndex).toBe(1);
  });

  it('share the tokens or the cost among the models, leaving out models with none', () => {
    const models = [
      { model: 'qwen-plus', ...sum({ promptTokens: 2000, completionTokens: 500, cost: '12345' }) },
      { model: 'deepseek-v3', ...sum({ promptTokens: 1000, completionTokens: 200, cost: '0' }) },
    ];
    const data = (by: 'tokens' | 'cost') => (renderHook(() => useModelShareOption(models, by)).result.current.series as Series[])[0]!.data;
    expect(data('tokens')).toEqual([
      { name: 'qwen-plus', value: 2500 },
      { name: 'deepseek-v3', value: 1200 },
    ]);
    expect(data('cost')).toEqual([{ name: 'qwen-plus', value: 1.2345 }]);
  });

  it('are options ECharts draws: the legend and the days come out in the SVG', () => {
    // jsdom has no canvas to measure text with: a rough width does for a layout nobody sees.
    echarts.setPlatformAPI({ measureText: (text = '') => ({ width: text.length * 7 }) });
    const days = stats('2026-11-24', '2026-11-25', { '2026-11-25': { requests: 1, promptTokens: 120, completionTokens: 30, cost: '500' } }).days;
    const models = [{ model: 'qwen-plus', ...sum({ promptTokens: 120, completionTokens: 30, cost: '500' }) }];
    const daily = renderHook(() => useDailyOption(days)).result.current;
    const share = renderHook(() => useModelShareOption(models, 'tokens')).result.current;
    const draw = (option: typeof daily) => {
      const chart = echarts.init(null, undefined, { renderer: 'svg', ssr: true, width: 600, height: 300 });
      chart.setOption(option);
      const svg = chart.renderToSVGString();
      chart.dispose();
      return svg;
    };
    const dailySvg = draw(daily);
    for (const text of ['输入 Token', '输出 Token', '消费金额（元）', '11-24', '11-25']) expect(dailySvg).toContain(text);
    expect(draw(share)).toContain('qwen-plus');
  });
});
