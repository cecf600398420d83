/**
 * Catalogue reads and price quotes. Reads come from the cached snapshot of store.ts; list answers
 * are memoised per query until the snapshot's generation changes.
 */
import {
  MAX_DURATION,
  BillingCycle,
  InstanceCategory,
  BillingCycleUnit,
  DiscountLabel,
  parseFilterBy,
  SIZE_CATEGORIES,
  payerIdOf,
  type Application,
  type CyclePrice,
  type GpuHost,
  type GpuQuoteRequest,
  type GpuType,
  type Image,
  type Quote,
  type Region,
  type Room,
  type Size,
  type SizeCategory,
  type SizeQuoteRequest,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import { AppError } from '../../http/errors.js';
import type { UserRow } from '../users/index.js';
import type { VoucherService } from '../vouchers/index.js';
import { bpToRate, discounted, priceBandwidthChange, priceDiskExpansion, priceQuote, type UnitPrice } from './pricing.js';
import { liveHosts, regionOfHost } from './inventory.js';
import { compareVersion } from './versions.js';
import { priceKey, type CatalogueStore, type GpuTypeRow, type HostRow, type ImageRow, type SizeRow, type Snapshot } from './store.js';

type Page<T> = { items: T[]; total: number; page: number; pageSize: number };
type Paging = { page: number; pageSize: number };
type Dir = 'a' | 'd';

const MEMO_LIMIT = 500;

/** "priceDay" → a; anything else → d (spec §7), unless the caller wrote the direction. */
export function parseSort(sortBy: string | undefined): { field: string; dir: Dir } | null {
  if (!sortBy) return null;
  const [field, dir] = sortBy.split(',') as [string, Dir | undefined];
  return { field, dir: dir ?? (field === 'priceDay' ? 'a' : 'd') };
}

function paginate<T>(rows: T[], { page, pageSize }: Paging): Page<T> {
  return { items: rows.slice((page - 1) * pageSize, page * pageSize), total: rows.length, page, pageSize };
}

function filters(raw: string | undefined, allowed: readonly string[]): Record<string, string> {
  let parsed: Record<string, string>;
  try {
    parsed = parseFilterBy(raw);
  } catch (e) {
    throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
  }
  for (const key of Object.keys(parsed)) {
    if (!allowed.includes(key)) throw new AppError('VALIDATION_FAILED', `filterBy：不支持的筛选项 ${key}，可用：${allowed.join('、')}`);
  }
  return parsed;
}

function positiveInt(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1) throw new AppError('VALIDATION_FAILED', `filterBy：${what}必须是正整数`);
  return Number(value);
}

/** My images (modules/images), as a quote sees them: an image the buyer may create an instance from. */
export interface UserImageLookup {
  usableFor(payerId: string, id: string): Promise<{ id: string; name: string; category: InstanceCategory; baseImageId: string | null }>;
}

export class CatalogueService {
  private memo = new Map<string, unknown>();
  private memoGeneration = -1;

  constructor(
    private store: CatalogueStore,
    private vouchers: VoucherService,
    private clock: Clock,
    private userImages?: UserImageLookup,
    /** Whether the machines can run an image (the compute driver's operating systems); absent: all can. */
    private runs: (image: { os: string }) => boolean = () => true,
    /** Size categories the machines cannot honour, with why (the compute driver's `unsold`): never offered. */
    private unsold: Readonly<Partial<Record<SizeCategory, string>>> = {},
  ) {}

  snapshot() {
    return this.store.get();
  }

  /** Answers `build` once per key and catalogue generation. */
  private async memoised<T>(key: string, build: (s: Snapshot) => T): Promise<T> {
    const snap = await this.store.get();
    if (snap.generation !== this.memoGeneration || this.memo.size > MEMO_LIMIT) {
      this.memo.clear();
      this.memoGeneration = snap.generation;
    }
    if (!this.memo.has(key)) this.memo.set(key, build(snap));
    return this.memo.get(key) as T;
  }

  // --- shaping rows for the API ------------------------------------------

  private cyclePrices(snap: Snapshot, kind: 'gpu' | 'size', id: string): CyclePrice[] {
    const prices = snap.prices.get(priceKey(kind, id));
    if (!prices) return [];
    return BillingCycle.values.filter((c) => prices.has(c)).map((c) => toCyclePrice(c, prices.get(c)!));
  }

