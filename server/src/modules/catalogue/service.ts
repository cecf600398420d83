/**
 * The market's read model: what is sold, where and at what list price, for the catalogue's lists and
 * filters. Reads come from the cached snapshot of store.ts; list answers are memoised per query until
 * the snapshot's generation changes. What a buyer pays (quotes, placement) is quotes.ts.
 */
import {
  BillingCycle,
  InstanceCategory,
  DiscountLabel,
  isCpuApplication,
  parseFilterBy,
  SIZE_CATEGORIES,
  type Application,
  type CyclePrice,
  type GpuHost,
  type GpuType,
  type Image,
  type Region,
  type Room,
  type Size,
} from '@console/contract';
import { AppError } from '../../http/errors.js';
import { bpToRate, discounted, type UnitPrice } from './pricing.js';
import { withReportedHosts, reportedKey } from './fleet-market.js';
import { liveHosts, regionOfHost } from './inventory.js';
import {
  applicationRefusal,
  describeMarket,
  freeCardsOf,
  gpuTypeRefusal,
  hostCardsOf,
  hostMarket,
  HostOfferReader,
  hostSummary,
  hostSystemNaming,
  imageRefusal,
  sellsSizesIn,
  sizeRefusal,
  type HostMarket,
} from './host-market.js';
import { APP_SIZE_CATEGORY, imageFits, mustFindGpuType, mustFindRegion, mustFindRoom, mustFindSize, unitPriceOf, type MachineLimits } from './lookups.js';
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

export class CatalogueService {
  private memo = new Map<string, unknown>();
  private memoGeneration = -1;

  /** The host reading the memo was built from (JSON): a change of the host's cards, images or load rebuilds it. */
  private memoHost = '';

  private runs: (image: { os: string }) => boolean;
  private unsold: NonNullable<MachineLimits['unsold']>;
  private host: HostOfferReader;
  private offerOf: MachineLimits['offerOf'];

  constructor(
    private store: CatalogueStore,
    limits: MachineLimits = {},
  ) {
    this.runs = limits.runs ?? (() => true);
    this.unsold = limits.unsold ?? {};
    this.host = new HostOfferReader(limits.offer);
    this.offerOf = limits.offerOf;
  }

  snapshot() {
    return this.store.get();
  }

  /** The market on the driver's real host now (null: the simulated fleet sells the whole catalogue). */
  async market(): Promise<HostMarket | null> {
    const offer = await this.host.recent();
    return offer ? hostMarket(offer, (await this.store.get()).settings) : null;
  }

  /** What the site settings say of the host (SiteSettings.host); null on the simulated fleet. */
  async hostSummary() {
    const market = await this.market();
    return market ? hostSummary(market) : null;
  }

  /** The start-up log's line: the host's market (its cores, memory, cards and sellable images) or the demonstration catalogue. */
  async describe(): Promise<string> {
    const market = await this.market();
    const snap = await this.store.get();
    const sellable = market ? snap.images.filter((i) => this.runs(i) && !imageRefusal(market, i)).map((i) => i.name) : [];
    return describeMarket(market, sellable);
  }

  /** Answers `build` once per key, catalogue generation and host reading. */
  private async memoised<T>(key: string, build: (s: Snapshot, market: HostMarket | null) => T): Promise<T> {
    const snap = await withReportedHosts(await this.store.get(), this.offerOf);
    const offer = await this.host.recent();
    const market = offer ? hostMarket(offer, snap.settings) : null;
    const host = offer ? JSON.stringify(market) : this.offerOf ? reportedKey(snap) : '';
    if (snap.generation !== this.memoGeneration || host !== this.memoHost || this.memo.size > MEMO_LIMIT) {
      this.memo.clear();
      this.memoGeneration = snap.generation;
      this.memoHost = host;
    }
    if (!this.memo.has(key)) this.memo.set(key, build(snap, market));
    return this.memo.get(key) as T;
  }

  /**
   * The GPU hosts on sale: live ones, and on a real host only those of a type it has cards of, their
   * cards no more than the host's own (free: those no machine holds).
   */
  private saleHosts(snap: Snapshot, market: HostMarket | null): HostRow[] {
    const hosts = liveHosts(snap);
    if (!market) return hosts;
    return hosts.flatMap((h) => {
      const type = snap.gpuTypes.find((g) => g.id === h.gpuTypeId)!;
      const cards = hostCardsOf(market, type);
      if (!cards) return [];
      return [{ ...h, gpuTotal: Math.min(h.gpuTotal, cards), gpuFree: Math.min(h.gpuFree, freeCardsOf(market, type)) }];
    });
  }

