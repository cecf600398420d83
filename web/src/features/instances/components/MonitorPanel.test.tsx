import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import type { IdleStop, InstanceMetrics, MetricPoint, MetricRange } from '@console/contract';
import { session } from '../../../session/store';
import { calls, callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, instance, INSTANCES, instanceServer } from '../../../test/fixtures/instances';
import { monitorCharts } from './MonitorCharts';
import { SIMULATED_TITLE } from './MonitorPanel';

const DETAIL = `/console/ipvm/detail/Gpu/${ID}`;
const METRICS = `${INSTANCES}/${ID}/metrics`;
const IDLE = `${INSTANCES}/${ID}/idle-stop`;
const GB = 1024 ** 3;
/** The detail page and the charts' chunk load on demand: on a busy machine the first load takes seconds. */
const LAZY_MS = 30_000;

function point(at: string, over: Partial<MetricPoint> = {}): MetricPoint {
  return {
    at,
    cpuPercent: 42,
    memoryUsedBytes: 6 * GB,
    memoryLimitBytes: 24 * GB,
    dataDiskUsedBytes: 10 * GB,
    dataDiskSizeBytes: 50 * GB,
    systemDiskUsedBytes: 12 * GB,
    systemDiskSizeBytes: 30 * GB,
    netRxBytesPerSec: 2048,
    netTxBytesPerSec: 512,
    gpus: [
      { utilisation: 87, memoryUsedMb: 17_000, memoryTotalMb: 24_564 },
      { utilisation: 3, memoryUsedMb: 900, memoryTotalMb: 24_564 },
    ],
    ...over,
  };
}

function metrics(range: MetricRange, points: MetricPoint[], over: Partial<InstanceMetrics> = {}): InstanceMetrics {
  return {
    instanceId: ID,
    range,
    stepSeconds: range === '1h' ? 15 : 60,
    from: '2026-11-23T09:00:00.000Z',
    to: '2026-11-23T10:00:00.000Z',
    simulated: false,
    gpuUnavailable: null,
    points,
    ...over,
  };
}

const idleOff: IdleStop = { instanceId: ID, hours: null, thresholdPercent: 5, idleSince: null, stopAt: null };

