/**
 * The purchase fulfiller of every instance category (NewBuy, and Usage for post-paid): a paid
 * order becomes its instances, Pending with their cards reserved, and the driver is asked for the
 * machines. The instance ids are derived from the order, so a repeated fulfilment creates nothing new.
 */
import { isPostpaid } from '@console/contract';
import { randomBytes } from 'node:crypto';
import type { BillingCycle, InstanceCategory } from '@console/contract';
import type { Clock } from '../../clock.js';
import { and, eq } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.js';
import { instances } from './schema.js';
import type { InventoryService } from '../catalogue/index.js';
import { HOURS_PER_UNIT, discounted } from '../catalogue/index.js';
import { priceKey, type CatalogueStore, type Snapshot } from '../catalogue/index.js';
import type { ImageService, UsableImage } from '../images/index.js';
import type { Fulfiller, OrderRow } from '../orders/index.js';
import { newMachinePassword, type PasswordBox } from './secrets.js';
import { type InstanceService } from './service.js';
import { instanceIdFor, type InstanceRow } from './rows.js';
import { pendingOpColumns } from './tasks.js';

/** What order.request holds for an instance purchase (orders/purchase.ts writes it). */
interface InstanceRequest {
  name?: string;
  gpuTypeId?: string;
  gpuCount?: number;
  sizeId?: string;
  count?: number;
  imageId?: string;
  userImageId?: string;
  applicationId?: string;
  cycle: BillingCycle;
  duration: number;
  dataDiskGb: number;
  /** What the buyer asked for (the placement below is where the quote put it). */
  hostId?: string;
  regionId?: string;
  roomId?: string;
  placement: { regionId: string; roomId?: string; hostId?: string };
}

export interface InstanceCreationDeps {
  db: Db;
  clock: Clock;
  catalogue: CatalogueStore;
  inventory: InventoryService;
  /** My images: what a new instance may be created from. */
  images: ImageService;
  passwords: PasswordBox;
  instances: InstanceService;
}

export class InstanceCreation implements Fulfiller {
  constructor(private deps: InstanceCreationDeps) {}

  /** Creates the order's instances (idempotent per order) and asks the driver for the machines. */
  async fulfil(order: OrderRow): Promise<{ resourceId: string }> {
    const req = order.request as InstanceRequest;
    const snap = await this.deps.catalogue.get();
    const now = this.deps.clock.now();
    const count = req.gpuTypeId ? 1 : (req.count ?? 1);
    // An image of my images (or one shared with a link) must still be usable when the order is fulfilled.
    const userImage = req.userImageId ? await this.deps.images.usableFor(order.userId, req.userImageId) : null;
    const rows = Array.from({ length: count }, (_, i) => this.newRow(order, req, snap, i, count, now, userImage));
    const created = await this.deps.db.transaction(async (tx) => {
      // Held until the rows are in: a delete of the image waits, then sees them Pending (images/service.ts).
      if (userImage) await this.deps.images.holdForCreate(tx, order.userId, userImage.id);
      const inserted = await tx.insert(instances).values(rows).onConflictDoNothing().returning();
      const placed: InstanceRow[] = [];
      for (const row of inserted) {
        const onHost = row.gpuHeld > 0 ? await this.takeCards(tx, snap, row, req) : row;
        await this.deps.instances.logOp(tx, onHost, {
          action: 'create',
          actorId: order.createdBy,
          from: null,
          to: 'Pending',
          detail: `订单 ${order.orderUid}`,
        });
        placed.push(onHost);
      }
      return placed;
    });
    for (const row of created) await this.deps.instances.submit(row);
    return { resourceId: rows.map((r) => r.id).join(',') };
  }

  /** How many instances are being created (Pending) from a saved image: it is not deleted under them. */
  async pendingFrom(tx: Tx, userImageId: string): Promise<number> {
    const rows = await tx
      .select({ id: instances.id })
      .from(instances)
      .where(and(eq(instances.userImageId, userImageId), eq(instances.status, 'Pending')));
    return rows.length;
  }

  /** Reserves the instance's cards, on another host that fits the order when its quoted one has filled up meanwhile. */
  private async takeCards(tx: Tx, snap: Snapshot, row: InstanceRow, req: InstanceRequest): Promise<InstanceRow> {
    const { host, regionId } = await this.deps.inventory.reserveFitting(tx, snap, row.hostId!, row.gpuHeld, {
      hostChosen: Boolean(req.hostId),
      regionId: req.regionId,
      roomId: req.roomId,
      dataDiskGb: req.dataDiskGb,
    });
    if (host.id === row.hostId) return row;
    const [moved] = await tx
      .update(instances)
      .set({ hostId: host.id, regionId, roomId: host.roomId, cpu: host.cpuPerGpu * row.gpuCount, memoryGb: host.memoryGbPerGpu * row.gpuCount })
      .where(eq(instances.id, row.id))
      .returning();
    return moved!;
  }

