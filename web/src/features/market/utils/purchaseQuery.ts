import {
  MAX_DATA_DISK_GB,
  MAX_DURATION,
  MAX_GPU_COUNT,
  MAX_INSTANCE_COUNT,
  PAGE,
  SIZE_CATEGORIES,
  isPostpaid,
  type GpuQuoteRequest,
  type SizeCategory,
  type SizeQuoteRequest,
} from '@console/contract';
import { isShopCycle, type ShopCycle } from './marketQuery';

export const NAME_MAX_LENGTH = 30;

/** 'Gpu' buys a GPU host's cards; the others buy a size (a CPU flavour) in a region. */
export type PurchaseCategory = 'Gpu' | SizeCategory;

/**
 * Everything the purchase page is configured with. It lives in the URL query, so that a visitor
 * sent to log in comes back to exactly this configuration, and a reload keeps it.
 */
export interface PurchaseConfig {
  category: PurchaseCategory;
  regionId?: string;
  /** GPU: undefined means 自动分配. */
  roomId?: string;
  /** GPU: a host picked on the market card; the server places the order there. */
  hostId?: string;
  gpuTypeId?: string;
  gpuCount: number;
  sizeId?: string;
  count: number;
  /** A GPU application (category Gpu), or one that needs no card on a CPU size (category Generic). */
  applicationId?: string;
  imageId?: string;
  /** An image of my images, or one shared with a link (/image/share), instead of a catalogue image. */
  userImageId?: string;
  cycle: ShopCycle;
  duration: number;
  dataDiskGb: number;
  name: string;
  /** Logged-in buyers of a prepaid cycle only; the quote applies it, the pay dialog starts with it. */
  voucherId?: string;
}

/** One edit of the form: the configuration it was made on (defaults resolved) and what changed. */
export type PurchaseUpdate = (shown: PurchaseConfig, change: Partial<PurchaseConfig>) => void;

/** The categories an application is bought in: on a GPU, or (one that needs no card) on a CPU size. */
export function takesApplication(category: PurchaseCategory): boolean {
  return category === 'Gpu' || category === 'Generic';
}

export function isSizeCategory(v: unknown): v is SizeCategory {
  return typeof v === 'string' && (SIZE_CATEGORIES as readonly string[]).includes(v);
}

function clampInt(raw: string | null, min: number, max: number, fallback: number): number {
  const n = Number(raw);
  if (raw === null || raw === '' || !Number.isFinite(n)) return fallback;
  return Math.min(max, Math.max(min, Math.trunc(n)));
}

function categoryOf(params: URLSearchParams): PurchaseCategory {
  const category = params.get('category');
  if (isSizeCategory(category)) return category;
  return params.get('sizeId') ? 'Generic' : 'Gpu';
}

export function readPurchase(params: URLSearchParams): PurchaseConfig {
  const cycleParam = params.get('cycle');
  const cycle = isShopCycle(cycleParam) ? cycleParam : 'Hour';
  const text = (key: string) => params.get(key) || undefined;
  return {
    category: categoryOf(params),
    regionId: text('regionId'),
    roomId: text('roomId'),
    hostId: text('hostId'),
    gpuTypeId: text('gpuTypeId'),
    gpuCount: clampInt(params.get('gpuCount'), 1, MAX_GPU_COUNT, 1),
    sizeId: text('sizeId'),
    count: clampInt(params.get('count'), 1, MAX_INSTANCE_COUNT, 1),
    applicationId: text('applicationId'),
    imageId: text('imageId'),
    userImageId: text('userImageId'),
    cycle,
    duration: clampInt(params.get('duration'), 1, MAX_DURATION[cycle], 1),
    dataDiskGb: clampInt(params.get('dataDiskGb'), 0, MAX_DATA_DISK_GB, 0),
    name: (params.get('name') ?? '').slice(0, NAME_MAX_LENGTH),
    voucherId: text('voucherId'),
  };
}

