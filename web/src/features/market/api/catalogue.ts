import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  type ApplicationsPage,
  type AvailableGpuType,
  type AvailableZone,
  type BillingCycle,
  type GpuHost,
  type GpuHostsPage,
  type GpuQuoteRequest,
  type GpuType,
  type Image,
  type ImagesPage,
  type InstanceCategory,
  type Promotion,
  type Quote,
  type Region,
  type RegionRecommend,
  type Room,
  type SizeCategory,
  type SizeQuoteRequest,
  type SizesPage,
  type Voucher,
} from '@console/contract';
import { api } from '../../../api/client';

/** The market's query as the API takes it: filters travel as one comma-joined key,value string. */
export interface GpuListParams {
  filterBy?: string;
  cycle?: BillingCycle;
  sortBy?: string;
  page?: number;
  pageSize?: number;
}

export interface SizesParams {
  category: SizeCategory;
  regionId?: string;
  cycle?: BillingCycle;
  page?: number;
  pageSize?: number;
}

export interface ApplicationsParams {
  keyword?: string;
  category?: string;
  page?: number;
  pageSize?: number;
}

/**
 * Page loads are silent: every page shows its own error state with a 重试 button, and a toast on
 * top of it would say the same thing twice.
 */
const quiet = (signal?: AbortSignal) => ({ signal, silent: true });
const items = <T>(r: { items: T[] }) => r.items;

export const catalogueApi = {
  promotion: (signal?: AbortSignal) => api.get<Promotion>(API.promotion, undefined, quiet(signal)),
  gpuList: (params: GpuListParams, signal?: AbortSignal) => api.get<GpuHostsPage>(API.gpuList, { ...params }, quiet(signal)),
  regions: (category: InstanceCategory, signal?: AbortSignal) => api.get<{ items: Region[] }>(API.regions, { category }, quiet(signal)).then(items),
  rooms: (regionId: string | undefined, signal?: AbortSignal) => api.get<{ items: Room[] }>(API.roomList, { regionId }, quiet(signal)).then(items),
  gpuTypes: (signal?: AbortSignal) => api.get<{ items: GpuType[] }>(API.gpuTypeList, undefined, quiet(signal)).then(items),
  availableGpuTypes: (q: { regionId?: string; roomId?: string; gpuCount?: number }, signal?: AbortSignal) =>
    api.get<{ items: AvailableGpuType[] }>(API.gpuAvailableGpuTypes, { ...q }, quiet(signal)).then(items),
  availableZones: (q: { gpuTypeId: string; gpuCount?: number; regionId?: string }, signal?: AbortSignal) =>
    api.get<{ items: AvailableZone[] }>(API.gpuAvailableZones, { ...q }, quiet(signal)).then(items),
  regionRecommend: (q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }, signal?: AbortSignal) =>
    api.get<RegionRecommend>(API.regionRecommend, { ...q }, quiet(signal)),
  gpuImages: (gpuTypeId: string | undefined, signal?: AbortSignal) => api.get<{ items: Image[] }>(API.gpuImages, { gpuTypeId }, quiet(signal)).then(items),
  images: (category: SizeCategory, signal?: AbortSignal) =>
    api.get<ImagesPage>(API.images, { filterBy: formatFilterBy({ category }), pageSize: 100 }, quiet(signal)).then(items),
  sizes: ({ category, regionId, ...rest }: SizesParams, signal?: AbortSignal) =>
    api.get<SizesPage>(API.sizes, { filterBy: formatFilterBy({ category, region: regionId }), sortBy: 'priceDay,a', ...rest }, quiet(signal)),
  applications: (params: ApplicationsParams, signal?: AbortSignal) => api.get<ApplicationsPage>(API.applicationList, { ...params }, quiet(signal)),
  /** The caller's vouchers usable now on `category` (the server drops the ones for other products). */
  usableVouchers: (category: InstanceCategory, signal?: AbortSignal) =>
    api.get<{ items: Voucher[] }>(API.vouchers, { usable: 'true', category }, quiet(signal)).then(items),
  /** The logged-in variant applies vouchers and the student discount; a visitor gets list prices. */
  gpuQuote: (body: GpuQuoteRequest, loggedIn: boolean, signal?: AbortSignal) =>
    api.post<Quote>(loggedIn ? API.gpuOrderUserPrice : API.gpuOrderPrice, body, quiet(signal)),
  sizeQuote: (body: SizeQuoteRequest, loggedIn: boolean, signal?: AbortSignal) =>
    api.post<Quote>(loggedIn ? API.orderUserPrice : API.orderPrice, body, quiet(signal)),
};

/**
 * Query keys of the catalogue and its prices. Quotes are keyed by what was asked (kind, visitor or
 * not, the request), so two configurations never share a price.
 */
