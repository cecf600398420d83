import { describe, expect, it } from 'vitest';
import { BUSY_STATUSES, InstanceStatus } from '@console/contract';
import { pollWhileBusy } from './InstanceListPage';
import { actionNotice, detailPathOf, purchasePathOf } from './instanceViews';
import { ID, instance } from '../../../test/fixtures/instances';

describe('what each action says it costs', () => {
  const postPaid = instance({ status: 'Stopped' });
  const prepaid = instance({ status: 'Stopped', cycle: 'Month', expireAt: '2026-12-23T08:00:00.000Z' });

  it('post-paid: the hourly rate to start, the no-card rate, and the data disk that keeps charging when stopped', () => {
    expect(actionNotice(postPaid, 'start')).toBe('开机后按 ¥3.96/小时 计费（按量）');
    // The reduced CPU and memory of no-card mode are said before it starts.
    expect(actionNotice(postPaid, 'startNoCard')).toBe('无卡模式不挂载 GPU，只分配 0.5 核 CPU / 2 GB 内存，按 ¥0.10/小时 计费，适合上传数据、配置环境');
    expect(actionNotice(postPaid, 'stop')).toBe('关机后停止 GPU 计费；超出免费部分的数据盘仍按 ¥0.35/天 按小时计费');
    expect(actionNotice(instance({ diskDailyPrice: '0' }), 'stop')).toBe('关机后停止 GPU 计费；数据盘未超出免费容量（50 GB），不产生费用');
    expect(actionNotice(instance({ noCard: true }), 'stop')).toMatch(/^关机后停止无卡模式计费；/);
    // A CPU machine has no GPU to stop billing for.
    expect(actionNotice(instance({ gpuCount: 0, gpuName: null }), 'stop')).toMatch(/^关机后停止实例计费；/);
    expect(actionNotice(postPaid, 'release')).toBe('释放后数据盘和系统盘的数据将被清除且无法恢复');
  });

  it('prepaid: starting is already paid for, stopping refunds nothing', () => {
    expect(actionNotice(prepaid, 'start')).toMatch(/^该实例为包周期（按月）实例，已付费至 2026-12-23 \d\d:\d\d:\d\d，开机不另外计费$/);
    expect(actionNotice(prepaid, 'stop')).toMatch(/^包周期实例关机不退还费用，到期时间不变/);
  });
});

describe('polling', () => {
  const pageOf = (statuses: (typeof InstanceStatus.values)[number][]) => ({
    items: statuses.map((status) => instance({ status })),
    total: statuses.length,
    page: 1,
    pageSize: 10,
  });

  it('every 2 s while any row is busy, every 15 s while one is unknown, never otherwise or after a failed refresh', () => {
    for (const busy of BUSY_STATUSES) expect(pollWhileBusy(pageOf(['Running', 'Unknown', busy]), false)).toBe(2000);
    expect(pollWhileBusy(pageOf(['Running', 'Stopped', 'Shutdown', 'Failed']), false)).toBe(false);
    expect(pollWhileBusy(pageOf(['Running', 'Unknown']), false)).toBe(15_000);
    expect(pollWhileBusy(pageOf(['Starting']), true)).toBe(false);
    expect(pollWhileBusy(undefined, false)).toBe(false);
  });
});

describe('paths', () => {
  it('detail under the category, purchase by category', () => {
    expect(detailPathOf({ id: ID, category: 'Desktop' })).toBe(`/console/ipvm/detail/Desktop/${ID}`);
    expect(purchasePathOf('Gpu')).toBe('/stats/purchase');
    expect(purchasePathOf('App')).toBe('/stats/purchase');
    expect(purchasePathOf('Ebusiness')).toBe('/stats/purchase?category=Ebusiness');
  });
});