/** Only the fields of the config's own mode are written: switching modes drops the other's. */
export function writePurchase(c: PurchaseConfig): URLSearchParams {
  const gpu = c.category === 'Gpu';
  const app = takesApplication(c.category) ? c.applicationId : undefined;
  const entries: [string, string | number | undefined][] = [
    ['category', gpu ? undefined : c.category],
    ['regionId', c.regionId],
    ['roomId', gpu ? c.roomId : undefined],
    ['hostId', gpu ? c.hostId : undefined],
    ['gpuTypeId', gpu ? c.gpuTypeId : undefined],
    ['gpuCount', gpu ? c.gpuCount : undefined],
    ['sizeId', gpu ? undefined : c.sizeId],
    ['count', gpu ? undefined : c.count],
    ['applicationId', app],
    ['imageId', c.userImageId || app ? undefined : c.imageId],
    ['userImageId', c.userImageId],
    ['cycle', c.cycle],
    ['duration', c.duration],
    ['dataDiskGb', c.dataDiskGb || undefined],
    ['name', c.name.trim() || undefined],
    ['voucherId', isPostpaid(c.cycle) ? undefined : c.voucherId],
  ];
  const out = new URLSearchParams();
  for (const [key, value] of entries) if (value !== undefined && value !== '') out.set(key, String(value));
  return out;
}

/**
 * Applies one edit and forgets what it invalidates: a host belongs to one region, room and GPU
 * model, a room to one region; a shorter cycle unit may allow fewer units.
 */
export function changePurchase(current: PurchaseConfig, change: Partial<PurchaseConfig>): PurchaseConfig {
  const next = { ...current, ...change };
  const changed = (key: keyof PurchaseConfig) => key in change && change[key] !== current[key];
  if (changed('regionId')) next.roomId = undefined;
  if (changed('regionId') || changed('roomId') || changed('gpuTypeId') || changed('category')) next.hostId = undefined;
  if (changed('category')) {
    // An application goes along between GPU and CPU instances (the page then says on which it runs); other products have none.
    if (!takesApplication(next.category)) next.applicationId = undefined;
    next.sizeId = undefined;
    next.imageId = undefined;
    next.userImageId = undefined; // saved from one kind of instance, for that kind
    next.voucherId = undefined; // vouchers are per product
  }
  // A post-paid order has no payment step a voucher could apply to (the server ignores it).
  if (isPostpaid(next.cycle)) next.voucherId = undefined;
  next.duration = Math.min(next.duration, MAX_DURATION[next.cycle]);
  return next;
}

export function purchaseUrl(c: PurchaseConfig): string {
  return `${PAGE.purchase}?${writePurchase(c).toString()}`;
}

/** A visitor logs in first and comes back to this very configuration (the login page honours redirect). */
export function loginUrlFor(c: PurchaseConfig): string {
  return `${PAGE.login}?redirect=${encodeURIComponent(purchaseUrl(c))}`;
}

export function gpuQuoteRequest(c: PurchaseConfig): GpuQuoteRequest | null {
  if (c.category !== 'Gpu' || !c.gpuTypeId) return null;
  return dropEmpty({
    gpuTypeId: c.gpuTypeId,
    gpuCount: c.gpuCount,
    regionId: c.regionId,
    roomId: c.roomId,
    hostId: c.hostId,
    applicationId: c.applicationId,
    // An application (or a saved image) brings its own image; the server refuses both at once.
    imageId: c.applicationId || c.userImageId ? undefined : c.imageId,
    userImageId: c.applicationId ? undefined : c.userImageId,
    cycle: c.cycle,
    duration: c.duration,
    dataDiskGb: c.dataDiskGb,
    voucherId: isPostpaid(c.cycle) ? undefined : c.voucherId,
  });
}

export function sizeQuoteRequest(c: PurchaseConfig): SizeQuoteRequest | null {
  if (c.category === 'Gpu' || !c.sizeId || !c.regionId) return null;
  const applicationId = takesApplication(c.category) ? c.applicationId : undefined;
  return dropEmpty({
    sizeId: c.sizeId,
    regionId: c.regionId,
    count: c.count,
    applicationId,
    // An application (or a saved image) brings its own image; the server refuses both at once.
    imageId: c.userImageId || applicationId ? undefined : c.imageId,
    userImageId: applicationId ? undefined : c.userImageId,
    cycle: c.cycle,
    duration: c.duration,
    dataDiskGb: c.dataDiskGb,
    voucherId: isPostpaid(c.cycle) ? undefined : c.voucherId,
  });
}

/** Optional ids are left out rather than sent as undefined/empty, which the server would reject. */
function dropEmpty<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as T;
}