  private roomView(snap: Snapshot, roomId: string): Room {
    const room = snap.rooms.find((r) => r.id === roomId)!;
    const region = snap.regions.find((r) => r.id === room.regionId);
    return { id: room.id, regionId: room.regionId, regionName: region?.name ?? '', name: room.name, zones: room.zones, isDefault: room.isDefault };
  }

  private hostView(snap: Snapshot, h: HostRow, cycle: BillingCycle): GpuHost {
    const room = this.roomView(snap, h.roomId);
    const type = snap.gpuTypes.find((g) => g.id === h.gpuTypeId)!;
    const prices = this.cyclePrices(snap, 'gpu', type.id);
    return {
      id: h.id,
      name: h.name,
      regionId: room.regionId,
      regionName: room.regionName,
      roomId: room.id,
      roomName: room.name,
      zone: h.zone,
      gpuTypeId: type.id,
      gpuName: type.name,
      gpuMemoryGb: type.memoryGb,
      gpuTotal: h.gpuTotal,
      gpuFree: h.gpuFree,
      cpuModel: h.cpuModel,
      cpuPerGpu: h.cpuPerGpu,
      memoryGbPerGpu: h.memoryGbPerGpu,
      systemDiskGb: h.systemDiskGb,
      dataDiskFreeGb: h.dataDiskFreeGb,
      dataDiskMaxGb: h.dataDiskMaxGb,
      maxCuda: h.maxCuda,
      prices,
      price: prices.find((p) => p.cycle === cycle) ?? prices[0]!,
    };
  }

  private gpuTypeView(snap: Snapshot, g: GpuTypeRow, hosts: HostRow[]): GpuType {
    const mine = hosts.filter((h) => h.gpuTypeId === g.id);
    return {
      id: g.id,
      name: g.name,
      memoryGb: g.memoryGb,
      architecture: g.architecture,
      cudaCapability: g.cudaCapability,
      fp32Tflops: g.fp32Tflops,
      description: g.description,
      prices: this.cyclePrices(snap, 'gpu', g.id),
      gpuFree: mine.reduce((n, h) => n + h.gpuFree, 0),
      gpuTotal: mine.reduce((n, h) => n + h.gpuTotal, 0),
    };
  }

  private sizeView(snap: Snapshot, s: SizeRow, cycle: BillingCycle): Size {
    const prices = this.cyclePrices(snap, 'size', s.id);
    return {
      id: s.id,
      category: s.category,
      name: s.name,
      cpu: s.cpu,
      memoryGb: s.memoryGb,
      systemDiskGb: s.systemDiskGb,
      bandwidthMbps: s.bandwidthMbps,
      gpuName: s.gpuName,
      regionIds: s.regionIds,
      description: s.description,
      prices,
      price: prices.find((p) => p.cycle === cycle) ?? prices[0]!,
    };
  }

  // --- reads ----------------------------------------------------------------

  regions(category?: InstanceCategory): Promise<{ items: Region[] }> {
    return this.memoised(`regions:${category ?? ''}`, (snap) => {
      const hosts = liveHosts(snap);
      const items = snap.regions.map((r) => {
        const rooms = snap.rooms.filter((m) => m.regionId === r.id).map((m) => this.roomView(snap, m.id));
        const regionHosts = hosts.filter((h) => regionOfHost(snap, h) === r.id);
        const categories: InstanceCategory[] = [];
        if (regionHosts.length) categories.push('Gpu', 'App');
        for (const c of SIZE_CATEGORIES) if (!this.unsold[c] && snap.sizes.some((s) => s.category === c && s.regionIds.includes(r.id))) categories.push(c);
        return { id: r.id, name: r.name, area: r.area, rooms, gpuFree: regionHosts.reduce((n, h) => n + h.gpuFree, 0), categories };
      });
      return { items: category ? items.filter((r) => r.categories.includes(category)) : items };
    });
  }

