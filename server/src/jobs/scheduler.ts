/**
 * Periodic work: expire unpaid orders and QR payments, finish orders a crashed process left paid,
 * take expired gift credit and vouchers off balances; read the compute driver's events; charge
 * post-paid instances, their data disks, stop expired ones and those whose scheduled stop (定时关机)
 * is due, and release those past their grace period; move LoRA jobs and image generations forward
 * on the image backend; sample running machines for the 概览 charts, roll their figures up and stop
 * instances whose GPUs stayed idle (GPU 空闲自动关机).
 *
 * Several console processes (replicas) share one database: each job that works on the shared data
 * runs in one of them, the holder of its lease (leases.ts), once per interval whatever the number of
 * replicas; the others try it at a quicker pace and take it over once the holder's lease has
 * expired (it died) or was given back (it stopped). Every job is still safe to run in two processes
 * at once (guarded status moves, row locks with SKIP LOCKED, idempotency keys): a lease that
 * changes hands during a slow round costs load, never money. The jobs that work on what only this
 * process or host has (marked `perProcess`) run in every process, as before.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/client.js';
import type { ComputeDriver } from '../drivers/compute/types.js';
import type { EmbeddedComfyApps } from '../drivers/image-backend/comfy-apps.js';
import { hasBrowserApp } from '../modules/access/index.js';
import type { DiffusionService } from '../modules/diffusion/index.js';
import type { GiftService } from '../modules/gifts/index.js';
import type { InstanceBilling, InstanceService, PrepaidService, Reconciler, ScheduledStops } from '../modules/instances/index.js';
import { STALE_SWEEP_MS, type ModelGateway, type ModelUsage } from '../modules/model/index.js';
import type { IdleStops, Monitoring } from '../modules/monitoring/index.js';
import type { GpuSubscriptionService } from '../modules/notices/index.js';
import type { Checkout } from '../modules/orders/index.js';
import type { PaymentService, RefundService } from '../modules/payments/index.js';
import type { TrainingService } from '../modules/training/index.js';
import type { VoucherService } from '../modules/vouchers/index.js';
import { JobLeases } from './leases.js';

export const JOB_INTERVAL_MS = 30_000;
/** How often running machines are sampled for the 概览 charts (the step of the finest series, monitoring/store.ts). */
export const MONITOR_SAMPLE_MS = 15_000;
/** How often the images nothing needs are removed from the host (a deleted saved image's space comes back within this). */
export const IMAGE_GC_MS = 60 * 60_000;

export interface Job {
  run: () => Promise<number>;
  everyMs: number;
  /** Works on what only this process or host has: runs in every process, without a lease. */
  perProcess?: boolean;
}

/** The services the jobs call, and the intervals the configuration sets. */
export interface SchedulerDeps {
  /** Where the job leases are kept. */
  db: Db;
  /** Which compute driver: the local driver's machines belong to this process. */
  drivers: { compute: Pick<ComputeDriver, 'name'> };
  reconciler: Pick<Reconciler, 'tick'>;
  instanceBilling: Pick<InstanceBilling, 'meterTick' | 'diskTick' | 'expiryTick' | 'releaseTick' | 'heldCardsTick'>;
  prepaid: Pick<PrepaidService, 'autoRenewTick' | 'expiringNoticeTick'>;
  scheduledStops: Pick<ScheduledStops, 'tick'>;
  gpuSubscriptions: Pick<GpuSubscriptionService, 'tick'>;
  monitoring: Pick<Monitoring, 'sampleTick' | 'rollupTick'>;
  idleStops: Pick<IdleStops, 'tick'>;
  training: Pick<TrainingService, 'tick'>;
  diffusion: Pick<DiffusionService, 'tick'>;
  comfyApps: Pick<EmbeddedComfyApps, 'sweep'>;
  instances: Pick<InstanceService, 'accessOf'>;
  modelGateway: Pick<ModelGateway, 'sweepStaleHolds'>;
  modelUsage: Pick<ModelUsage, 'rollup' | 'purge'>;
  checkout: Pick<Checkout, 'expireDue' | 'recoverPaid'>;
  payments: Pick<PaymentService, 'closeExpired'>;
  refunds: Pick<RefundService, 'pollProcessing'>;
  gifts: Pick<GiftService, 'expireDue'>;
  vouchers: Pick<VoucherService, 'expireDue'>;
  /** The local driver's image gc (deleted saved images, blobs and unpacked images nothing needs). */
  imageGc: { tick(): Promise<number> };
  intervals: {
    /** RECONCILE_INTERVAL_MS */
    reconcileMs: number;
    /** BILLING_TICK_SECONDS */
    billingTickSeconds: number;
    /** IMAGE_BACKEND_TICK_MS */
    imageBackendTickMs: number;
  };
}

