import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { API, type InstanceMetrics } from '@console/contract';
import { childAccount, get, json, type TestServer } from '../../../test/harness.js';
import { DELAYS, HOUR, SEC, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instanceMetrics } from '../../db/schema.js';
import { jobsOf } from '../../jobs/scheduler.js';
import { schedulerDeps } from '../../context.js';
import type { MachineSample } from '../../drivers/compute/types.js';
import { MetricStore, RETENTION } from './store.js';

const MINUTE = 60 * SEC;
const GB = 1024 ** 3;

/** A real-looking sample with what a test sets. */
function sample(over: Partial<MachineSample> = {}): MachineSample {
  return {
    cpuPercent: 10,
    memoryUsedBytes: 2 * GB,
    memoryLimitBytes: 8 * GB,
    dataDiskUsedBytes: GB,
    dataDiskSizeBytes: 50 * GB,
    systemDiskUsedBytes: 5 * GB,
    systemDiskSizeBytes: 30 * GB,
    netRxBytesPerSec: 1000,
    netTxBytesPerSec: 100,
    gpus: [{ utilisation: 0, memoryUsedMb: 100, memoryTotalMb: 24_564 }],
    gpuUnavailable: null,
    simulated: false,
    ...over,
  };
}

describe('实例监控 — the 概览 figures', () => {
  let s: TestServer;
  const k = instanceKit(() => s);
  instanceSuite((server) => {
    s = server;
  });
  const jobs = () => jobsOf(schedulerDeps(s.ctx));
  const metrics = (token: string, id: string, range?: string) =>
    get(s.app, `${API.instanceMetrics.replace(':id', id)}${range === undefined ? '' : `?range=${encodeURIComponent(range)}`}`, token);
  const rowsOf = async (id: string, step: number) =>
    s.ctx.db
      .select()
      .from(instanceMetrics)
      .where(and(eq(instanceMetrics.instanceId, id), eq(instanceMetrics.stepSeconds, step)))
      .orderBy(instanceMetrics.at);

  it('samples running machines every tick and draws the last hour, labelled 模拟 on the simulated fleet', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    // Nothing sampled yet: an empty range, still saying the figures would be simulated.
    expect(json<InstanceMetrics>(await metrics(u.token, id))).toMatchObject({ range: '1h', stepSeconds: 15, simulated: true, points: [] });

    for (let i = 0; i < 4; i++) {
      expect(await jobs()['monitoring.sample']!.run()).toBeGreaterThanOrEqual(1);
      s.clock.advance(15 * SEC);
    }
    const res = await metrics(u.token, id, '1h');
    expect(res.statusCode, res.body).toBe(200);
    const m = json<InstanceMetrics>(res);
    expect(m.simulated).toBe(true);
    expect(m.points).toHaveLength(4);
    const p = m.points[0]!;
    expect(p.cpuPercent).toBeGreaterThan(0);
    expect(p.cpuPercent).toBeLessThanOrEqual(100);
    expect(p.memoryUsedBytes).toBeLessThan(p.memoryLimitBytes!);
    expect(p.gpus).toHaveLength(1);
    expect(p.gpus[0]!.memoryTotalMb).toBeGreaterThan(0);
    expect(p.netRxBytesPerSec).toBeGreaterThan(0);
    // Two processes sampling the same slot write it once.
    await Promise.all([jobs()['monitoring.sample']!.run(), s.ctx.monitoring.sampleTick()]);
    expect(await rowsOf(id, 15)).toHaveLength(5);

    // A stopped machine is not sampled: its range stops growing.
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    s.clock.advance(15 * SEC);
    await s.ctx.monitoring.sampleTick();
    expect(await rowsOf(id, 15)).toHaveLength(5);
  });

  it('rolls samples up into minutes and ten minutes (averages, and the highest for sizes and the busiest card), and prunes each step after its time', async () => {
    const store = new MetricStore({ db: s.ctx.db });
    const id = (await k.running((await k.fundedUser('50')).token)).id;
    // Start on a ten-minute boundary so that the slots below are whole.
    const t0 = Math.ceil((s.clock.now().getTime() + 10 * MINUTE) / (10 * MINUTE)) * 10 * MINUTE;
    s.clock.advance(t0 - s.clock.now().getTime());
    // Minute 0: four samples, CPU 10/20/30/40, a card busy once; minute 1: CPU 50 and a bigger disk.
    for (const [i, cpu, util] of [
      [0, 10, 0],
      [1, 20, 90],
      [2, 30, 0],
      [3, 40, 2],
    ] as const) {
      await store.insertSamples(
        new Date(t0 + i * 15 * SEC),
        new Map([[id, sample({ cpuPercent: cpu, gpus: [{ utilisation: util, memoryUsedMb: 1000 * (i + 1), memoryTotalMb: 24_564 }] })]]),
      );
    }
    await store.insertSamples(new Date(t0 + MINUTE), new Map([[id, sample({ cpuPercent: 50, dataDiskUsedBytes: 3 * GB })]]));

    // Minute 0 is not closed until 30 s after its end: nothing yet.
    await store.rollup(new Date(t0 + MINUTE + 20 * SEC));
    expect(await rowsOf(id, 60)).toHaveLength(0);
    await store.rollup(new Date(t0 + 2 * MINUTE + 31 * SEC));
    const minutes = await rowsOf(id, 60);
    expect(minutes.map((r) => [r.at.getTime() - t0, r.cpuPercent, r.gpuUtilMax, r.dataDiskUsedBytes])).toEqual([
      [0, 25, 90, GB],
      [MINUTE, 50, 0, 3 * GB],
    ]);
    expect(minutes[0]!.gpus).toEqual([[23, 2500, 24_564]]);
    // Rolling up again changes nothing.
    await store.rollup(new Date(t0 + 2 * MINUTE + 40 * SEC));
    expect(await rowsOf(id, 60)).toHaveLength(2);

    // Ten minutes: once the slot has closed, one row of the minutes' averages.
    await store.rollup(new Date(t0 + 10 * MINUTE + 31 * SEC));
    const tens = await rowsOf(id, 600);
    expect(tens.map((r) => [r.at.getTime() - t0, r.cpuPercent, r.gpuUtilMax, r.dataDiskUsedBytes])).toEqual([[0, 37.5, 90, 3 * GB]]);

    // Past what this test wrote: the next one samples after it.
    s.clock.advance(t0 + 11 * MINUTE - s.clock.now().getTime());
    await store.prune(new Date(t0 + RETENTION[15]! + 2 * MINUTE));
    expect(await rowsOf(id, 15)).toHaveLength(0);
    expect(await rowsOf(id, 60)).toHaveLength(2);
    await store.prune(new Date(t0 + RETENTION[60]! + 2 * MINUTE));
    expect(await rowsOf(id, 60)).toHaveLength(0);
    expect(await rowsOf(id, 600)).toHaveLength(1);
    await store.prune(new Date(t0 + RETENTION[600]! + 11 * MINUTE));
    expect(await rowsOf(id, 600)).toHaveLength(0);
  });

  it('draws 24 hours from the minutes and 7 days from the ten minutes, through the roll-up job', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    for (let i = 0; i < 12; i++) {
      await s.ctx.monitoring.sampleTick();
      s.clock.advance(15 * SEC);
    }
    s.clock.advance(10 * MINUTE);
    await jobs()['monitoring.rollup']!.run();
    const day = json<InstanceMetrics>(await metrics(u.token, id, '24h'));
    expect(day).toMatchObject({ range: '24h', stepSeconds: 60, simulated: true });
    expect(day.points.length).toBeGreaterThanOrEqual(3);
    const week = json<InstanceMetrics>(await metrics(u.token, id, '7d'));
    expect(week.stepSeconds).toBe(600);
    expect(week.points.length).toBeGreaterThanOrEqual(1);
    expect(Date.parse(week.to) - Date.parse(week.from)).toBe(7 * 24 * HOUR);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });

  it('answers only the owner and a child that may manage the instance, and refuses bad ranges', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    for (const range of ['2h', '', '1H', '7d,1h']) {
      const res = await metrics(u.token, id, range);
      expect(res.statusCode, range).toBe(400);
      expect(json(res)).toMatchObject({ code: 40000001, message: expect.any(String) });
    }
    expect(json(await metrics(u.token, 'not-a-uuid'))).toMatchObject({ code: 40000001 });
    expect((await metrics('', id)).statusCode).toBe(401);
    const stranger = await k.fundedUser('1');
    expect(json(await metrics(stranger.token, id))).toMatchObject({ code: 40400004 });

    // A child that manages GPU instances of the account sees them; one without that permission does not.
    const gpuChild = await childAccount(s, { token: u.token, mobile: u.mobile }, 'ops', { gpu: true, finance: true });
    expect((await metrics(gpuChild.token, id)).statusCode).toBe(200);
    const appChild = await childAccount(s, { token: u.token, mobile: u.mobile }, 'art', { app: true, finance: true });
    expect(json(await metrics(appChild.token, id))).toMatchObject({ code: 40300002 });
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
  });
});
