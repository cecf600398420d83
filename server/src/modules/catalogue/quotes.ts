/**
 * Price quotes: what a purchase, a renewal, a bandwidth change or a disk expansion costs a buyer,
 * with the buyer's voucher and student price. Purchases of GPU instances are also placed here (the
 * quote names the host, placement.ts). Orders, renewals and conversions charge what these return.
 */
import {
  MAX_DURATION,
  BillingCycle,
  BillingCycleUnit,
  InstanceCategory,
  isCpuApplication,
  payerIdOf,
  type GpuQuoteRequest,
  type Quote,
  type SizeQuoteRequest,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import { AppError } from '../../http/errors.js';
import type { UserRow } from '../users/index.js';
import { refuseHostInMaintenance, withReportedHosts } from './fleet-market.js';
import { regionOfHost } from './inventory.js';
import {
  applicationRefusal,
  capacityRefusal,
  freeCardsOf,
  gpuTypeRefusal,
  hostMarket,
  imageRefusal,
  sellsSizesIn,
  sizeRefusal,
  type HostMarket,
} from './host-market.js';
import { APP_SIZE_CATEGORY, imageFits, mustFindGpuType, mustFindRegion, mustFindRoom, mustFindSize, unitPriceOf, type MachineLimits } from './lookups.js';
import { placeGpu } from './placement.js';
import { priceBandwidthChange, priceDiskExpansion, priceQuote } from './pricing.js';
import type { ApplicationRow, CatalogueStore, GpuTypeRow, HostRow, ImageRow, SizeRow, Snapshot } from './store.js';

/** My images (modules/images), as a quote sees them: an image the buyer may create an instance from. */
export interface UserImageLookup {
  usableFor(payerId: string, id: string): Promise<{ id: string; name: string; category: InstanceCategory; baseImageId: string | null }>;
}

/** The vouchers module, as a quote sees it: a voucher the buyer may use on this category now (refused otherwise). */
export interface VoucherLookup {
  usableFor(payerId: string, voucherId: string, category: InstanceCategory, at: Date): Promise<{ id: string; name: string; amount: bigint; minSpend: bigint }>;
}

export interface QuotesDeps extends MachineLimits {
  store: CatalogueStore;
  vouchers: VoucherLookup;
  clock: Clock;
  userImages?: UserImageLookup;
}

/** An existing instance's renewal, as quoteRenewal prices it. */
export interface RenewalQuoteRequest {
  category: InstanceCategory;
  gpuTypeId: string | null;
  sizeId: string | null;
  quantity: number;
  productName: string;
  cycle: BillingCycle;
  duration: number;
  dataDiskGb: number;
  freeDataDiskGb: number;
  /** Mbps bought beyond what the size includes: renewed with the instance. */
  extraBandwidthMbps?: number;
  regionId: string;
  voucherId?: string;
}

type Voucher = Awaited<ReturnType<VoucherLookup['usableFor']>>;

export class Quotes {
  constructor(private deps: QuotesDeps) {}

  async quoteGpu(req: GpuQuoteRequest, user: UserRow | null): Promise<Quote> {
    const catalogue = await this.deps.store.get();
    const snap = await withReportedHosts(catalogue, this.deps.offerOf);
    if (req.hostId) refuseHostInMaintenance(catalogue, snap, req.hostId);
    const market = await this.market(snap);
    const type = mustFindGpuType(snap, req.gpuTypeId);
    if (req.imageId && req.applicationId) throw new AppError('VALIDATION_FAILED', 'imageId：镜像与镜像应用只能选一个');
    const app = req.applicationId ? snap.applications.find((a) => a.id === req.applicationId) : undefined;
    if (req.applicationId && !app) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `镜像应用 ${req.applicationId} 不存在`);
    // Said before what the host lacks: the buyer's way forward is a CPU size, not another card.
    if (app && isCpuApplication(app)) throw new AppError('IMAGE_INCOMPATIBLE', `${app.name} 不使用 GPU，请在镜像应用页选择 CPU 规格部署`);
    if (market) refuseMissing(gpuTypeRefusal(market, type));
    if (req.regionId) mustFindRegion(snap, req.regionId);
    const room = req.roomId ? mustFindRoom(snap, req.roomId) : undefined;
    if (room && req.regionId && room.regionId !== req.regionId) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `机房 ${room.name} 不在所选地区`);

    if (app && type.memoryGb < app.minGpuMemoryGb) {
      throw new AppError('IMAGE_INCOMPATIBLE', `${app.name} 需要至少 ${app.minGpuMemoryGb} GB 显存，${type.name} 只有 ${type.memoryGb} GB`);
    }
    if (app && market) {
      const appImage = snap.images.find((i) => i.id === app.imageId);
      refuseMissing(applicationRefusal(market, appImage), app.name);
    }
    const category: InstanceCategory = app ? 'App' : 'Gpu';
    const own = req.userImageId ? await this.userImage(user, req.userImageId, ['Gpu', 'App'], 'GPU 实例') : undefined;
    // A saved image runs where its base image runs; a base image since taken off sale is not checked.
    const imageId = app?.imageId ?? (own ? (snap.images.some((i) => i.id === own.baseImageId) ? own.baseImageId! : undefined) : req.imageId);
    const image = imageId ? this.mustFindImage(snap, imageId, market) : undefined;
    if (image) {
      if (!image.forGpu) throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 不能用于 GPU 实例`);
      const why = imageFits(image, type, undefined);
      if (why) throw new AppError('IMAGE_INCOMPATIBLE', why);
    }

    const host = placeGpu(snap, req, type, image);
    if (market) refuseBeyondHost(market, type, host, req.gpuCount);
    const unitPrice = unitPriceOf(snap, 'gpu', type.id, req.cycle);
    const voucher = await this.voucherFor(user, req.voucherId, category);
    const result = priceQuote({
      category,
      productName: `${type.name} × ${req.gpuCount}`,
      cycle: req.cycle,
      duration: req.duration,
      quantity: req.gpuCount,
      unitPrice,
      dataDiskGb: req.dataDiskGb,
      freeDataDiskGb: host.dataDiskFreeGb * req.gpuCount,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      studentBp: studentBpOf(snap, user),
      voucher,
    });
    return toQuote(result, {
      category,
      cycle: req.cycle,
      duration: req.duration,
      voucherId: voucher?.id,
      placement: { regionId: regionOfHost(snap, host), roomId: host.roomId, hostId: host.id },
    });
  }

  async quoteSize(req: SizeQuoteRequest, user: UserRow | null): Promise<Quote> {
    const snap = await this.deps.store.get();
    const size = mustFindSize(snap, req.sizeId);
    const unsold = this.deps.unsold?.[size.category];
    if (unsold) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `${size.name}：${unsold}`);
    const market = await this.market(snap);
    if (market) {
      refuseMissing(sizeRefusal(market, size), size.name);
      const full = capacityRefusal(market, { cpu: size.cpu * req.count, memoryGb: size.memoryGb * req.count });
      if (full) throw new AppError('HOST_FULL', full);
    }
    const region = mustFindRegion(snap, req.regionId);
    if (!size.regionIds.includes(region.id)) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `${size.name} 在${region.name}暂未开售`);
    if (market && !sellsSizesIn(market, snap.regions, region.id)) refuseMissing(`本主机位于${snap.regions[0]?.name ?? '其他地区'}，请在该地区购买`, size.name);
    const app = req.applicationId ? this.cpuApplication(snap, req.applicationId, size, market) : undefined;
    // An application on a size is an App order (the buyer's right to deploy applications, App vouchers), priced as the size.
    const category: InstanceCategory = app ? 'App' : size.category;
    if (req.imageId) {
      const image = this.mustFindImage(snap, req.imageId, market);
      if (!image.forCategories.includes(size.category)) throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 不能用于${size.name}`);
    }
    if (req.userImageId) await this.userImage(user, req.userImageId, [size.category], size.name);
    const unitPrice = unitPriceOf(snap, 'size', size.id, req.cycle);
    const voucher = await this.voucherFor(user, req.voucherId, category);
    const result = priceQuote({
      category,
      productName: req.count > 1 ? `${size.name} × ${req.count} 台` : size.name,
      cycle: req.cycle,
      duration: req.duration,
      quantity: req.count,
      unitPrice,
      dataDiskGb: req.dataDiskGb,
      freeDataDiskGb: 0,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      studentBp: studentBpOf(snap, user),
      voucher,
    });
    return toQuote(result, { category, cycle: req.cycle, duration: req.duration, voucherId: voucher?.id, placement: { regionId: region.id } });
  }

  /**
   * An application bought on a CPU size: one that needs no card, on a CPU (Generic) size, its image
   * runnable here and (on a real host) present in the host's layout.
   */
  private cpuApplication(snap: Snapshot, id: string, size: SizeRow, market: HostMarket | null): ApplicationRow {
    const app = snap.applications.find((a) => a.id === id);
    if (!app) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `镜像应用 ${id} 不存在`);
    if (!isCpuApplication(app)) {
      throw new AppError('IMAGE_INCOMPATIBLE', `${app.name} 需要显存不少于 ${app.minGpuMemoryGb} GB 的 GPU，请在 GPU 配置中选择显卡部署`);
    }
    if (size.category !== APP_SIZE_CATEGORY) {
      throw new AppError(
        'IMAGE_INCOMPATIBLE',
        `${app.name} 只能部署在 CPU 实例规格上（所选「${size.name}」是${InstanceCategory.label(size.category)}），请选择 CPU 实例规格`,
      );
    }
    if (market)
      refuseMissing(
        applicationRefusal(
          market,
          snap.images.find((i) => i.id === app.imageId),
        ),
        app.name,
      );
    this.mustFindImage(snap, app.imageId, market);
    return app;
  }

  /**
   * What more prepaid time costs for an existing instance: the same price function as a purchase,
   * without placement (the instance keeps its host and cards).
   */
  async quoteRenewal(r: RenewalQuoteRequest, user: UserRow): Promise<Quote> {
    const snap = await this.deps.store.get();
    const max = MAX_DURATION[r.cycle];
    if (r.duration > max) throw new AppError('VALIDATION_FAILED', `duration：该计费方式最长 ${max}`);
    const unitPrice = r.gpuTypeId ? unitPriceOf(snap, 'gpu', r.gpuTypeId, r.cycle) : unitPriceOf(snap, 'size', r.sizeId!, r.cycle);
    const voucher = await this.voucherFor(user, r.voucherId, r.category);
    const result = priceQuote({
      category: r.category,
      productName: r.productName,
      cycle: r.cycle,
      duration: r.duration,
      quantity: r.quantity,
      unitPrice,
      dataDiskGb: r.dataDiskGb,
      freeDataDiskGb: r.freeDataDiskGb,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      bandwidth: r.extraBandwidthMbps ? { extraMbps: r.extraBandwidthMbps, pricePerMbpsHour: snap.settings.bandwidthPricePerMbpsHour } : undefined,
      studentBp: studentBpOf(snap, user),
      voucher,
    });
    return toQuote(result, { category: r.category, cycle: r.cycle, duration: r.duration, voucherId: voucher?.id, placement: { regionId: r.regionId } });
  }

  /** What upgrading a prepaid instance's bandwidth costs for the `hours` left (a downgrade: 0). */
  async quoteBandwidthChange(
    r: { category: InstanceCategory; cycle: BillingCycle; regionId: string; extraBefore: number; extraAfter: number; hours: number; note: string },
    user: UserRow,
  ): Promise<Quote> {
    const snap = await this.deps.store.get();
    const result = priceBandwidthChange({
      extraBefore: r.extraBefore,
      extraAfter: r.extraAfter,
      hours: r.hours,
      note: r.note,
      pricePerMbpsHour: snap.settings.bandwidthPricePerMbpsHour,
      studentBp: studentBpOf(snap, user),
    });
    return toQuote(result, { category: r.category, cycle: r.cycle, duration: r.hours, placement: { regionId: r.regionId } });
  }

  /**
   * What an existing instance's data disk expansion costs: the added GB beyond the free size at the
   * data-disk price, over `hours` (prepaid: the whole hours left until expiry; post-paid: 0, as its
   * disk is charged by the day).
   */
  async quoteDiskExpansion(
    r: { category: InstanceCategory; cycle: BillingCycle; regionId: string; currentGb: number; newGb: number; freeGb: number; hours: number; note: string },
    user: UserRow,
  ): Promise<Quote> {
    const snap = await this.deps.store.get();
    const result = priceDiskExpansion({
      currentGb: r.currentGb,
      newGb: r.newGb,
      freeGb: r.freeGb,
      hours: r.hours,
      note: r.note,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      studentBp: studentBpOf(snap, user),
    });
    return toQuote(result, { category: r.category, cycle: r.cycle, duration: r.hours, placement: { regionId: r.regionId } });
  }

  /** An image of my images the buyer may use, for an instance of one of `categories`. */
  private async userImage(user: UserRow | null, id: string, categories: InstanceCategory[], what: string) {
    if (!user) throw new AppError('UNAUTHENTICATED', '使用我的镜像或分享的镜像请先登录');
    if (!this.deps.userImages) throw new AppError('PRODUCT_NOT_ON_SALE', '暂不支持使用自定义镜像');
    const image = await this.deps.userImages.usableFor(payerIdOf(user), id);
    if (!categories.includes(image.category))
      throw new AppError('IMAGE_INCOMPATIBLE', `镜像「${image.name}」保存自${InstanceCategory.label(image.category)}，不能用于${what}`);
    return image;
  }

  private async voucherFor(user: UserRow | null, voucherId: string | undefined, category: InstanceCategory): Promise<Voucher | undefined> {
    if (!voucherId) return undefined;
    if (!user) throw new AppError('UNAUTHENTICATED', '使用代金券请先登录');
    const v = await this.deps.vouchers.usableFor(payerIdOf(user), voucherId, category, this.deps.clock.now());
    return { id: v.id, name: v.name, amount: v.amount, minSpend: v.minSpend };
  }

  /** A catalogue image by id, refused when the machines cannot run it or (on a real host) it is not there. */
  private mustFindImage(snap: Snapshot, id: string, market: HostMarket | null): ImageRow {
    const i = snap.images.find((x) => x.id === id);
    if (!i) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `镜像 ${id} 不存在`);
    if (this.deps.runs && !this.deps.runs(i)) throw new AppError('IMAGE_INCOMPATIBLE', `${i.name}（${i.os}）在本平台的机器上无法运行，请选择其他镜像`);
    if (market) refuseMissing(imageRefusal(market, i), i.name);
    return i;
  }

  /** The market on the driver's real host, read now (a quote's capacity must not be a moment old); null: the simulated fleet. */
  private async market(snap: Snapshot): Promise<HostMarket | null> {
    return this.deps.offer ? hostMarket(await this.deps.offer(), snap.settings) : null;
  }
}