/**
 * Every job of the console. Leased (once across the replicas) unless marked `perProcess`: those are
 * images.gc (this host's DATA_DIR), apps.comfyui-sweep (the ComfyUI children of this process) and,
 * on the local driver, monitoring.sample (the sandboxes this process runs; the simulated fleet and
 * the agents' hosts are sampled whole by one process).
 */
export function jobsOf(deps: SchedulerDeps): Record<string, Job> {
  const slow = JOB_INTERVAL_MS;
  return {
    'compute.reconcile': { run: () => deps.reconciler.tick(), everyMs: deps.intervals.reconcileMs },
    'instances.meter': { run: () => deps.instanceBilling.meterTick(), everyMs: deps.intervals.billingTickSeconds * 1000 },
    'instances.disk': { run: () => deps.instanceBilling.diskTick(), everyMs: slow },
    // Before the expiry job: an instance renewed in time is not stopped.
    'instances.auto-renew': { run: () => deps.prepaid.autoRenewTick(), everyMs: slow },
    'instances.expire': { run: () => deps.instanceBilling.expiryTick(), everyMs: slow },
    'instances.scheduled-stop': { run: () => deps.scheduledStops.tick(), everyMs: slow },
    'instances.release': { run: () => deps.instanceBilling.releaseTick(), everyMs: slow },
    'instances.held-cards': { run: () => deps.instanceBilling.heldCardsTick(), everyMs: slow },
    'instances.expiring-notice': { run: () => deps.prepaid.expiringNoticeTick(), everyMs: slow },
    'notices.gpu-available': { run: () => deps.gpuSubscriptions.tick(), everyMs: slow },
    // The local driver samples only the sandboxes of this process (one process drives a host).
    'monitoring.sample': { run: () => deps.monitoring.sampleTick(), everyMs: MONITOR_SAMPLE_MS, perProcess: deps.drivers.compute.name === 'local' },
    // Writes and prunes rows every minute as a matter of course (nothing to report).
    'monitoring.rollup': { run: () => deps.monitoring.rollupTick().then(() => 0), everyMs: 60_000 },
    'instances.idle-stop': { run: () => deps.idleStops.tick(), everyMs: 60_000 },
    'training.advance': { run: () => deps.training.tick(), everyMs: deps.intervals.imageBackendTickMs },
    'diffusion.advance': { run: () => deps.diffusion.tick(), everyMs: deps.intervals.imageBackendTickMs },
    // An instance's ComfyUI goes when the instance stops (the next access would find it stopped too).
    // Per process: the ComfyUI processes it sweeps are this process's children.
    'apps.comfyui-sweep': {
      run: () => deps.comfyApps.sweep(async (id) => hasBrowserApp((await deps.instances.accessOf(id)) ?? { applicationId: null, status: 'Released' })),
      everyMs: slow,
      perProcess: true,
    },
    // A dead replica's gateway holds are back within STALE_HOLD_MS + this (gateway.ts).
    'model.stale-holds': { run: () => deps.modelGateway.sweepStaleHolds(), everyMs: STALE_SWEEP_MS },
    // Rewrites the last hours' sums each time (nothing to report); the stats read newer hours from the calls, so minutes do not matter.
    'model.usage-rollup': { run: () => deps.modelUsage.rollup().then(() => 0), everyMs: 5 * 60_000 },
    'model.call-retention': { run: () => deps.modelUsage.purge(), everyMs: 60 * 60_000 },
    'orders.expire': { run: () => deps.checkout.expireDue(), everyMs: slow },
    'orders.recover': { run: () => deps.checkout.recoverPaid(), everyMs: slow },
    'payments.close-expired': { run: () => deps.payments.closeExpired(), everyMs: slow },
    // Refunds 退款中: asked about (or sent again under their number) until the gateway says how they ended.
    'payments.refunds-poll': { run: () => deps.refunds.pollProcessing(), everyMs: slow },
    'gifts.expire': { run: () => deps.gifts.expireDue(), everyMs: slow },
    'vouchers.expire': { run: () => deps.vouchers.expireDue(), everyMs: slow },
    // Under the layout's lock between processes (oci/lock.ts): never while another console process imports.
    // Per process: the images are this host's (DATA_DIR).
    'images.gc': { run: () => deps.imageGc.tick(), everyMs: IMAGE_GC_MS, perProcess: true },
  };
}

/**
 * How long a job's lease outlives the interval after its holder's last renewal: a timer that fires
 * late or a slow statement does not hand the job to another process. Half an interval, at most a minute.
 */
