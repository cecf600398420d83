/**
 * Lookups in a catalogue snapshot that fail with the catalogue's codes, shared by the market's read
 * model (service.ts) and the quotes (quotes.ts), so that both refuse an unknown id in the same words.
 */
import { BillingCycle, type SizeCategory } from '@console/contract';
import type { HostOffer } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import type { UnitPrice } from './pricing.js';
import { priceKey, type GpuTypeRow, type ImageRow, type Snapshot } from './store.js';
import { compareVersion } from './versions.js';

/** What the machines behind the catalogue can sell (the compute driver's answers); the same for lists and quotes. */
export interface MachineLimits {
  /** Whether the machines can run an image (the compute driver's operating systems); absent: all can. */
  runs?: (image: { os: string }) => boolean;
  /** Size categories the machines cannot honour, with why (the compute driver's `unsold`): never offered. */
  unsold?: Readonly<Partial<Record<SizeCategory, string>>>;
  /** What the one real host behind the market has (the compute driver's `offer`): only that is sold. Absent: the whole catalogue. */
  offer?: () => Promise<HostOffer>;
  /** What each host of a fleet may sell (the compute driver's `offerOf`, catalogue/fleet-market.ts). Absent: the catalogue's hosts as they are. */
  offerOf?: (hostId: string) => Promise<HostOffer | 'catalogue' | null>;
}

/** The sizes an application that needs no card is sold on: CPU instances (a desktop or game size is a product of its own). */
export const APP_SIZE_CATEGORY: SizeCategory = 'Generic';

export function mustFindRegion(snap: Snapshot, id: string) {
  const r = snap.regions.find((x) => x.id === id);
  if (!r) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `地区 ${id} 不存在`);
  return r;
}

export function mustFindRoom(snap: Snapshot, id: string) {
  const r = snap.rooms.find((x) => x.id === id);
  if (!r) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `机房 ${id} 不存在`);
  return r;
}

export function mustFindGpuType(snap: Snapshot, id: string) {
  const g = snap.gpuTypes.find((x) => x.id === id);
  if (!g) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `GPU 型号 ${id} 不存在`);
  return g;
}

export function mustFindSize(snap: Snapshot, id: string) {
  const s = snap.sizes.find((x) => x.id === id);
  if (!s) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `规格 ${id} 不存在`);
  return s;
}

/** The price of a GPU type or size for one billing cycle; refused when that cycle is not sold. */
export function unitPriceOf(snap: Snapshot, kind: 'gpu' | 'size', id: string, cycle: BillingCycle): UnitPrice {
  const p = snap.prices.get(priceKey(kind, id))?.get(cycle);
  if (!p) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `该配置不支持${BillingCycle.label(cycle)}计费`);
  return p;
}

/** Why an image cannot run on a GPU type (and, if given, a driver's CUDA ceiling); null if it can. */
export function imageFits(image: ImageRow, type: GpuTypeRow, maxCuda: string | undefined): string | null {
  if (!image.forGpu) return `${image.name} 不是 GPU 镜像`;
  if (!image.cuda) return null;
  if (compareVersion(image.cuda, type.minCuda) < 0) return `${image.name} 使用 CUDA ${image.cuda}，${type.name} 需要 CUDA ${type.minCuda} 及以上`;
  if (maxCuda && compareVersion(image.cuda, maxCuda) > 0) return `${image.name} 需要 CUDA ${image.cuda}，${type.name} 主机驱动最高支持 ${maxCuda}`;
  return null;
}