/** Refuses with NOT_ON_THIS_HOST when the host lacks what is asked (`why`), naming `what` when given. */
function refuseMissing(why: string | null, what?: string): void {
  if (why) throw new AppError('NOT_ON_THIS_HOST', what ? `${what}：${why}` : why);
}

/** Refuses a GPU machine the host cannot hold: more cards of the type than are free, or cores and memory beyond what is left. */
function refuseBeyondHost(market: HostMarket, type: GpuTypeRow, host: HostRow, gpuCount: number): void {
  const free = freeCardsOf(market, type);
  if (gpuCount > free) throw new AppError('NO_CAPACITY', `本主机空闲的 ${type.name} 只有 ${free} 张，不足 ${gpuCount} 张`);
  const full = capacityRefusal(market, { cpu: host.cpuPerGpu * gpuCount, memoryGb: host.memoryGbPerGpu * gpuCount });
  if (full) throw new AppError('HOST_FULL', full);
}

/** The student discount applies to signed-in students only. */
function studentBpOf(snap: Snapshot, user: UserRow | null): number | undefined {
  return user?.isStudent ? snap.settings.studentBp : undefined;
}

function toQuote(
  r: ReturnType<typeof priceQuote>,
  meta: { category: InstanceCategory; cycle: BillingCycle; duration: number; voucherId?: string; placement: Quote['placement'] },
): Quote {
  return {
    category: meta.category,
    cycle: meta.cycle,
    duration: meta.duration,
    unit: BillingCycleUnit[meta.cycle],
    lines: r.lines,
    listTotal: String(r.listTotal),
    discountTotal: String(r.discountTotal),
    voucherDeduction: String(r.voucherDeduction),
    total: String(r.total),
    placement: meta.placement,
    discountRate: r.discountRate,
    ...(r.discountLabel ? { discountLabel: r.discountLabel } : {}),
    ...(meta.voucherId ? { voucherId: meta.voucherId } : {}),
  };
}
