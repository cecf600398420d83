/**
 * The figures of the 概览 tab (AutoPanel): the sampling job asks the compute driver what its running
 * machines are doing every SAMPLE_STEP_SECONDS and stores it (store.ts), telling GPU 空闲自动关机 what
 * it saw (idle-stop.ts); the roll-up job folds samples into minutes and ten minutes and drops what is
 * kept no longer; the API draws a range from the step that covers it.
 */
import { IDLE_GPU_THRESHOLD_PERCENT, type InstanceMetrics, type MetricsQuery } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { ComputeDriver, MachineSample } from '../../drivers/compute/types.js';
import type { InstanceService } from '../instances/index.js';
import type { UserRow } from '../users/index.js';
import type { IdleStops } from './idle-stop.js';
import { busiestCard, pointOf, type MetricStore } from './store.js';

export interface MonitoringDeps {
  clock: Clock;
  driver: Pick<ComputeDriver, 'name' | 'sample'>;
  store: MetricStore;
  idle: Pick<IdleStops, 'observe'>;
  instances: Pick<InstanceService, 'mustFind'>;
}

export class Monitoring {
  constructor(private deps: MonitoringDeps) {}

  /** The sampling job: every running machine the driver reaches, in one write. Returns how many were sampled. */
  async sampleTick(): Promise<number> {
    if (!this.deps.driver.sample) return 0;
    const samples = await this.deps.driver.sample();
    const now = this.deps.clock.now();
    await this.deps.store.insertSamples(now, samples);
    await this.deps.idle.observe(now, new Map([...samples].map(([id, s]): [string, boolean] => [id, gpuBusy(s)])));
    return samples.size;
  }

  /** The roll-up job: closed slots into their roll-ups, then what is kept no longer away. Returns the rows written and deleted. */
  async rollupTick(): Promise<number> {
    const now = this.deps.clock.now();
    return (await this.deps.store.rollup(now)) + (await this.deps.store.prune(now));
  }

  /** The instance's figures over a range, for its owner (or a child that may manage it). */
  async series(user: UserRow, id: string, q: MetricsQuery): Promise<InstanceMetrics> {
    await this.deps.instances.mustFind(user, id);
    const now = this.deps.clock.now();
    const { stepSeconds, from, rows } = await this.deps.store.series(id, q.range, now);
    const last = rows.at(-1);
    return {
      instanceId: id,
      range: q.range,
      stepSeconds,
      from: from.toISOString(),
      to: now.toISOString(),
      simulated: last ? last.simulated : this.deps.driver.name === 'simulated',
      gpuUnavailable: last?.gpuUnavailable ?? null,
      points: rows.map(pointOf),
    };
  }
}

/** Whether a sample keeps the machine from counting as idle: a busy card, or no GPU figures at all (unknown is not idle). */
export function gpuBusy(s: MachineSample): boolean {
  const busiest = busiestCard(s);
  return busiest === null || busiest >= IDLE_GPU_THRESHOLD_PERCENT;
}