  rooms(regionId?: string): Promise<{ items: Room[] }> {
    return this.memoised(`rooms:${regionId ?? ''}`, (snap) => {
      if (regionId) this.mustFindRegion(snap, regionId);
      return { items: snap.rooms.filter((r) => !regionId || r.regionId === regionId).map((r) => this.roomView(snap, r.id)) };
    });
  }

  defaultRooms(): Promise<{ items: Room[] }> {
    return this.memoised('defaultRooms', (snap) => ({
      // One per region: the one marked default, else the region's first.
      items: snap.regions.flatMap((region) => {
        const rooms = snap.rooms.filter((r) => r.regionId === region.id);
        const pick = rooms.find((r) => r.isDefault) ?? rooms[0];
        return pick ? [this.roomView(snap, pick.id)] : [];
      }),
    }));
  }

  /** A GPU type's name and its hourly rate after discount (post-paid Usage, else Hour), in 0.0001 yuan; null when not sold. */
  async gpuHourlyRate(gpuTypeId: string): Promise<{ name: string; ratePerHour: bigint } | null> {
    const snap = await this.store.get();
    const type = snap.gpuTypes.find((g) => g.id === gpuTypeId);
    const prices = snap.prices.get(priceKey('gpu', gpuTypeId));
    const price = prices?.get('Usage') ?? prices?.get('Hour');
    return type && price ? { name: type.name, ratePerHour: discounted(price) } : null;
  }

  gpuTypes(): Promise<{ items: GpuType[] }> {
    return this.memoised('gpuTypes', (snap) => {
      const hosts = liveHosts(snap);
      return { items: snap.gpuTypes.map((g) => this.gpuTypeView(snap, g, hosts)) };
    });
  }

  gpuList(q: { filterBy?: string; sortBy?: string; cycle?: BillingCycle } & Paging): Promise<Page<GpuHost>> {
    const key = `gpuList:${q.filterBy ?? ''}:${q.sortBy ?? ''}:${q.cycle ?? ''}:${q.page}:${q.pageSize}`;
    return this.memoised(key, (snap) => {
      const f = filters(q.filterBy, ['region', 'room', 'gpuType', 'gpuCount', 'zone']);
      if (f.region) this.mustFindRegion(snap, f.region);
      if (f.room) this.mustFindRoom(snap, f.room);
      if (f.gpuType) this.mustFindGpuType(snap, f.gpuType);
      const gpuCount = positiveInt(f.gpuCount, '卡数');
      const cycle = q.cycle ?? 'Hour';
      let hosts = liveHosts(snap).filter(
        (h) =>
          (!f.region || regionOfHost(snap, h) === f.region) &&
          (!f.room || h.roomId === f.room) &&
          (!f.zone || h.zone === f.zone) &&
          (!f.gpuType || h.gpuTypeId === f.gpuType) &&
          (!gpuCount || h.gpuFree >= gpuCount),
      );
      const sort = parseSort(q.sortBy);
      const sortValue = this.hostSortValue(snap, sort?.field ?? 'gpuFree');
      const dir = sort?.dir === 'a' ? 1 : -1;
      // Hosts with free cards first (a full host cannot be rented), then the asked order, then the file's order.
      hosts = [...hosts].sort((a, b) => Number(b.gpuFree > 0) - Number(a.gpuFree > 0) || dir * (sortValue(a) - sortValue(b)) || a.sort - b.sort);
      const page = paginate(hosts, q);
      return { ...page, items: page.items.map((h) => this.hostView(snap, h, cycle)) };
    });
  }

  private hostSortValue(snap: Snapshot, field: string): (h: HostRow) => number {
    const cyclePrice = (cycle: BillingCycle) => (h: HostRow) => Number(discounted(this.unitPrice(snap, 'gpu', h.gpuTypeId, cycle)));
    switch (field) {
      case 'priceDay':
        return cyclePrice('Day');
      case 'priceHour':
        return cyclePrice('Hour');
      case 'gpuFree':
        return (h) => h.gpuFree;
      case 'gpuMemory':
        return (h) => snap.gpuTypes.find((g) => g.id === h.gpuTypeId)!.memoryGb;
      default:
        throw new AppError('VALIDATION_FAILED', `sortBy：不支持按 ${field} 排序，可用：priceDay、priceHour、gpuFree、gpuMemory`);
    }
  }

