/**
 * Renewal of a prepaid (Day/Week/Month) instance: `duration` more units of its own cycle, quoted
 * with the same price function as buying (its disk and bandwidth as they are now), sold as a Renew
 * order paid like any order, and applied once per order by this file's fulfiller: the expiry moves
 * on from itself (or from now once expired) and a scheduled release is cancelled. Auto-renewal
 * (prepaid.ts) uses the same quote and extension.
 */
import { eq } from 'drizzle-orm';
import { InstanceStatus, isPostpaid, type Order, type Quote, type RenewInstanceRequest } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import { instances } from './schema.js';
import { AppError } from '../../http/errors.js';
import { HOURS_PER_UNIT } from '../catalogue/index.js';
import type { Quotes } from '../catalogue/index.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { Fulfiller, OrderRow, OrderService } from '../orders/index.js';
import type { UserRow } from '../users/index.js';
import { type InstanceService } from './service.js';
import { type InstanceRow } from './rows.js';

export interface RenewalDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  /** The catalogue's price function. */
  pricing: Pick<Quotes, 'quoteRenewal'>;
  orders: OrderService;
  instances: InstanceService;
}

export class RenewalService implements Fulfiller {
  constructor(private deps: RenewalDeps) {}

  /** What `duration` more units of the instance's own cycle cost (the same price function as buying). */
  async renewQuote(user: UserRow, id: string, req: RenewInstanceRequest): Promise<Quote> {
    const row = await this.deps.instances.mustFind(user, id);
    if (isPostpaid(row.cycle)) throw new AppError('INSTANCE_STATE_INVALID', '按量计费实例随用随付，无需续费');
    if (row.status === 'Deleting' || row.status === 'Failed') throw new AppError('INSTANCE_STATE_INVALID', `实例${InstanceStatus.label(row.status)}，不能续费`);
    const snap = await this.deps.catalogue.get();
    const gpu = row.gpuTypeId ? snap.gpuTypes.find((g) => g.id === row.gpuTypeId) : undefined;
    const size = row.sizeId ? snap.sizes.find((x) => x.id === row.sizeId) : undefined;
    return this.deps.pricing.quoteRenewal(
      {
        category: row.category,
        gpuTypeId: row.gpuTypeId,
        sizeId: row.sizeId,
        quantity: row.gpuTypeId ? row.gpuCount : 1,
        productName: `续费 ${row.name}（${gpu ? `${gpu.name} × ${row.gpuCount}` : (size?.name ?? row.sizeId)}）`,
        cycle: row.cycle,
        duration: req.duration,
        dataDiskGb: row.dataDiskGb,
        freeDataDiskGb: row.freeDataDiskGb,
        extraBandwidthMbps: row.bandwidthMbps - row.includedBandwidthMbps,
        regionId: row.regionId,
        voucherId: req.voucherId,
      },
      user,
    );
  }

  /** A Renew order for the instance, to be paid like any order; paying extends expireAt. */
  async renew(user: UserRow, id: string, req: RenewInstanceRequest): Promise<Order> {
    const quote = await this.renewQuote(user, id, { duration: req.duration });
    const row = await this.deps.instances.mustFind(user, id);
    return this.deps.orders.create({
      payerId: row.userId,
      createdBy: user.id,
      kind: row.category === 'Gpu' || row.category === 'App' ? 'Personal' : 'default',
      type: 'Renew',
      category: row.category,
      request: { instanceId: row.id, duration: req.duration },
      quote,
      description: quote.lines[0]!.name,
    });
  }

  /** Extends a paid renewal's instance, once per order; an expired, stopped instance may run again. */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const { instanceId, duration } = order.request as { instanceId: string; duration: number };
    await this.deps.db.transaction(async (tx) => {
      const cur = await this.deps.instances.lock(tx, instanceId);
      if (await this.deps.instances.orderApplied(tx, instanceId, 'renew', order.orderUid)) return;
      await this.extendExpiry(tx, cur, duration, { action: 'renew', actorId: order.createdBy, detail: order.orderUid });
    });
    return { resourceId: instanceId };
  }

  /** `duration` more units of the cycle from the expiry (or from now if expired), cancelling a scheduled release; logged. */
  async extendExpiry(tx: Tx, cur: InstanceRow, duration: number, log: { action: string; actorId: string | null; detail: string }): Promise<Date> {
    const now = this.deps.clock.now();
    const from = cur.expireAt && cur.expireAt > now ? cur.expireAt : now;
    const expireAt = new Date(from.getTime() + Number(HOURS_PER_UNIT[cur.cycle]) * duration * 3600_000);
    await tx.update(instances).set({ expireAt, releaseAt: null, releaseNoticeAt: null, updatedAt: now }).where(eq(instances.id, cur.id));
    await this.deps.instances.logOp(tx, cur, { action: log.action, actorId: log.actorId, from: cur.status, to: cur.status, detail: log.detail });
    return expireAt;
  }
}
