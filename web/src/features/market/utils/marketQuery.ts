import { BillingCycle, formatFilterBy, type BillingCycle as Cycle } from '@console/contract';
import type { GpuListParams } from '../api/catalogue';

/** The cycles a buyer picks from on the public pages (Usage is the console's own post-paid mode). */
export const SHOP_CYCLES = ['Hour', 'Day', 'Week', 'Month'] as const satisfies readonly Cycle[];
export type ShopCycle = (typeof SHOP_CYCLES)[number];
export const CYCLE_OPTIONS = SHOP_CYCLES.map((c) => ({ value: c, label: BillingCycle.label(c) }));

export const GPU_COUNT_CHOICES = [1, 2, 4, 8] as const;
/** 24 fills whole rows at both 4 (below 1960 px) and 6 (above) cards per row. */
export const MARKET_PAGE_SIZE = 24;

export type PriceSort = '' | 'asc' | 'desc';

/** What the market shows, as read from and written to the page URL (so reload and back keep it). */
export interface MarketFilters {
  regionId?: string;
  roomId?: string;
  gpuTypeId?: string;
  gpuCount?: number;
  cycle: ShopCycle;
  sort: PriceSort;
  page: number;
}

export function isShopCycle(v: unknown): v is ShopCycle {
  return typeof v === 'string' && (SHOP_CYCLES as readonly string[]).includes(v);
}

function positiveInt(raw: string | null): number | undefined {
  const n = Number(raw);
  return raw && Number.isInteger(n) && n > 0 ? n : undefined;
}

export function readMarketFilters(params: URLSearchParams): MarketFilters {
  const cycle = params.get('cycle');
  const sort = params.get('sort');
  const gpuCount = positiveInt(params.get('gpuCount'));
  return {
    regionId: params.get('regionId') || undefined,
    // A room only means something inside its region.
    roomId: (params.get('regionId') && params.get('roomId')) || undefined,
    gpuTypeId: params.get('gpuTypeId') || undefined,
    gpuCount: gpuCount && (GPU_COUNT_CHOICES as readonly number[]).includes(gpuCount) ? gpuCount : undefined,
    cycle: isShopCycle(cycle) ? cycle : 'Hour',
    sort: sort === 'asc' || sort === 'desc' ? sort : '',
    page: positiveInt(params.get('page')) ?? 1,
  };
}

/** The URL query for some filters: defaults are left out so a plain market URL stays plain. */
export function writeMarketFilters(f: MarketFilters): URLSearchParams {
  const out = new URLSearchParams();
  if (f.regionId) out.set('regionId', f.regionId);
  if (f.regionId && f.roomId) out.set('roomId', f.roomId);
  if (f.gpuTypeId) out.set('gpuTypeId', f.gpuTypeId);
  if (f.gpuCount) out.set('gpuCount', String(f.gpuCount));
  if (f.cycle !== 'Hour') out.set('cycle', f.cycle);
  if (f.sort) out.set('sort', f.sort);
  if (f.page > 1) out.set('page', String(f.page));
  return out;
}

/**
 * A change of any filter starts again at page 1: page 3 of the old result means nothing in the new
 * one. Changing the region forgets the room, which belonged to the old region.
 */
export function changeFilters(current: MarketFilters, change: Partial<MarketFilters>): MarketFilters {
  const next = { ...current, page: 1, ...change };
  if ('regionId' in change && change.regionId !== current.regionId) next.roomId = undefined;
  return next;
}

/** The gpu/list query (spec §3 filterBy, §7 sortBy with a/d). */
export function marketRequest(f: MarketFilters): GpuListParams {
  const filterBy = formatFilterBy({ region: f.regionId, room: f.roomId, gpuType: f.gpuTypeId, gpuCount: f.gpuCount });
  return {
    ...(filterBy ? { filterBy } : {}),
    cycle: f.cycle,
    ...(f.sort ? { sortBy: `priceDay,${f.sort === 'asc' ? 'a' : 'd'}` } : {}),
    page: f.page,
    pageSize: MARKET_PAGE_SIZE,
  };
}