  sizes(q: { filterBy?: string; sortBy?: string; cycle?: BillingCycle } & Paging): Promise<Page<Size>> {
    const key = `sizes:${q.filterBy ?? ''}:${q.sortBy ?? ''}:${q.cycle ?? ''}:${q.page}:${q.pageSize}`;
    return this.memoised(key, (snap) => {
      const f = filters(q.filterBy, ['category', 'region', 'cpu', 'memory']);
      if (f.category && !(SIZE_CATEGORIES as readonly string[]).includes(f.category)) {
        throw new AppError('VALIDATION_FAILED', `filterBy：规格类别必须是 ${SIZE_CATEGORIES.join('、')}`);
      }
      if (f.region) this.mustFindRegion(snap, f.region);
      const cpu = positiveInt(f.cpu, 'CPU 核数');
      const memory = positiveInt(f.memory, '内存');
      const rows = snap.sizes.filter(
        (s) =>
          !this.unsold[s.category] &&
          (!f.category || s.category === f.category) &&
          (!f.region || s.regionIds.includes(f.region)) &&
          (!cpu || s.cpu === cpu) &&
          (!memory || s.memoryGb === memory),
      );
      const sort = parseSort(q.sortBy);
      if (sort) {
        const value = this.sizeSortValue(snap, sort.field);
        rows.sort((a, b) => (sort.dir === 'a' ? 1 : -1) * (value(a) - value(b)) || a.sort - b.sort);
      }
      const page = paginate(rows, q);
      return { ...page, items: page.items.map((s) => this.sizeView(snap, s, q.cycle ?? 'Hour')) };
    });
  }

  private sizeSortValue(snap: Snapshot, field: string): (s: SizeRow) => number {
    switch (field) {
      case 'priceDay':
        return (s) => Number(discounted(this.unitPrice(snap, 'size', s.id, 'Day')));
      case 'priceHour':
        return (s) => Number(discounted(this.unitPrice(snap, 'size', s.id, 'Hour')));
      case 'cpu':
        return (s) => s.cpu;
      case 'memory':
        return (s) => s.memoryGb;
      default:
        throw new AppError('VALIDATION_FAILED', `sortBy：不支持按 ${field} 排序，可用：priceDay、priceHour、cpu、memory`);
    }
  }

  images(q: { filterBy?: string } & Paging): Promise<Page<Image>> {
    return this.memoised(`images:${q.filterBy ?? ''}:${q.page}:${q.pageSize}`, (snap) => {
      const f = filters(q.filterBy, ['category', 'kind', 'os', 'framework']);
      const rows = snap.images.filter(
        (i) =>
          this.runs(i) &&
          (!f.category || i.forCategories.includes(f.category)) &&
          (!f.kind || i.kind === f.kind) &&
          (!f.os || i.os.toLowerCase().includes(f.os.toLowerCase())) &&
          (!f.framework || i.framework.toLowerCase() === f.framework.toLowerCase()),
      );
      return paginate(rows.map(imageView), q);
    });
  }

  /** Images that run on this GPU type: CUDA no older than the card needs, no newer than some host of it has. */
  gpuImages(q: { gpuTypeId?: string; framework?: string }): Promise<{ items: Image[] }> {
    return this.memoised(`gpuImages:${q.gpuTypeId ?? ''}:${q.framework ?? ''}`, (snap) => {
      const type = q.gpuTypeId ? this.mustFindGpuType(snap, q.gpuTypeId) : undefined;
      const maxCuda = type ? this.maxCudaOf(snap, type.id) : undefined;
      const items = snap.images
        .filter((i) => i.forGpu && this.runs(i) && (!q.framework || i.framework.toLowerCase() === q.framework.toLowerCase()))
        .filter((i) => !type || imageFits(i, type, maxCuda) === null)
        .map(imageView);
      return { items };
    });
  }

  private maxCudaOf(snap: Snapshot, gpuTypeId: string): string | undefined {
    return liveHosts(snap)
      .filter((h) => h.gpuTypeId === gpuTypeId)
      .map((h) => h.maxCuda)
      .sort(compareVersion)
      .at(-1);
  }