  private newRow(order: OrderRow, req: InstanceRequest, snap: Snapshot, i: number, count: number, now: Date, userImage: UsableImage | null): InstanceRow {
    const s = snap.settings;
    const host = req.placement.hostId ? snap.hosts.find((h) => h.id === req.placement.hostId) : undefined;
    const size = req.sizeId ? snap.sizes.find((x) => x.id === req.sizeId) : undefined;
    const app = req.applicationId ? snap.applications.find((a) => a.id === req.applicationId) : undefined;
    const gpuCount = req.gpuCount ?? 0;
    const postpaid = isPostpaid(req.cycle);
    const unit = snap.prices.get(host ? priceKey('gpu', host.gpuTypeId) : priceKey('size', req.sizeId!))?.get(postpaid ? req.cycle : 'Hour');
    const hourly = unit ? discounted(unit) * BigInt(Math.max(gpuCount, 1)) : 0n;
    const freeDisk = host ? host.dataDiskFreeGb * gpuCount : 0;
    const extraGb = BigInt(Math.max(0, req.dataDiskGb - freeDisk));
    const base =
      req.name?.trim() || (app?.name ?? (host ? `${snap.gpuTypes.find((g) => g.id === host.gpuTypeId)?.name ?? 'GPU'} 实例` : (size?.name ?? '实例')));
    const prepaidHours = postpaid ? 0 : Number(HOURS_PER_UNIT[req.cycle]) * req.duration;
    return {
      id: instanceIdFor(order.id, i),
      userId: order.userId,
      createdBy: order.createdBy,
      category: order.category as InstanceCategory,
      name: count > 1 ? `${base}-${i + 1}` : base,
      status: 'Pending',
      noCard: false,
      lastError: null,
      regionId: req.placement.regionId,
      roomId: req.placement.roomId ?? null,
      hostId: host?.id ?? null,
      gpuTypeId: host?.gpuTypeId ?? null,
      gpuCount,
      gpuHeld: gpuCount,
      cardsHeldUntil: null,
      sizeId: size?.id ?? null,
      cpu: host ? host.cpuPerGpu * gpuCount : (size?.cpu ?? 0),
      memoryGb: host ? host.memoryGbPerGpu * gpuCount : (size?.memoryGb ?? 0),
      imageId: userImage ? userImage.baseImageId : (app?.imageId ?? req.imageId ?? null),
      userImageId: userImage?.id ?? null,
      applicationId: app?.id ?? null,
      // The free size is there even when the buyer asked for none: the disk is at least that big.
      dataDiskGb: Math.max(req.dataDiskGb, freeDisk),
      freeDataDiskGb: freeDisk,
      bandwidthMbps: size?.bandwidthMbps ?? 0,
      includedBandwidthMbps: size?.bandwidthMbps ?? 0,
      cycle: req.cycle,
      hourlyPrice: hourly,
      noCardHourlyPrice: postpaid ? s.noCardPricePerHour : 0n,
      bandwidthHourlyPrice: 0n,
      diskDailyPrice: postpaid ? extraGb * s.dataDiskPricePerGbDay : 0n,
      expireAt: postpaid ? null : new Date(now.getTime() + prepaidHours * 3600_000),
      autoRenew: false,
      autoRenewFailedFor: null,
      releaseAt: null,
      releaseNoticeAt: null,
      scheduledStopAt: null,
      orderId: order.type === 'Usage' ? null : order.id,
      usageOrderId: order.type === 'Usage' ? order.id : null,
      meterRate: 0n,
      meterSince: null,
      meterSegment: null,
      meterMs: 0n,
      meterCharged: 0n,
      diskBilledUntil: postpaid && extraGb > 0n ? now : null,
      arrears: 0n,
      sshHost: null,
      sshPort: null,
      sshUser: 'root',
      sshPasswordEnc: this.deps.passwords.seal(newMachinePassword()),
      jupyterToken: randomBytes(16).toString('hex'),
      appTokenEnc: null,
      ...pendingOpColumns({ opId: `create:${instanceIdFor(order.id, i)}`, kind: 'create', from: 'Pending', at: now }),
      startedAt: null,
      stoppedAt: null,
      releasedAt: null,
      createdAt: now,
      updatedAt: now,
    };
  }
}
