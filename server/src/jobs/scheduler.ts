/**
 * Periodic work of the money side: expire unpaid orders and QR payments, finish orders a crashed
 * process left paid, and take expired gift credit and vouchers off balances. Every job is safe to
 * run in several processes at once (guarded status moves, row locks, idempotency keys), so each
 * process simply runs them; nothing depends on process memory.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';

export const JOB_INTERVAL_MS = 30_000;

export function jobsOf(ctx: AppContext): Record<string, () => Promise<number>> {
  return {
    'orders.expire': () => ctx.orders.expireDue(),
    'orders.recover': () => ctx.orders.recoverPaid(),
    'payments.close-expired': () => ctx.payments.closeExpired(),
    'gifts.expire': () => ctx.gifts.expireDue(),
    'vouchers.expire': () => ctx.vouchers.expireDue(),
  };
}

/** Runs every job now (recovery after a restart) and then every JOB_INTERVAL_MS; returns a stop function. */
export function startScheduler(ctx: AppContext, log: FastifyBaseLogger, intervalMs = JOB_INTERVAL_MS): () => void {
  let running = false;
  const tick = async () => {
    if (running) return; // a slow round is not overlapped by the next
    running = true;
    for (const [name, job] of Object.entries(jobsOf(ctx))) {
      try {
        const n = await job();
        if (n > 0) log.info({ job: name, handled: n }, '定时任务已处理');
      } catch (e) {
        log.error({ job: name, err: (e as Error).message }, '定时任务失败，下一轮重试');
      }
    }
    running = false;
  };
  void tick();
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
