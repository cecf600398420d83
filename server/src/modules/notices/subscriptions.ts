/**
 * "有卡时通知我": a user waiting for cards of a GPU type in a region (offered by the GPU market on a
 * full host, and by a start refused for busy cards). A periodic job (jobs/scheduler.ts) compares the
 * waiting subscriptions with the free cards of the catalogue's snapshot, which every process
 * re-reads from the database, tells the owner of each one the cards satisfy (the notice is sent
 * once per subscription: its unique occasion), then marks it notified: however many processes run
 * the job, a subscription is notified once.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, isNull, lte, sql } from 'drizzle-orm';
import { GPU_SUBSCRIPTION_LIMIT, type GpuSubscription, type GpuSubscriptionList } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { liveHosts, regionOfHost, type CatalogueStore, type Snapshot } from '../catalogue/index.js';
import { gpuSubscriptions } from './schema.js';
import { notices } from './kinds.js';
import type { NoticeService } from './service.js';

type SubscriptionRow = typeof gpuSubscriptions.$inferSelect;

/** Notified subscriptions the list still shows (so the user sees what came true), newest first. */
const NOTIFIED_SHOWN = 20;

export class GpuSubscriptionService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      catalogue: CatalogueStore;
      notices: NoticeService;
    },
  ) {}

  /** Subscribes (the same waiting subscription again is answered as it is); at most GPU_SUBSCRIPTION_LIMIT waiting. */
  async subscribe(userId: string, req: { gpuTypeId: string; regionId: string; gpuCount: number }): Promise<GpuSubscription> {
    const snap = await this.deps.catalogue.get();
    if (!snap.gpuTypes.some((g) => g.id === req.gpuTypeId)) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `GPU 型号 ${req.gpuTypeId} 不存在或已下架`);
    if (!snap.regions.some((r) => r.id === req.regionId)) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `地区 ${req.regionId} 不存在或已下架`);
    const row = await this.deps.db.transaction(async (tx) => {
      // One user's subscriptions take turns, so two at once cannot both pass the limit.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`gpu-subscription:${userId}`}, 0))`);
      const waiting = and(eq(gpuSubscriptions.userId, userId), isNull(gpuSubscriptions.notifiedAt));
      const [same] = await tx
        .select()
        .from(gpuSubscriptions)
        .where(
          and(waiting, eq(gpuSubscriptions.gpuTypeId, req.gpuTypeId), eq(gpuSubscriptions.regionId, req.regionId), eq(gpuSubscriptions.gpuCount, req.gpuCount)),
        );
      if (same) return same;
      const [n] = await tx.select({ n: count() }).from(gpuSubscriptions).where(waiting);
      if ((n?.n ?? 0) >= GPU_SUBSCRIPTION_LIMIT) throw new AppError('GPU_SUBSCRIPTION_LIMIT', `已有 ${n!.n} 个等待中的订阅`);
      const [created] = await tx
        .insert(gpuSubscriptions)
        .values({ id: randomUUID(), userId, gpuTypeId: req.gpuTypeId, regionId: req.regionId, gpuCount: req.gpuCount, createdAt: this.deps.clock.now() })
        .returning();
      return created!;
    });
    return toDto(snap, row);
  }

  /** The waiting subscriptions, then the latest notified ones. */
  async list(userId: string): Promise<GpuSubscriptionList> {
    const snap = await this.deps.catalogue.get();
    const [waiting, notified] = await Promise.all([
      this.deps.db
        .select()
        .from(gpuSubscriptions)
        .where(and(eq(gpuSubscriptions.userId, userId), isNull(gpuSubscriptions.notifiedAt)))
        .orderBy(desc(gpuSubscriptions.createdAt)),
      this.deps.db
        .select()
        .from(gpuSubscriptions)
        .where(and(eq(gpuSubscriptions.userId, userId), sql`${gpuSubscriptions.notifiedAt} is not null`))
        .orderBy(desc(gpuSubscriptions.notifiedAt))
        .limit(NOTIFIED_SHOWN),
    ]);
    return { items: [...waiting, ...notified].map((r) => toDto(snap, r)), limit: GPU_SUBSCRIPTION_LIMIT };
  }

  /** Cancels (deletes) one of the user's subscriptions; another's or none is 40400004. */
  async cancel(userId: string, id: string): Promise<void> {
    const rows = await this.deps.db
      .delete(gpuSubscriptions)
      .where(and(eq(gpuSubscriptions.id, id), eq(gpuSubscriptions.userId, userId)))
      .returning({ id: gpuSubscriptions.id });
    if (!rows.length) throw new AppError('RECORD_NOT_FOUND', '该订阅不存在或已取消');
  }

  /**
   * The job: for each GPU type and region someone waits for, the most cards free on one live host;
   * every waiting subscription that many cards satisfy is claimed and its owner told. Returns how
   * many were notified.
   */
  async tick(): Promise<number> {
    const pairs = await this.deps.db
      .selectDistinct({ gpuTypeId: gpuSubscriptions.gpuTypeId, regionId: gpuSubscriptions.regionId })
      .from(gpuSubscriptions)
      .where(isNull(gpuSubscriptions.notifiedAt));
    if (!pairs.length) return 0;
    const snap = await this.deps.catalogue.get();
    const most = new Map<string, number>();
    for (const h of liveHosts(snap)) {
      const key = `${h.gpuTypeId}|${regionOfHost(snap, h)}`;
      most.set(key, Math.max(most.get(key) ?? 0, h.gpuFree));
    }
    let n = 0;
    for (const p of pairs) {
      const free = most.get(`${p.gpuTypeId}|${p.regionId}`) ?? 0;
      if (free <= 0) continue;
      const due = await this.deps.db
        .select()
        .from(gpuSubscriptions)
        .where(
          and(
            eq(gpuSubscriptions.gpuTypeId, p.gpuTypeId),
            eq(gpuSubscriptions.regionId, p.regionId),
            lte(gpuSubscriptions.gpuCount, free),
            isNull(gpuSubscriptions.notifiedAt),
          ),
        )
        .orderBy(asc(gpuSubscriptions.createdAt));
      for (const s of due) {
        // The notice first (once per subscription, whoever sends it), then the mark: a crash in between is finished by the next round.
        const v = toDto(snap, s);
        await this.deps.notices.send(
          s.userId,
          notices.gpuAvailable({
            subscriptionId: s.id,
            gpuTypeId: v.gpuTypeId,
            gpuName: v.gpuName,
            regionId: v.regionId,
            regionName: v.regionName,
            gpuCount: v.gpuCount,
          }),
        );
        const marked = await this.deps.db
          .update(gpuSubscriptions)
          .set({ notifiedAt: this.deps.clock.now() })
          .where(and(eq(gpuSubscriptions.id, s.id), isNull(gpuSubscriptions.notifiedAt)))
          .returning({ id: gpuSubscriptions.id });
        n += marked.length;
      }
    }
    return n;
  }
}

function toDto(snap: Snapshot, r: SubscriptionRow): GpuSubscription {
  return {
    id: r.id,
    gpuTypeId: r.gpuTypeId,
    gpuName: snap.gpuTypes.find((g) => g.id === r.gpuTypeId)?.name ?? r.gpuTypeId,
    regionId: r.regionId,
    regionName: snap.regions.find((g) => g.id === r.regionId)?.name ?? r.regionId,
    gpuCount: r.gpuCount,
    createdAt: r.createdAt.toISOString(),
    notifiedAt: r.notifiedAt?.toISOString() ?? null,
  };
}
