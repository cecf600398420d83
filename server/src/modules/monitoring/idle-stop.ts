/**
 * GPU 空闲 N 小时后自动关机 (AutoDL has it): an instance with cards may ask to be stopped once every
 * sample of the last N hours saw each of its cards below IDLE_GPU_THRESHOLD_PERCENT. The sampling job
 * tells `observe` what each sample saw; the idle job (`tick`) sends a notice IDLE_STOP_NOTICE_MINUTES
 * before and then stops the instance as the system's own 关机 through the state machine (operation
 * log: 关机, detail "GPU 空闲 N 小时，自动关机").
 *
 * A stretch of idleness starts over when a card is busy, when the samples stop for a while (the
 * machine was off, or nobody watched it: nothing is known of that time), and when the setting
 * changes. A sample without GPU figures counts as busy: what is not known is not idle.
 *
 * Exactly once across processes: the due rows are taken FOR UPDATE SKIP LOCKED and their stretch
 * cleared in the same transaction, before the stop is asked; the notice is sent once per stretch
 * (its occasion is the stretch's start).
 */
import { and, eq, isNotNull, sql, type SQL } from 'drizzle-orm';
import { IDLE_GPU_THRESHOLD_PERCENT, IDLE_STOP_NOTICE_MINUTES, PAGE, formatBeijing, type IdleStop, type IdleStopRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { InstanceService } from '../instances/index.js';
import type { Notice, NoticeService } from '../notices/index.js';
import type { UserRow } from '../users/index.js';
import { instanceIdleStops } from './schema.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/** Samples further apart than this leave a gap: the stretch before it does not count. */
export const SAMPLE_GAP_MS = 2 * MINUTE_MS;
const BATCH = 200;

type IdleRow = typeof instanceIdleStops.$inferSelect;

export interface IdleStopDeps {
  db: Db;
  clock: Clock;
  instances: Pick<InstanceService, 'mustFind' | 'actAsSystem' | 'accessOf'>;
  notices: Pick<NoticeService, 'send'>;
}

export class IdleStops {
  constructor(private deps: IdleStopDeps) {}

  /** The instance's setting and, while its cards are idle, since when and when it will stop. */
  async get(user: UserRow, id: string): Promise<IdleStop> {
    await this.deps.instances.mustFind(user, id);
    const [row] = await this.deps.db.select().from(instanceIdleStops).where(eq(instanceIdleStops.instanceId, id));
    return this.view(id, row ?? null);
  }

  /** Switches it on for `hours` (a new window counts from now) or off (null). */
  async set(user: UserRow, id: string, req: IdleStopRequest): Promise<IdleStop> {
    const inst = await this.deps.instances.mustFind(user, id);
    if (req.hours === null) {
      await this.deps.db.delete(instanceIdleStops).where(eq(instanceIdleStops.instanceId, id));
      return this.view(id, null);
    }
    if (inst.gpuCount === 0) throw new AppError('IDLE_STOP_NO_GPU', '无卡的实例（CPU 实例）没有可判断的 GPU，请使用定时关机');
    const now = this.deps.clock.now();
    const fresh = { payerId: inst.userId, category: inst.category, hours: req.hours, idleSince: null, seenAt: null, warnedFor: null, updatedAt: now };
    const [row] = await this.deps.db
      .insert(instanceIdleStops)
      .values({ instanceId: id, ...fresh })
      .onConflictDoUpdate({ target: instanceIdleStops.instanceId, set: fresh })
      .returning();
    return this.view(id, row!);
  }

  /**
   * What one sampling round saw, in one UPDATE: a busy (or unknown) GPU ends the stretch; an idle one
   * starts a stretch where there was none or where the last sample is too long ago.
   */
  async observe(now: Date, busy: Map<string, boolean>): Promise<void> {
    if (!busy.size) return;
    const seen = sql.join(
      [...busy].map(([id, b]) => sql`(${id}::uuid, ${b}::boolean)`),
      sql`, `,
    );
    const gapStart = new Date(now.getTime() - SAMPLE_GAP_MS).toISOString();
    const at = now.toISOString();
    await this.deps.db.execute(sql`
      update instance_idle_stops s set
        idle_since = case
          when v.busy then null
          when s.idle_since is null or s.seen_at is null or s.seen_at < ${gapStart}::timestamptz then ${at}::timestamptz
          else s.idle_since end,
        seen_at = ${at}::timestamptz
      from (values ${seen}) as v(id, busy)
      where s.instance_id = v.id`);
  }

  /** The idle job: notices for stretches about to reach their hours, stops for those that have. Returns how many it handled. */
  async tick(): Promise<number> {
    return (await this.warnDue()) + (await this.stopDue());
  }

  private async warnDue(): Promise<number> {
    const now = this.deps.clock.now();
    const rows = await this.deps.db
      .select()
      .from(instanceIdleStops)
      .where(
        and(
          this.watchedNow(now),
          sql`${instanceIdleStops.idleSince} + make_interval(hours => ${instanceIdleStops.hours}) <= ${new Date(now.getTime() + IDLE_STOP_NOTICE_MINUTES * MINUTE_MS).toISOString()}::timestamptz`,
          sql`${instanceIdleStops.warnedFor} is distinct from ${instanceIdleStops.idleSince}`,
        ),
      )
      .limit(BATCH);
    let sent = 0;
    for (const row of rows) {
      const stopAt = stopAtOf(row)!;
      const name = await this.nameOf(row.instanceId);
      if (name === null) continue;
      await this.deps.notices.send(row.payerId, idleNotice.warning({ ...row, name, stopAt }));
      // Only the stretch it was sent for: a stretch that started over since is warned again.
      await this.deps.db
        .update(instanceIdleStops)
        .set({ warnedFor: row.idleSince })
        .where(and(eq(instanceIdleStops.instanceId, row.instanceId), eq(instanceIdleStops.idleSince, row.idleSince!)));
      sent++;
    }
    return sent;
  }

  private async stopDue(): Promise<number> {
    const now = this.deps.clock.now();
    const due = await this.deps.db.transaction(async (tx) => {
      const rows = await tx
        .select()
        .from(instanceIdleStops)
        .where(
          and(
            this.watchedNow(now),
            sql`${instanceIdleStops.idleSince} + make_interval(hours => ${instanceIdleStops.hours}) <= ${now.toISOString()}::timestamptz`,
          ),
        )
        .limit(BATCH)
        .for('update', { skipLocked: true });
      for (const row of rows) {
        await tx.update(instanceIdleStops).set({ idleSince: null, warnedFor: null, updatedAt: now }).where(eq(instanceIdleStops.instanceId, row.instanceId));
      }
      return rows;
    });
    for (const row of due) {
      const stopped = await this.deps.instances.actAsSystem(row.instanceId, 'stop', `GPU 空闲 ${row.hours} 小时，自动关机`);
      const name = stopped ? await this.nameOf(row.instanceId) : null;
      if (name !== null) await this.deps.notices.send(row.payerId, idleNotice.stopped({ ...row, name, at: now }));
    }
    return due.length;
  }

  /** Rows switched on whose machine was sampled idle lately (a stopped machine is not sampled, so it drops out). */
  private watchedNow(now: Date): SQL {
    return and(
      isNotNull(instanceIdleStops.idleSince),
      sql`${instanceIdleStops.seenAt} >= ${new Date(now.getTime() - SAMPLE_GAP_MS).toISOString()}::timestamptz`,
    )!;
  }

  /** The instance's name for a notice; null once it is gone (its setting goes with it). */
  private async nameOf(id: string): Promise<string | null> {
    const access = await this.deps.instances.accessOf(id);
    if (access) return access.name;
    await this.deps.db.delete(instanceIdleStops).where(eq(instanceIdleStops.instanceId, id));
    return null;
  }

  private view(instanceId: string, row: IdleRow | null): IdleStop {
    const watched = row?.idleSince && row.seenAt && row.seenAt.getTime() >= this.deps.clock.now().getTime() - SAMPLE_GAP_MS;
    return {
      instanceId,
      hours: row?.hours ?? null,
      thresholdPercent: IDLE_GPU_THRESHOLD_PERCENT,
      idleSince: watched ? row.idleSince!.toISOString() : null,
      stopAt: watched ? stopAtOf(row)!.toISOString() : null,
    };
  }
}

function stopAtOf(row: Pick<IdleRow, 'idleSince' | 'hours'>): Date | null {
  return row.idleSince ? new Date(row.idleSince.getTime() + row.hours * HOUR_MS) : null;
}

type NoticeRow = Pick<IdleRow, 'instanceId' | 'category' | 'hours' | 'idleSince'> & { name: string };

function detailLink(row: Pick<IdleRow, 'instanceId' | 'category'>): string {
  return PAGE.ipvmDetail.replace(':type', encodeURIComponent(row.category)).replace(':id', encodeURIComponent(row.instanceId));
}

/** What the notices say (kind IdleStop). */
export const idleNotice = {
  warning(r: NoticeRow & { stopAt: Date }): Notice {
    const time = formatBeijing(r.stopAt);
    return {
      kind: 'IdleStop',
      title: `实例「${r.name}」的 GPU 已空闲，将于 ${time} 自动关机`,
      body:
        `您的实例「${r.name}」的 GPU 使用率已持续低于 ${IDLE_GPU_THRESHOLD_PERCENT}%，按您设置的「GPU 空闲 ${r.hours} 小时后自动关机」，` +
        `将于 ${time} 自动关机。如仍需使用，请在此之前运行 GPU 任务，或在实例详情中关闭该设置。`,
      params: { name: r.name, time, hours: String(r.hours) },
      link: detailLink(r),
      subject: r.instanceId,
      period: `idle-warn:${r.idleSince!.toISOString()}`,
    };
  },
  stopped(r: NoticeRow & { at: Date }): Notice {
    return {
      kind: 'IdleStop',
      title: `实例「${r.name}」因 GPU 空闲已自动关机`,
      body: `您的实例「${r.name}」的 GPU 已空闲 ${r.hours} 小时，已于 ${formatBeijing(r.at)} 自动关机，数据盘数据保留，可随时重新开机。`,
      params: { name: r.name, time: formatBeijing(r.at), hours: String(r.hours) },
      link: detailLink(r),
      subject: r.instanceId,
      period: `idle-stop:${r.at.toISOString()}`,
    };
  },
};
