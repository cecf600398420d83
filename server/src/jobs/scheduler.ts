/**
 * Periodic work: expire unpaid orders and QR payments, finish orders a crashed process left paid,
 * take expired gift credit and vouchers off balances; read the compute driver's events; charge
 * post-paid instances, their data disks, stop expired ones and those whose scheduled stop (定时关机)
 * is due, and release those past their grace period; move LoRA jobs and image generations forward
 * on the image backend; sample running machines for the 概览 charts, roll their figures up and stop
 * instances whose GPUs stayed idle (GPU 空闲自动关机). Every job is safe to run in several processes
 * at once (guarded status moves, row locks with SKIP LOCKED, idempotency keys), so each process
 * simply runs them; nothing depends on process memory.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { EmbeddedComfyApps } from '../drivers/image-backend/comfy-apps.js';
import { hasBrowserApp } from '../modules/access/index.js';
import type { DiffusionService } from '../modules/diffusion/index.js';
import type { GiftService } from '../modules/gifts/index.js';
import type { InstanceBilling, InstanceService, PrepaidService, Reconciler, ScheduledStops } from '../modules/instances/index.js';
import type { ModelGateway, ModelUsage } from '../modules/model/index.js';
import type { IdleStops, Monitoring } from '../modules/monitoring/index.js';
import type { GpuSubscriptionService } from '../modules/notices/index.js';
import type { Checkout } from '../modules/orders/index.js';
import type { PaymentService } from '../modules/payments/index.js';
import type { TrainingService } from '../modules/training/index.js';
import type { VoucherService } from '../modules/vouchers/index.js';

export const JOB_INTERVAL_MS = 30_000;
/** How often running machines are sampled for the 概览 charts (the step of the finest series, monitoring/store.ts). */
export const MONITOR_SAMPLE_MS = 15_000;
/** How often the images nothing needs are removed from the host (a deleted saved image's space comes back within this). */
export const IMAGE_GC_MS = 60 * 60_000;

interface Job {
  run: () => Promise<number>;
  everyMs: number;
}

/** The services the jobs call, and the intervals the configuration sets. */
export interface SchedulerDeps {
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
    'monitoring.sample': { run: () => deps.monitoring.sampleTick(), everyMs: MONITOR_SAMPLE_MS },
    // Writes and prunes rows every minute as a matter of course (nothing to report).
    'monitoring.rollup': { run: () => deps.monitoring.rollupTick().then(() => 0), everyMs: 60_000 },
    'instances.idle-stop': { run: () => deps.idleStops.tick(), everyMs: 60_000 },
    'training.advance': { run: () => deps.training.tick(), everyMs: deps.intervals.imageBackendTickMs },
    'diffusion.advance': { run: () => deps.diffusion.tick(), everyMs: deps.intervals.imageBackendTickMs },
    // An instance's ComfyUI goes when the instance stops (the next access would find it stopped too).
    'apps.comfyui-sweep': {
      run: () => deps.comfyApps.sweep(async (id) => hasBrowserApp((await deps.instances.accessOf(id)) ?? { applicationId: null, status: 'Released' })),
      everyMs: slow,
    },
    'model.stale-holds': { run: () => deps.modelGateway.sweepStaleHolds(), everyMs: slow },
    // Rewrites the last hours' sums each time (nothing to report); the stats read newer hours from the calls, so minutes do not matter.
    'model.usage-rollup': { run: () => deps.modelUsage.rollup().then(() => 0), everyMs: 5 * 60_000 },
    'model.call-retention': { run: () => deps.modelUsage.purge(), everyMs: 60 * 60_000 },
    'orders.expire': { run: () => deps.checkout.expireDue(), everyMs: slow },
    'orders.recover': { run: () => deps.checkout.recoverPaid(), everyMs: slow },
    'payments.close-expired': { run: () => deps.payments.closeExpired(), everyMs: slow },
    'gifts.expire': { run: () => deps.gifts.expireDue(), everyMs: slow },
    'vouchers.expire': { run: () => deps.vouchers.expireDue(), everyMs: slow },
    // Under the layout's lock between processes (oci/lock.ts): never while another console process imports.
    'images.gc': { run: () => deps.imageGc.tick(), everyMs: IMAGE_GC_MS },
  };
}

/** Runs every job now (recovery after a restart) and then at its interval; returns a stop function. */
export function startScheduler(deps: SchedulerDeps, log: FastifyBaseLogger): () => void {
  const timers = Object.entries(jobsOf(deps)).map(([name, job]) => {
    let running = false;
    const tick = async () => {
      if (running) return; // a slow round is not overlapped by the next
      running = true;
      try {
        const n = await job.run();
        if (n > 0 && job.everyMs >= JOB_INTERVAL_MS) log.info({ job: name, handled: n }, '定时任务已处理');
      } catch (e) {
        log.error({ job: name, err: (e as Error).message }, '定时任务失败，下一轮重试');
      } finally {
        running = false;
      }
    };
    void tick();
    const timer = setInterval(() => void tick(), job.everyMs);
    timer.unref();
    return timer;
  });
  return () => timers.forEach(clearInterval);
}