export const CATALOGUE_KEYS = {
  all: ['catalogue'] as const,
  promotion: ['catalogue', 'promotion'] as const,
  gpuList: (params: GpuListParams) => ['catalogue', 'gpuList', params] as const,
  regions: (category: InstanceCategory) => ['catalogue', 'regions', category] as const,
  gpuTypes: ['catalogue', 'gpuTypes'] as const,
  availableGpuTypes: (q: { regionId?: string; roomId?: string }) => ['catalogue', 'availableGpuTypes', q] as const,
  regionRecommend: (q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }) => ['catalogue', 'regionRecommend', q] as const,
  gpuImages: (gpuTypeId: string | undefined) => ['catalogue', 'gpuImages', gpuTypeId] as const,
  images: (category: SizeCategory) => ['catalogue', 'images', category] as const,
  sizes: (params: SizesParams) => ['catalogue', 'sizes', params] as const,
  applications: (params: ApplicationsParams) => ['catalogue', 'applications', params] as const,
  // Not ORDER_KEYS.vouchers: that cache holds the { items } answer of the pay dialog, this one the
  // bare list; both live on one page (the purchase page opens the pay dialog). BILLING_KEYS.vouchers still refreshes both.
  purchaseVouchers: (category: InstanceCategory) => ['vouchers', 'purchase', category] as const,
  quote: (kind: 'gpu' | 'size', loggedIn: boolean, request: GpuQuoteRequest | SizeQuoteRequest | null) => ['quote', kind, loggedIn, request] as const,
  /** The sample quote that tells the price of extra disk on one host. */
  diskSampleQuote: (hostId: string | undefined) => ['quote', 'diskSample', hostId] as const,
};

/** The catalogue changes rarely; capacity does, so lists that show free cards refresh sooner. */
const STATIC = 5 * 60_000;
const LIVE = 20_000;

/** What a quote is asked for: a GPU configuration or a sized product (CPU, desktop, game…). */
export type QuoteInput = { kind: 'gpu'; request: GpuQuoteRequest | null } | { kind: 'size'; request: SizeQuoteRequest | null };

export const catalogueQueries = {
  /** Asked only while `enabled: input.request !== null`: the key holds null, the request never does. */
  quote: (input: QuoteInput, loggedIn: boolean) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.quote(input.kind, loggedIn, input.request),
      queryFn: ({ signal }) =>
        input.kind === 'gpu' ? catalogueApi.gpuQuote(input.request!, loggedIn, signal) : catalogueApi.sizeQuote(input.request!, loggedIn, signal),
    }),
  /** The sample quote that tells the price of extra disk on `host`; asked only while there is one. */
  diskSampleQuote: (host: GpuHost | undefined, sample: Omit<GpuQuoteRequest, 'gpuTypeId' | 'hostId' | 'regionId' | 'roomId'>) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.diskSampleQuote(host?.id),
      queryFn: ({ signal }) =>
        catalogueApi.gpuQuote({ gpuTypeId: host!.gpuTypeId, hostId: host!.id, regionId: host!.regionId, roomId: host!.roomId, ...sample }, false, signal),
    }),
  promotion: () => queryOptions({ queryKey: CATALOGUE_KEYS.promotion, queryFn: ({ signal }) => catalogueApi.promotion(signal), staleTime: STATIC }),
  gpuList: (params: GpuListParams) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.gpuList(params),
      queryFn: ({ signal }) => catalogueApi.gpuList(params, signal),
      staleTime: LIVE,
    }),
  regions: (category: InstanceCategory) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.regions(category),
      queryFn: ({ signal }) => catalogueApi.regions(category, signal),
      staleTime: STATIC,
    }),
  gpuTypes: () => queryOptions({ queryKey: CATALOGUE_KEYS.gpuTypes, queryFn: ({ signal }) => catalogueApi.gpuTypes(signal), staleTime: LIVE }),
  availableGpuTypes: (q: { regionId?: string; roomId?: string }) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.availableGpuTypes(q),
      queryFn: ({ signal }) => catalogueApi.availableGpuTypes({ ...q, gpuCount: 1 }, signal),
      staleTime: LIVE,
    }),
  regionRecommend: (q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.regionRecommend(q),
      queryFn: ({ signal }) => catalogueApi.regionRecommend(q, signal),
      staleTime: STATIC,
    }),
  gpuImages: (gpuTypeId: string | undefined) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.gpuImages(gpuTypeId),
      queryFn: ({ signal }) => catalogueApi.gpuImages(gpuTypeId, signal),
      staleTime: STATIC,
    }),
  images: (category: SizeCategory) =>
    queryOptions({ queryKey: CATALOGUE_KEYS.images(category), queryFn: ({ signal }) => catalogueApi.images(category, signal), staleTime: STATIC }),
  sizes: (params: SizesParams) =>
    queryOptions({ queryKey: CATALOGUE_KEYS.sizes(params), queryFn: ({ signal }) => catalogueApi.sizes(params, signal), staleTime: LIVE }),
  usableVouchers: (category: InstanceCategory) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.purchaseVouchers(category),
      queryFn: ({ signal }) => catalogueApi.usableVouchers(category, signal),
      staleTime: 30_000,
    }),
  applications: (params: ApplicationsParams) =>
    queryOptions({
      queryKey: CATALOGUE_KEYS.applications(params),
      queryFn: ({ signal }) => catalogueApi.applications(params, signal),
      staleTime: STATIC,
    }),
};