  applications(q: { keyword?: string; category?: string } & Paging): Promise<Page<Application> & { categories: string[] }> {
    return this.memoised(`apps:${q.keyword ?? ''}:${q.category ?? ''}:${q.page}:${q.pageSize}`, (snap) => {
      const keyword = q.keyword?.toLowerCase();
      const rows = snap.applications.filter(
        (a) =>
          (!q.category || a.category === q.category) &&
          (!keyword || [a.name, a.description, a.category, ...a.tags].some((t) => t.toLowerCase().includes(keyword))),
      );
      const categories = [...new Set(snap.applications.map((a) => a.category))];
      return {
        ...paginate(
          rows.map(({ sort: _s, active: _a, ...a }) => a),
          q,
        ),
        categories,
      };
    });
  }

  recommendRegion(q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }) {
    return this.memoised(`recommend:${q.category}:${q.gpuTypeId ?? ''}:${q.sizeId ?? ''}`, (snap) => {
      if (q.category === 'Gpu' || q.category === 'App') {
        if (q.gpuTypeId) this.mustFindGpuType(snap, q.gpuTypeId);
        const free = new Map<string, number>();
        for (const h of liveHosts(snap)) {
          if (q.gpuTypeId && h.gpuTypeId !== q.gpuTypeId) continue;
          const region = regionOfHost(snap, h);
          free.set(region, (free.get(region) ?? 0) + h.gpuFree);
        }
        const best = [...free.entries()].sort((a, b) => b[1] - a[1])[0];
        if (!best || best[1] === 0) throw new AppError('NO_CAPACITY', '各地区暂无空闲 GPU');
        const region = this.mustFindRegion(snap, best[0]);
        return { regionId: region.id, regionName: region.name, reason: `当前空闲 GPU 最多（${best[1]} 卡）` };
      }
      const size = q.sizeId ? this.mustFindSize(snap, q.sizeId) : undefined;
      const candidates = snap.regions.filter((r) =>
        snap.sizes.some((s) => s.category === q.category && s.regionIds.includes(r.id) && (!size || s.id === size.id)),
      );
      const region = candidates[0];
      if (!region) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', '暂无地区提供该类产品');
      return { regionId: region.id, regionName: region.name, reason: size ? `${size.name}在售` : '在售规格最全' };
    });
  }

  availableZones(q: { gpuTypeId: string; gpuCount: number; regionId?: string }) {
    return this.memoised(`zones:${q.gpuTypeId}:${q.gpuCount}:${q.regionId ?? ''}`, (snap) => {
      this.mustFindGpuType(snap, q.gpuTypeId);
      if (q.regionId) this.mustFindRegion(snap, q.regionId);
      const fitting = liveHosts(snap).filter((h) => h.gpuTypeId === q.gpuTypeId && h.gpuFree >= q.gpuCount);
      const items = snap.rooms
        .filter((r) => !q.regionId || r.regionId === q.regionId)
        .map((r) => ({ room: this.roomView(snap, r.id), hosts: fitting.filter((h) => h.roomId === r.id) }))
        .filter((z) => z.hosts.length > 0)
        .map(({ room, hosts }) => ({
          roomId: room.id,
          roomName: room.name,
          regionId: room.regionId,
          regionName: room.regionName,
          zones: [...new Set(hosts.map((h) => h.zone))],
          hosts: hosts.length,
          gpuFree: hosts.reduce((n, h) => n + h.gpuFree, 0),
        }));
      return { items };
    });
  }

  availableGpuTypes(q: { regionId?: string; roomId?: string; gpuCount: number }) {
    return this.memoised(`types:${q.regionId ?? ''}:${q.roomId ?? ''}:${q.gpuCount}`, (snap) => {
      if (q.regionId) this.mustFindRegion(snap, q.regionId);
      if (q.roomId) this.mustFindRoom(snap, q.roomId);
      const hosts = liveHosts(snap).filter((h) => (!q.roomId || h.roomId === q.roomId) && (!q.regionId || regionOfHost(snap, h) === q.regionId));
      const items = snap.gpuTypes
        .filter((g) => hosts.some((h) => h.gpuTypeId === g.id))
        .map((g) => ({
          ...this.gpuTypeView(snap, g, hosts),
          maxGpuPerHost: Math.max(0, ...hosts.filter((h) => h.gpuTypeId === g.id).map((h) => h.gpuFree)),
        }))
        // Types that can take the asked card count first; the others stay listed, shown as full.
        .sort((a, b) => Number(b.maxGpuPerHost >= q.gpuCount) - Number(a.maxGpuPerHost >= q.gpuCount));
      return { items };
    });
  }

  // --- quotes ----------------------------------------------------------------

  async quoteGpu(req: GpuQuoteRequest, user: UserRow | null): Promise<Quote> {
    const snap = await this.store.get();
    const type = this.mustFindGpuType(snap, req.gpuTypeId);
    if (req.regionId) this.mustFindRegion(snap, req.regionId);
    const room = req.roomId ? this.mustFindRoom(snap, req.roomId) : undefined;
    if (room && req.regionId && room.regionId !== req.regionId) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `机房 ${room.name} 不在所选地区`);
    if (req.imageId && req.applicationId) throw new AppError('VALIDATION_FAILED', 'imageId：镜像与镜像应用只能选一个');

    const app = req.applicationId ? snap.applications.find((a) => a.id === req.applicationId) : undefined;
    if (req.applicationId && !app) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `镜像应用 ${req.applicationId} 不存在`);
    if (app && type.memoryGb < app.minGpuMemoryGb) {
      throw new AppError('IMAGE_INCOMPATIBLE', `${app.name} 需要至少 ${app.minGpuMemoryGb} GB 显存，${type.name} 只有 ${type.memoryGb} GB`);
    }
    const category: InstanceCategory = app ? 'App' : 'Gpu';
    const own = req.userImageId ? await this.userImage(user, req.userImageId, ['Gpu', 'App'], 'GPU 实例') : undefined;
    // A saved image runs where its base image runs; a base image since taken off sale is not checked.
    const imageId = app?.imageId ?? (own ? (snap.images.some((i) => i.id === own.baseImageId) ? own.baseImageId! : undefined) : req.imageId);
    const image = imageId ? this.mustFindImage(snap, imageId) : undefined;
    if (image) {
      if (!image.forGpu) throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 不能用于 GPU 实例`);
      const why = imageFits(image, type, undefined);
      if (why) throw new AppError('IMAGE_INCOMPATIBLE', why);
    }

    const host = this.placeGpu(snap, req, type, image);
    const unitPrice = this.unitPrice(snap, 'gpu', type.id, req.cycle);
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
      studentBp: user?.isStudent ? snap.settings.studentBp : undefined,
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

  /**
   * The host a GPU order would land on: the asked one, or the tightest fit in the asked room/region
   * (fewest free cards that still fit), which keeps whole hosts free for 8-card orders.
   */
  private placeGpu(snap: Snapshot, req: GpuQuoteRequest, type: GpuTypeRow, image: ImageRow | undefined): HostRow {
    const hosts = liveHosts(snap);
    if (req.hostId) {
      const host = hosts.find((h) => h.id === req.hostId);
      if (!host) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${req.hostId} 不存在或已下架`);
      if (host.gpuTypeId !== type.id) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${host.name} 不是 ${type.name}`);
      if ((req.roomId && host.roomId !== req.roomId) || (req.regionId && regionOfHost(snap, host) !== req.regionId)) {
        throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${host.name} 不在所选地区或机房`);
      }
      if (image?.cuda && compareVersion(image.cuda, host.maxCuda) > 0) {
        throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 需要 CUDA ${image.cuda}，该主机驱动最高支持 ${host.maxCuda}`);
      }
      if (req.dataDiskGb > host.dataDiskMaxGb) throw new AppError('VALIDATION_FAILED', `dataDiskGb：该主机数据盘最大 ${host.dataDiskMaxGb} GB`);
      if (host.gpuFree < req.gpuCount) throw new AppError('NO_CAPACITY', `主机 ${host.name} 当前空闲 ${host.gpuFree} 卡，不足 ${req.gpuCount} 卡`);
      return host;
    }
    const inScope = hosts.filter(
      (h) =>
        h.gpuTypeId === type.id &&
        (!req.roomId || h.roomId === req.roomId) &&
        (!req.regionId || regionOfHost(snap, h) === req.regionId) &&
        (!image?.cuda || compareVersion(image.cuda, h.maxCuda) <= 0),
    );
    const fits = inScope.filter((h) => h.gpuFree >= req.gpuCount && h.dataDiskMaxGb >= req.dataDiskGb);
    if (fits.length === 0) {
      const most = Math.max(0, ...inScope.map((h) => h.gpuFree));
      throw new AppError('NO_CAPACITY', `${type.name} 在所选范围内单台主机最多空闲 ${most} 卡${req.dataDiskGb ? '，或数据盘超出主机上限' : ''}`);
    }
    return fits.sort((a, b) => a.gpuFree - b.gpuFree || a.sort - b.sort)[0]!;
  }

  async quoteSize(req: SizeQuoteRequest, user: UserRow | null): Promise<Quote> {
    const snap = await this.store.get();
    const size = this.mustFindSize(snap, req.sizeId);
    const unsold = this.unsold[size.category];
    if (unsold) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `${size.name}：${unsold}`);
    const region = this.mustFindRegion(snap, req.regionId);
    if (!size.regionIds.includes(region.id)) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `${size.name} 在${region.name}暂未开售`);
    if (req.imageId) {
      const image = this.mustFindImage(snap, req.imageId);
      if (!image.forCategories.includes(size.category)) throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 不能用于${size.name}`);
    }
    if (req.userImageId) await this.userImage(user, req.userImageId, [size.category], size.name);
    const unitPrice = this.unitPrice(snap, 'size', size.id, req.cycle);
    const voucher = await this.voucherFor(user, req.voucherId, size.category);
    const result = priceQuote({
      category: size.category,
      productName: req.count > 1 ? `${size.name} × ${req.count} 台` : size.name,
      cycle: req.cycle,
      duration: req.duration,
      quantity: req.count,
      unitPrice,
      dataDiskGb: req.dataDiskGb,
      freeDataDiskGb: 0,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      studentBp: user?.isStudent ? snap.settings.studentBp : undefined,
      voucher,
    });
    return toQuote(result, { category: size.category, cycle: req.cycle, duration: req.duration, voucherId: voucher?.id, placement: { regionId: region.id } });
  }

  /**
   * What more prepaid time costs for an existing instance: the same price function as a purchase,
   * without placement (the instance keeps its host and cards).
   */
  async quoteRenewal(
    r: {
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
    },
    user: UserRow,
  ): Promise<Quote> {
    const snap = await this.store.get();
    const max = MAX_DURATION[r.cycle];
    if (r.duration > max) throw new AppError('VALIDATION_FAILED', `duration：该计费方式最长 ${max}`);
    const unitPrice = r.gpuTypeId ? this.unitPrice(snap, 'gpu', r.gpuTypeId, r.cycle) : this.unitPrice(snap, 'size', r.sizeId!, r.cycle);
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
      studentBp: user.isStudent ? snap.settings.studentBp : undefined,
      voucher,
    });
    return toQuote(result, { category: r.category, cycle: r.cycle, duration: r.duration, voucherId: voucher?.id, placement: { regionId: r.regionId } });
  }

  /** What upgrading a prepaid instance's bandwidth costs for the `hours` left (a downgrade: 0). */
  async quoteBandwidthChange(
    r: { category: InstanceCategory; cycle: BillingCycle; regionId: string; extraBefore: number; extraAfter: number; hours: number; note: string },
    user: UserRow,
  ): Promise<Quote> {
    const snap = await this.store.get();
    const result = priceBandwidthChange({
      extraBefore: r.extraBefore,
      extraAfter: r.extraAfter,
      hours: r.hours,
      note: r.note,
      pricePerMbpsHour: snap.settings.bandwidthPricePerMbpsHour,
      studentBp: user.isStudent ? snap.settings.studentBp : undefined,
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
    const snap = await this.store.get();
    const result = priceDiskExpansion({
      currentGb: r.currentGb,
      newGb: r.newGb,
      freeGb: r.freeGb,
      hours: r.hours,
      note: r.note,
      dataDiskPricePerGbDay: snap.settings.dataDiskPricePerGbDay,
      studentBp: user.isStudent ? snap.settings.studentBp : undefined,
    });
    return toQuote(result, { category: r.category, cycle: r.cycle, duration: r.hours, placement: { regionId: r.regionId } });
  }

  /** An image of my images the buyer may use, for an instance of one of `categories`. */
  private async userImage(user: UserRow | null, id: string, categories: InstanceCategory[], what: string) {
    if (!user) throw new AppError('UNAUTHENTICATED', '使用我的镜像或分享的镜像请先登录');
    if (!this.userImages) throw new AppError('PRODUCT_NOT_ON_SALE', '暂不支持使用自定义镜像');
    const image = await this.userImages.usableFor(payerIdOf(user), id);
    if (!categories.includes(image.category))
      throw new AppError('IMAGE_INCOMPATIBLE', `镜像「${image.name}」保存自${InstanceCategory.label(image.category)}，不能用于${what}`);
    return image;
  }

  private async voucherFor(user: UserRow | null, voucherId: string | undefined, category: InstanceCategory) {
    if (!voucherId) return undefined;
    if (!user) throw new AppError('UNAUTHENTICATED', '使用代金券请先登录');
    const v = await this.vouchers.usableFor(payerIdOf(user), voucherId, category, this.clock.now());
    return { id: v.id, name: v.name, amount: v.amount, minSpend: v.minSpend };
  }

  private unitPrice(snap: Snapshot, kind: 'gpu' | 'size', id: string, cycle: BillingCycle): UnitPrice {
    const p = snap.prices.get(priceKey(kind, id))?.get(cycle);
    if (!p) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `该配置不支持${BillingCycle.label(cycle)}计费`);
    return p;
  }

  // --- lookups that fail with the catalogue's code ------------------------------

  private mustFindRegion(snap: Snapshot, id: string) {
    const r = snap.regions.find((x) => x.id === id);
    if (!r) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `地区 ${id} 不存在`);
    return r;
  }
  private mustFindRoom(snap: Snapshot, id: string) {
    const r = snap.rooms.find((x) => x.id === id);
    if (!r) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `机房 ${id} 不存在`);
    return r;
  }
  private mustFindGpuType(snap: Snapshot, id: string) {
    const g = snap.gpuTypes.find((x) => x.id === id);
    if (!g) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `GPU 型号 ${id} 不存在`);
    return g;
  }
  private mustFindSize(snap: Snapshot, id: string) {
    const s = snap.sizes.find((x) => x.id === id);
    if (!s) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `规格 ${id} 不存在`);
    return s;
  }
  private mustFindImage(snap: Snapshot, id: string) {
    const i = snap.images.find((x) => x.id === id);
    if (!i) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `镜像 ${id} 不存在`);
    if (!this.runs(i)) throw new AppError('IMAGE_INCOMPATIBLE', `${i.name}（${i.os}）在本平台的机器上无法运行，请选择其他镜像`);
    return i;
  }
}