  /** An image as the market shows it: on a real host, why it is not offered, and the host's system named for what it is. */
  private imageOnSale(market: HostMarket | null, i: ImageRow): Image {
    const view = imageView(i);
    if (!market) return view;
    const why = imageRefusal(market, i);
    if (why) return { ...view, unavailable: why };
    return { ...view, ...(hostSystemNaming(market, i) ?? {}) };
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

  private gpuTypeView(snap: Snapshot, g: GpuTypeRow, hosts: HostRow[], market: HostMarket | null): GpuType {
    const mine = hosts.filter((h) => h.gpuTypeId === g.id);
    const why = market && gpuTypeRefusal(market, g);
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
      ...(why ? { unavailable: why } : {}),
    };
  }

  private sizeView(snap: Snapshot, s: SizeRow, cycle: BillingCycle, market: HostMarket | null): Size {
    const prices = this.cyclePrices(snap, 'size', s.id);
    const why = market && sizeRefusal(market, s);
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
      ...(why ? { unavailable: why } : {}),
    };
  }

  // --- reads ----------------------------------------------------------------

  regions(category?: InstanceCategory): Promise<{ items: Region[] }> {
    return this.memoised(`regions:${category ?? ''}`, (snap, market) => {
      const hosts = this.saleHosts(snap, market);
      const cpuApps = this.sellsCpuApplication(snap, market);
      const items = snap.regions.map((r) => {
        const rooms = snap.rooms.filter((m) => m.regionId === r.id).map((m) => this.roomView(snap, m.id));
        const regionHosts = hosts.filter((h) => regionOfHost(snap, h) === r.id);
        const categories: InstanceCategory[] = [];
        const sells = (s: SizeRow) => !market || (sellsSizesIn(market, snap.regions, r.id) && !sizeRefusal(market, s));
        if (regionHosts.length) categories.push('Gpu', 'App');
        else if (cpuApps && snap.sizes.some((s) => s.category === APP_SIZE_CATEGORY && s.regionIds.includes(r.id) && sells(s))) categories.push('App');
        for (const c of SIZE_CATEGORIES) {
          if (!this.unsold[c] && snap.sizes.some((s) => s.category === c && s.regionIds.includes(r.id) && sells(s))) categories.push(c);
        }
        return { id: r.id, name: r.name, area: r.area, rooms, gpuFree: regionHosts.reduce((n, h) => n + h.gpuFree, 0), categories };
      });
      return { items: category ? items.filter((r) => r.categories.includes(category)) : items };
    });
  }

  rooms(regionId?: string): Promise<{ items: Room[] }> {
    return this.memoised(`rooms:${regionId ?? ''}`, (snap) => {
      if (regionId) mustFindRegion(snap, regionId);
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
    return this.memoised('gpuTypes', (snap, market) => {
      const hosts = this.saleHosts(snap, market);
      return { items: snap.gpuTypes.map((g) => this.gpuTypeView(snap, g, hosts, market)) };
    });
  }

  gpuList(q: { filterBy?: string; sortBy?: string; cycle?: BillingCycle } & Paging): Promise<Page<GpuHost>> {
    const key = `gpuList:${q.filterBy ?? ''}:${q.sortBy ?? ''}:${q.cycle ?? ''}:${q.page}:${q.pageSize}`;
    return this.memoised(key, (snap, market) => {
      const f = filters(q.filterBy, ['region', 'room', 'gpuType', 'gpuCount', 'zone']);
      if (f.region) mustFindRegion(snap, f.region);
      if (f.room) mustFindRoom(snap, f.room);
      if (f.gpuType) mustFindGpuType(snap, f.gpuType);
      const gpuCount = positiveInt(f.gpuCount, '卡数');
      const cycle = q.cycle ?? 'Hour';
      let hosts = this.saleHosts(snap, market).filter(
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
    const cyclePrice = (cycle: BillingCycle) => (h: HostRow) => Number(discounted(unitPriceOf(snap, 'gpu', h.gpuTypeId, cycle)));
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
    return this.memoised(key, (snap, market) => {
      const f = filters(q.filterBy, ['category', 'region', 'cpu', 'memory']);
      if (f.category && !(SIZE_CATEGORIES as readonly string[]).includes(f.category)) {
        throw new AppError('VALIDATION_FAILED', `filterBy：规格类别必须是 ${SIZE_CATEGORIES.join('、')}`);
      }
      if (f.region) mustFindRegion(snap, f.region);
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
      return { ...page, items: page.items.map((s) => this.sizeView(snap, s, q.cycle ?? 'Hour', market)) };
    });
  }

  private sizeSortValue(snap: Snapshot, field: string): (s: SizeRow) => number {
    switch (field) {
      case 'priceDay':
        return (s) => Number(discounted(unitPriceOf(snap, 'size', s.id, 'Day')));
      case 'priceHour':
        return (s) => Number(discounted(unitPriceOf(snap, 'size', s.id, 'Hour')));
      case 'cpu':
        return (s) => s.cpu;
      case 'memory':
        return (s) => s.memoryGb;
      default:
        throw new AppError('VALIDATION_FAILED', `sortBy：不支持按 ${field} 排序，可用：priceDay、priceHour、cpu、memory`);
    }
  }

  images(q: { filterBy?: string } & Paging): Promise<Page<Image>> {
    return this.memoised(`images:${q.filterBy ?? ''}:${q.page}:${q.pageSize}`, (snap, market) => {
      const f = filters(q.filterBy, ['category', 'kind', 'os', 'framework']);
      const rows = snap.images.filter(
        (i) =>
          this.runs(i) &&
          (!f.category || i.forCategories.includes(f.category)) &&
          (!f.kind || i.kind === f.kind) &&
          (!f.os || i.os.toLowerCase().includes(f.os.toLowerCase())) &&
          (!f.framework || i.framework.toLowerCase() === f.framework.toLowerCase()),
      );
      return paginate(
        rows.map((i) => this.imageOnSale(market, i)),
        q,
      );
    });
  }

  /** Images that run on this GPU type: CUDA no older than the card needs, no newer than some host of it has. */
  gpuImages(q: { gpuTypeId?: string; framework?: string }): Promise<{ items: Image[] }> {
    return this.memoised(`gpuImages:${q.gpuTypeId ?? ''}:${q.framework ?? ''}`, (snap, market) => {
      const type = q.gpuTypeId ? mustFindGpuType(snap, q.gpuTypeId) : undefined;
      const maxCuda = type ? this.maxCudaOf(snap, type.id) : undefined;
      const items = snap.images
        .filter((i) => i.forGpu && this.runs(i) && (!q.framework || i.framework.toLowerCase() === q.framework.toLowerCase()))
        .filter((i) => !type || imageFits(i, type, maxCuda) === null)
        .map((i) => this.imageOnSale(market, i));
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
    return this.memoised(`apps:${q.keyword ?? ''}:${q.category ?? ''}:${q.page}:${q.pageSize}`, (snap, market) => {
      const keyword = q.keyword?.toLowerCase();
      const rows = snap.applications.filter(
        (a) =>
          (!q.category || a.category === q.category) &&
          (!keyword || [a.name, a.description, a.category, ...a.tags].some((t) => t.toLowerCase().includes(keyword))),
      );
      const categories = [...new Set(snap.applications.map((a) => a.category))];
      // What can be bought comes first (a real host offers few): the catalogue's order within each group.
      const shown = rows.map(({ sort: _s, active: _a, ...a }) => this.applicationOnSale(snap, market, a));
      const onSaleFirst = [...shown.filter((a) => !a.unavailable), ...shown.filter((a) => a.unavailable)];
      return {
        ...paginate(onSaleFirst, q),
        categories,
      };
    });
  }

  /** An application as the market shows it: on a real host, why it is not offered (its image unregistered or not built). */
  private applicationOnSale(snap: Snapshot, market: HostMarket | null, app: Application): Application {
    if (isCpuApplication(app)) return this.cpuApplicationOnSale(snap, market, app);
    if (!market) return app;
    const cards = snap.gpuTypes.filter((g) => g.memoryGb >= app.minGpuMemoryGb && !gpuTypeRefusal(market, g));
    const image = snap.images.find((i) => i.id === app.imageId);
    const noCard = app.minGpuMemoryGb > 0 ? `本主机没有显存不少于 ${app.minGpuMemoryGb} GB 的 GPU` : '本主机没有 GPU';
    const why = applicationRefusal(market, image) ?? (cards.length ? null : noCard);
    return why ? { ...app, unavailable: why } : app;
  }

  /**
   * An application that needs no card, with the CPU sizes it is sold on (each at its own price and, on
   * a real host, with why it does not fit); not offered when CPU instances are not sold here, its image
   * is missing on the real host, or no size fits the host.
   */
  private cpuApplicationOnSale(snap: Snapshot, market: HostMarket | null, app: Application): Application {
    const unsold = this.unsold[APP_SIZE_CATEGORY];
    const sizes = unsold ? [] : snap.sizes.filter((x) => x.category === APP_SIZE_CATEGORY).map((x) => this.sizeView(snap, x, 'Hour', market));
    const image = snap.images.find((i) => i.id === app.imageId);
    const why = unsold ?? (market && applicationRefusal(market, image)) ?? (sizes.some((x) => !x.unavailable) ? null : noCpuSize(market));
    return { ...app, sizes, ...(why ? { unavailable: why } : {}) };
  }

  /** Whether some application that needs no card is on sale (a region selling CPU sizes then sells applications too). */
  private sellsCpuApplication(snap: Snapshot, market: HostMarket | null): boolean {
    return snap.applications.some((a) => isCpuApplication(a) && !this.cpuApplicationOnSale(snap, market, a).unavailable);
  }

  recommendRegion(q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }) {
    return this.memoised(`recommend:${q.category}:${q.gpuTypeId ?? ''}:${q.sizeId ?? ''}`, (snap, market) => {
      if (q.category === 'Gpu' || q.category === 'App') {
        if (q.gpuTypeId) mustFindGpuType(snap, q.gpuTypeId);
        const free = new Map<string, number>();
        for (const h of this.saleHosts(snap, market)) {
          if (q.gpuTypeId && h.gpuTypeId !== q.gpuTypeId) continue;
          const region = regionOfHost(snap, h);
          free.set(region, (free.get(region) ?? 0) + h.gpuFree);
        }
        const best = [...free.entries()].sort((a, b) => b[1] - a[1])[0];
        if (!best || best[1] === 0) throw new AppError('NO_CAPACITY', '各地区暂无空闲 GPU');
        const region = mustFindRegion(snap, best[0]);
        return { regionId: region.id, regionName: region.name, reason: `当前空闲 GPU 最多（${best[1]} 卡）` };
      }
      const size = q.sizeId ? mustFindSize(snap, q.sizeId) : undefined;
      const candidates = snap.regions.filter((r) =>
        snap.sizes.some((s) => s.category === q.category && s.regionIds.includes(r.id) && (!size || s.id === size.id)),
      );
      const region = candidates[0];
      if (!region) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', '暂无地区提供该类产品');
      return { regionId: region.id, regionName: region.name, reason: size ? `${size.name}在售` : '在售规格最全' };
    });
  }

  availableZones(q: { gpuTypeId: string; gpuCount: number; regionId?: string }) {
    return this.memoised(`zones:${q.gpuTypeId}:${q.gpuCount}:${q.regionId ?? ''}`, (snap, market) => {
      mustFindGpuType(snap, q.gpuTypeId);
      if (q.regionId) mustFindRegion(snap, q.regionId);
      const fitting = this.saleHosts(snap, market).filter((h) => h.gpuTypeId === q.gpuTypeId && h.gpuFree >= q.gpuCount);
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
    return this.memoised(`types:${q.regionId ?? ''}:${q.roomId ?? ''}:${q.gpuCount}`, (snap, market) => {
      if (q.regionId) mustFindRegion(snap, q.regionId);
      if (q.roomId) mustFindRoom(snap, q.roomId);
      const hosts = this.saleHosts(snap, market).filter((h) => (!q.roomId || h.roomId === q.roomId) && (!q.regionId || regionOfHost(snap, h) === q.regionId));
      const items = snap.gpuTypes
        .filter((g) => hosts.some((h) => h.gpuTypeId === g.id))
        .map((g) => ({
          ...this.gpuTypeView(snap, g, hosts, market),
          maxGpuPerHost: Math.max(0, ...hosts.filter((h) => h.gpuTypeId === g.id).map((h) => h.gpuFree)),
        }))
        // Types that can take the asked card count first; the others stay listed, shown as full.
        .sort((a, b) => Number(b.maxGpuPerHost >= q.gpuCount) - Number(a.maxGpuPerHost >= q.gpuCount));
      return { items };
    });
  }
}

/** Why an application that needs no card is not offered when none of the CPU sizes can be sold. */
function noCpuSize(market: HostMarket | null): string {
  return market ? `本主机只有 ${market.offer.cpus} 核 / ${market.offer.memoryGb} GB 内存，放不下任何 CPU 实例规格` : '暂无在售的 CPU 实例规格';
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