export function leaseMarginMs(everyMs: number): number {
  return Math.min(everyMs / 2, 60_000);
}

/**
 * How often a process that does not hold a job's lease tries it: a dead holder's job runs again at
 * most this long after its lease expired, i.e. within two of its intervals. A quarter interval, at most 30 s.
 */
export function standbyPaceMs(everyMs: number): number {
  return Math.max(25, Math.min(everyMs / 4, 30_000));
}

export interface SchedulerOptions {
  /** This process's name as a lease holder (leases.ts leaseHolderId); tests run several schedulers in one process. */
  holder?: string;
  /** These jobs alone (tests). */
  only?: readonly string[];
  /** For every job instead of leaseMarginMs(interval) and standbyPaceMs(interval) (tests with short intervals). */
  leaseMarginMs?: number;
  standbyPaceMs?: number;
}

/**
 * Stops the jobs and resolves once the rounds in flight have ended; then gives this process's leases
 * back, so that another process takes each job at its next try. `release: false` leaves them to
 * expire, as a process that dies does (tests).
 */
export type StopScheduler = (opts?: { release?: boolean }) => Promise<void>;

/** Runs every job now (recovery after a restart) and then at its interval, each leased job only while this process holds its lease. */
export function startScheduler(deps: SchedulerDeps, log: FastifyBaseLogger, opts: SchedulerOptions = {}): StopScheduler {
  const all = Object.entries(jobsOf(deps));
  const jobs = Object.fromEntries(opts.only ? all.filter(([name]) => opts.only!.includes(name)) : all);
  return runJobs(jobs, new JobLeases(deps.db, opts.holder), log, opts);
}

/** The scheduler's loop over any jobs (startScheduler's, or a test's). */
export function runJobs(
  jobs: Record<string, Job>,
  leases: JobLeases,
  log: FastifyBaseLogger,
  opts: Omit<SchedulerOptions, 'holder' | 'only'> = {},
): StopScheduler {
  let stopped = false;
  const loops = Object.entries(jobs).map(([name, job]) => {
    const ttlMs = job.everyMs + (opts.leaseMarginMs ?? leaseMarginMs(job.everyMs));
    const paceMs = opts.standbyPaceMs ?? standbyPaceMs(job.everyMs);
    let held = false;
    let refused = false;
    let failing = false;
    let timer: NodeJS.Timeout | undefined;
    let round: Promise<void> = Promise.resolve();

    /** Takes or renews the lease; whether this process may run the job now. */
    const take = async (): Promise<boolean> => {
      if (job.perProcess) return true;
      let now = false;
      try {
        now = await leases.acquire(name, ttlMs);
        failing = false;
      } catch (e) {
        if (!failing) log.error({ job: name, err: (e as Error).message }, '定时任务租约读写失败，稍后重试');
        failing = true;
      }
      if (now && !held && refused) log.info({ job: name, holder: leases.holder }, '定时任务由本进程接管（原执行进程已停止或失联）');
      if (!now && held && !failing) log.warn({ job: name }, '定时任务已由其他进程执行');
      if (!now) refused = true;
      held = now;
      return now;
    };

    const runRound = async () => {
      const started = Date.now();
      const ran = (await take()) && !stopped;
      if (ran) {
        // A round longer than the interval keeps its lease: another process does not start the job beside it.
        let renewing: Promise<unknown> = Promise.resolve();
        const keep = job.perProcess ? undefined : setInterval(() => (renewing = take()), job.everyMs);
        keep?.unref();
        try {
          const n = await job.run();
          if (n > 0 && job.everyMs >= JOB_INTERVAL_MS) log.info({ job: name, handled: n }, '定时任务已处理');
        } catch (e) {
          log.error({ job: name, err: (e as Error).message }, '定时任务失败，下一轮重试');
        } finally {
          clearInterval(keep);
          await renewing;
        }
      }
      if (stopped) return;
      // The holder keeps the job's pace (a slow round is not followed at once by the next); the others try it more often.
      timer = setTimeout(tick, ran ? job.everyMs - ((Date.now() - started) % job.everyMs) : paceMs);
      timer.unref();
    };
    const tick = () => {
      round = runRound();
    };
    tick();
    return {
      stop: () => clearTimeout(timer),
      ended: () => round,
    };
  });

  return async ({ release = true } = {}) => {
    stopped = true;
    loops.forEach((l) => l.stop());
    await Promise.allSettled(loops.map((l) => l.ended()));
    if (!release) return;
    try {
      await leases.release();
    } catch (e) {
      log.error({ err: (e as Error).message }, '定时任务租约未能交还，其他进程将在租约到期后接管');
    }
  };
}