/** Why an image cannot run on a GPU type (and, if given, a driver's CUDA ceiling); null if it can. */
function imageFits(image: ImageRow, type: GpuTypeRow, maxCuda: string | undefined): string | null {
  if (!image.forGpu) return `${image.name} 不是 GPU 镜像`;
  if (!image.cuda) return null;
  if (compareVersion(image.cuda, type.minCuda) < 0) return `${image.name} 使用 CUDA ${image.cuda}，${type.name} 需要 CUDA ${type.minCuda} 及以上`;
  if (maxCuda && compareVersion(image.cuda, maxCuda) > 0) return `${image.name} 需要 CUDA ${image.cuda}，${type.name} 主机驱动最高支持 ${maxCuda}`;
  return null;
}

function imageView({ sort: _s, active: _a, forCategories, ...i }: ImageRow): Image {
  return { ...i, forCategories: forCategories as InstanceCategory[] };
}

export function toCyclePrice(cycle: BillingCycle, p: UnitPrice): CyclePrice {
  const rate = bpToRate(p.discountBp);
  return {
    cycle,
    listPrice: String(p.listPrice),
    price: String(discounted(p)),
    discountRate: rate,
    ...(DiscountLabel[rate] ? { discountLabel: DiscountLabel[rate] } : {}),
  };
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