/** The detail page's server, with `answer` for the figures and the idle setting kept in memory. */
function monitorServer(answer: (range: MetricRange) => Response) {
  let idle = idleOff;
  return instanceServer((url, init) => {
    if (url.pathname === `${INSTANCES}/${ID}`) return json(200, instance());
    if (url.pathname === METRICS) return answer((url.searchParams.get('range') ?? '1h') as MetricRange);
    if (url.pathname === IDLE) {
      if (init?.method === 'PUT') {
        const hours = (JSON.parse(String(init.body)) as { hours: number | null }).hours;
        idle = {
          ...idle,
          hours,
          ...(hours ? { idleSince: '2026-11-23T09:30:00.000Z', stopAt: '2026-11-23T11:30:00.000Z' } : { idleSince: null, stopAt: null }),
        };
      }
      return json(200, idle);
    }
    return undefined;
  });
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('实例监控 on the 概览 tab', { timeout: 60_000 }, () => {
  it('draws CPU, memory, GPU, disk and network for the last hour, and switches to 24 小时', async () => {
    const fetch = monitorServer((range) => json(200, metrics(range, [point('2026-11-23T09:59:30.000Z'), point('2026-11-23T09:59:45.000Z')])));
    renderApp(DETAIL);
    // The charts arrive with their lazily loaded chunk (ECharts).
    for (const title of ['CPU 使用率', '内存使用率', 'GPU 使用率', 'GPU 显存', '磁盘使用率', '网络流量']) {
      expect(await screen.findByLabelText(title, { selector: '[role=img]' }, { timeout: LAZY_MS })).toBeTruthy();
    }
    // The latest figures in words beside each title.
    expect(screen.getByText('42%')).toBeTruthy();
    expect(screen.getByText('6.0 GB / 24.0 GB')).toBeTruthy();
    expect(screen.getByText('87% · 3%')).toBeTruthy();
    expect(screen.queryByText(SIMULATED_TITLE)).toBeNull();
    expect(calls(fetch, METRICS).map((u) => u.searchParams.get('range'))).toContain('1h');

    screen.getByText('24 小时', { selector: '.ant-segmented-item-label' }).click();
    await waitFor(() => expect(calls(fetch, METRICS).map((u) => u.searchParams.get('range'))).toContain('24h'));
  });

  it('labels simulated figures 模拟 and says how to connect a real host', async () => {
    monitorServer((range) => json(200, metrics(range, [point('2026-11-23T09:59:45.000Z')], { simulated: true })));
    renderApp(DETAIL);
    expect(await screen.findByText(SIMULATED_TITLE, {}, { timeout: LAZY_MS })).toBeTruthy();
    expect(screen.getByText('模拟')).toBeTruthy();
    expect(screen.getAllByText(/COMPUTE_DRIVER=local/).length).toBeGreaterThan(0);
  });

  it('says when there is nothing yet, and offers a retry when loading fails', async () => {
    let fail = true;
    const fetch = monitorServer((range) => (fail ? json(500, { code: 50000001, message: '服务器内部错误' }) : json(200, metrics(range, []))));
    renderApp(DETAIL);
    expect(await screen.findByText('监控数据加载失败', {}, { timeout: LAZY_MS })).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: '重试' }));
    expect(await screen.findByText(/该时间范围内暂无监控数据/, {}, { timeout: LAZY_MS })).toBeTruthy();
    expect(calls(fetch, METRICS).length).toBeGreaterThanOrEqual(2);
  });

  it('tells why GPU figures are missing on a host that cannot read them', async () => {
    const why = '本机的 nvidia-smi 没有给出该实例显卡的数据，只显示 CPU、内存、磁盘与网络';
    monitorServer((range) => json(200, metrics(range, [point('2026-11-23T09:59:45.000Z', { gpus: [] })], { gpuUnavailable: why })));
    renderApp(DETAIL);
    expect(await screen.findByText(why, {}, { timeout: LAZY_MS })).toBeTruthy();
    expect(await screen.findByLabelText('CPU 使用率', { selector: '[role=img]' }, { timeout: LAZY_MS })).toBeTruthy();
    expect(screen.queryByLabelText('GPU 使用率', { selector: '[role=img]' })).toBeNull();
  });

  it('sets GPU 空闲自动关机 and then shows when it will stop the instance', async () => {
    const fetch = monitorServer((range) => json(200, metrics(range, [])));
    renderApp(DETAIL);
    fireEvent.mouseDown(await screen.findByRole('combobox', { name: 'GPU 空闲自动关机' }, { timeout: LAZY_MS }));
    fireEvent.click(await screen.findByText('GPU 空闲 2 小时后关机'));
    await waitFor(() => expect(callsTo(fetch, IDLE, 'PUT').map((c) => c.body)).toEqual([{ hours: 2 }]));
    expect(await screen.findByText(/如持续空闲将于 2026-11-23 19:30 自动关机/, {}, { timeout: LAZY_MS })).toBeTruthy();
  });
});

describe('the charts of the figures', () => {
  it('draws a line per card, memory and disks as shares of their size, and no GPU charts without cards', () => {
    const colors = ['#000'];
    const withCards = monitorCharts({ points: [point('2026-11-23T09:59:45.000Z')] }, colors);
    expect(withCards.map((c) => c.title)).toEqual(['CPU 使用率', '内存使用率', 'GPU 使用率', 'GPU 显存', '磁盘使用率', '网络流量']);
    const series = (title: string) => withCards.find((c) => c.title === title)!.option.series as { name: string; data: [string, number | null][] }[];
    expect(series('GPU 使用率').map((s) => [s.name, s.data[0]![1]])).toEqual([
      ['GPU 0', 87],
      ['GPU 1', 3],
    ]);
    expect(series('内存使用率')[0]!.data[0]![1]).toBe(25);
    expect(series('磁盘使用率').map((s) => s.data[0]![1])).toEqual([20, 40]);
    const noCards = monitorCharts({ points: [point('2026-11-23T09:59:45.000Z', { gpus: [], cpuPercent: null })] }, colors);
    expect(noCards.map((c) => c.title)).not.toContain('GPU 使用率');
    expect(noCards[0]!.option.series).toMatchObject([{ data: [['2026-11-23T09:59:45.000Z', null]] }]);
  });
});
