/**
 * 定时关机 — a scheduled stop: an instance that runs (or is coming up) may have one pending stop, at a
 * time or after a number of hours, which the instances.scheduled-stop job carries out as the
 * system's own stop through the state machine (operation log 关机, detail 定时关机). A new schedule
 * replaces the pending one; cancelling, or any stop or release before the time (InstanceService.begin),
 * clears it. An instance that is not running when the time comes is left as it is: the schedule is
 * cleared and the log says why.
 *
 * Exactly once across processes: the job takes the due rows with FOR UPDATE SKIP LOCKED and clears
 * the schedule in the same transaction that begins the stop, so no other process (or a later round)
 * sees it again.
 */
import { and, asc, eq, isNotNull, isNull, lte } from 'drizzle-orm';
import {
  InstanceStatus,
  SCHEDULED_STOP_MAX_HOURS,
  canAct,
  formatBeijing,
  type Instance,
  type InstanceStatus as Status,
  type ScheduledStopRequest,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { instances } from './schema.js';
import { AppError } from '../../http/errors.js';
import type { UserRow } from '../users/index.js';
import type { InstanceService } from './service.js';
import type { InstanceRow } from './rows.js';
import type { InstanceViews } from './views.js';

const HOUR_MS = 3_600_000;
const BATCH = 200;
/** Where a stop may be scheduled: the machine runs, or is on its way up. */
const SCHEDULABLE: readonly Status[] = ['Pending', 'Starting', 'Restarting', 'Running'];

export class ScheduledStops {
  constructor(private deps: { db: Db; clock: Clock; instances: InstanceService; views: InstanceViews }) {}

  /** Sets (or replaces) the instance's scheduled stop. */
  async schedule(user: UserRow, id: string, req: ScheduledStopRequest): Promise<Instance> {
    await this.deps.instances.mustFind(user, id);
    const now = this.deps.clock.now().getTime();
    const at = new Date(req.hours !== undefined ? now + Math.round(req.hours * HOUR_MS) : Date.parse(req.at!));
    if (at.getTime() <= now) throw new AppError('SCHEDULED_STOP_TIME_INVALID', `${formatBeijing(at)} 已过去，请选择之后的时间`);
    if (at.getTime() > now + SCHEDULED_STOP_MAX_HOURS * HOUR_MS)
      throw new AppError('SCHEDULED_STOP_TIME_INVALID', `最晚可定在 ${formatBeijing(new Date(now + SCHEDULED_STOP_MAX_HOURS * HOUR_MS))}`);
    const core = this.deps.instances;
    await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      if (!SCHEDULABLE.includes(cur.status)) {
        const off = cur.status === 'Stopped' || cur.status === 'Shutdown';
        throw new AppError(
          'INSTANCE_STATE_INVALID',
          off ? '实例已关机，无需定时关机；开机后可再设置' : `实例${InstanceStatus.label(cur.status)}，不能设置定时关机（运行中或开机中的实例可以）`,
        );
      }
      await tx.update(instances).set({ scheduledStopAt: at, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      const replaced = cur.scheduledStopAt ? `（原定 ${formatBeijing(cur.scheduledStopAt)}）` : '';
      await core.logOp(tx, cur, {
        action: 'scheduleStop',
        actorId: user.id,
        from: cur.status,
        to: cur.status,
        detail: `将于 ${formatBeijing(at)} 关机${replaced}`,
      });
    });
    return this.deps.views.get(user, id);
  }

  /** Cancels the pending scheduled stop; nothing pending is not an error. */
  async cancel(user: UserRow, id: string): Promise<Instance> {
    await this.deps.instances.mustFind(user, id);
    const core = this.deps.instances;
    await this.deps.db.transaction(async (tx) => {
      const cur = await core.lock(tx, id);
      if (!cur.scheduledStopAt) return;
      await tx.update(instances).set({ scheduledStopAt: null, updatedAt: this.deps.clock.now() }).where(eq(instances.id, id));
      await core.logOp(tx, cur, {
        action: 'cancelScheduledStop',
        actorId: user.id,
        from: cur.status,
        to: cur.status,
        detail: `取消 ${formatBeijing(cur.scheduledStopAt)} 的定时关机`,
      });
    });
    return this.deps.views.get(user, id);
  }

  /** The scheduler's job: every scheduled stop that is due, once. Returns how many schedules were handled. */
  async tick(): Promise<number> {
    let handled = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const stopping: InstanceRow[] = [];
      const n = await this.deps.db.transaction(async (tx) => {
        const rows = await tx
          .select()
          .from(instances)
          .where(and(isNotNull(instances.scheduledStopAt), lte(instances.scheduledStopAt, now), isNull(instances.releasedAt)))
          .orderBy(asc(instances.scheduledStopAt))
          .limit(BATCH)
          .for('update', { skipLocked: true });
        for (const row of rows) {
          const due = row.scheduledStopAt!;
          await tx.update(instances).set({ scheduledStopAt: null }).where(eq(instances.id, row.id));
          const cur = { ...row, scheduledStopAt: null };
          if (canAct('stop', cur.status, 'system')) {
            stopping.push(await this.deps.instances.begin(tx, cur, 'stop', { actor: 'system', actorId: null, detail: '定时关机' }));
          } else {
            await this.deps.instances.logOp(tx, cur, {
              action: 'scheduledStop',
              actorId: null,
              from: cur.status,
              to: cur.status,
              detail: `原定 ${formatBeijing(due)} 的定时关机未执行：实例${InstanceStatus.label(cur.status)}`,
            });
          }
        }
        return rows.length;
      });
      // After the commit: the driver is asked once the stop is on record (the reconciler resends it otherwise).
      for (const row of stopping) await this.deps.instances.submit(row);
      handled += n;
      if (n < BATCH) return handled;
    }
  }
}
