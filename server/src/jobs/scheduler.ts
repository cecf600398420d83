/**
 * Periodic work: expire unpaid orders and QR payments, finish orders a crashed process left paid,
 * take expired gift credit and vouchers off balances; read the compute driver's events; charge
 * post-paid instances, their data disks, stop expired ones and those whose scheduled stop (定时关机)
 * is due, and release those past their grace period; move LoRA jobs and image generations forward
 * on the image backend. Every job is safe to run in several processes
 * at once (guarded status moves, row locks with SKIP LOCKED, idempotency keys), so each process
 * simply runs them; nothing depends on process memory.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';
import { hasBrowserApp } from '../modules/access/index.js';

export const JOB_INTERVAL_MS = 30_000;

interface Job {
  run: () => Promise<number>;
  everyMs: number;
}

export function jobsOf(ctx: AppContext): Record<string, Job> {
  const slow = JOB_INTERVAL_MS;
  return {
    'compute.reconcile': { run: () => ctx.reconciler.tick(), everyMs: ctx.config.RECONCILE_INTERVAL_MS },
    'instances.meter': { run: () => ctx.instanceBilling.meterTick(), everyMs: ctx.config.BILLING_TICK_SECONDS * 1000 },
    'instances.disk': { run: () => ctx.instanceBilling.diskTick(), everyMs: slow },
    // Before the expiry job: an instance renewed in time is not stopped.
    'instances.auto-renew': { run: () => ctx.prepaid.autoRenewTick(), everyMs: slow },
    'instances.expire': { run: () => ctx.instanceBilling.expiryTick(), everyMs: slow },
    'instances.scheduled-stop': { run: () => ctx.scheduledStops.tick(), everyMs: slow },
    'instances.release': { run: () => ctx.instanceBilling.releaseTick(), everyMs: slow },
    'instances.held-cards': { run: () => ctx.instanceBilling.heldCardsTick(), everyMs: slow },
    'instances.expiring-notice': { run: () => ctx.prepaid.expiringNoticeTick(), everyMs: slow },
    'notices.gpu-available': { run: () => ctx.gpuSubscriptions.tick(), everyMs: slow },
    'training.advance': { run: () => ctx.training.tick(), everyMs: ctx.config.IMAGE_BACKEND_TICK_MS },
    'diffusion.advance': { run: () => ctx.diffusion.tick(), everyMs: ctx.config.IMAGE_BACKEND_TICK_MS },
    // An instance's ComfyUI goes when the instance stops (the next access would find it stopped too).
    'apps.comfyui-sweep': {
      run: () => ctx.comfyApps.sweep(async (id) => hasBrowserApp((await ctx.instances.accessOf(id)) ?? { applicationId: null, status: 'Released' })),
      everyMs: slow,
    },
    'model.stale-holds': { run: () => ctx.modelGateway.sweepStaleHolds(), everyMs: slow },
    // Rewrites the last hours' sums each time (nothing to report); the stats read newer hours from the calls, so minutes do not matter.
    'model.usage-rollup': { run: () => ctx.modelUsage.rollup().then(() => 0), everyMs: 5 * 60_000 },
    'model.call-retention': { run: () => ctx.modelUsage.purge(), everyMs: 60 * 60_000 },
    'orders.expire': { run: () => ctx.checkout.expireDue(), everyMs: slow },
    'orders.recover': { run: () => ctx.checkout.recoverPaid(), everyMs: slow },
    'payments.close-expired': { run: () => ctx.payments.closeExpired(), everyMs: slow },
    'gifts.expire': { run: () => ctx.gifts.expireDue(), everyMs: slow },
    'vouchers.expire': { run: () => ctx.vouchers.expireDue(), everyMs: slow },
  };
}

/** Runs every job now (recovery after a restart) and then at its interval; returns a stop function. */
export function startScheduler(ctx: AppContext, log: FastifyBaseLogger): () => void {
  const timers = Object.entries(jobsOf(ctx)).map(([name, job]) => {
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
