import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  type applicationsPageSchema,
  type availableGpuTypesResponseSchema,
  type availableZonesResponseSchema,
  type BillingCycle,
  type GpuQuoteRequest,
  type gpuHostsPageSchema,
  type GpuType,
  type Image,
  type imagesPageSchema,
  type InstanceCategory,
  type Promotion,
  type Quote,
  type Region,
  type regionRecommendSchema,
  type Room,
  type SizeCategory,
  type SizeQuoteRequest,
  type sizesPageSchema,
  type Voucher,
} from '@console/contract';
// Type-only: the contract exports these schemas but not their inferred types.
import type { z } from 'zod';
import { api } from './client';

export type GpuHostsPage = z.infer<typeof gpuHostsPageSchema>;
export type SizesPage = z.infer<typeof sizesPageSchema>;
export type ImagesPage = z.infer<typeof imagesPageSchema>;
export type ApplicationsPage = z.infer<typeof applicationsPageSchema>;
export type AvailableGpuType = z.infer<typeof availableGpuTypesResponseSchema>['items'][number];
export type AvailableZone = z.infer<typeof availableZonesResponseSchema>['items'][number];
export type RegionRecommend = z.infer<typeof regionRecommendSchema>;

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
const items = <T,>(r: { items: T[] }) => r.items;

export const catalogueApi = {
  promotion: (signal?: AbortSignal) => api.get<Promotion>(API.promotion, undefined, quiet(signal)),
  gpuList: (params: GpuListParams, signal?: AbortSignal) => api.get<GpuHostsPage>(API.gpuList, { ...params }, quiet(signal)),
  regions: (category: InstanceCategory, signal?: AbortSignal) =>
    api.get<{ items: Region[] }>(API.regions, { category }, quiet(signal)).then(items),
  rooms: (regionId: string | undefined, signal?: AbortSignal) =>
    api.get<{ items: Room[] }>(API.roomList, { regionId }, quiet(signal)).then(items),
  gpuTypes: (signal?: AbortSignal) => api.get<{ items: GpuType[] }>(API.gpuTypeList, undefined, quiet(signal)).then(items),
  availableGpuTypes: (q: { regionId?: string; roomId?: string; gpuCount?: number }, signal?: AbortSignal) =>
    api.get<{ items: AvailableGpuType[] }>(API.gpuAvailableGpuTypes, { ...q }, quiet(signal)).then(items),
  availableZones: (q: { gpuTypeId: string; gpuCount?: number; regionId?: string }, signal?: AbortSignal) =>
    api.get<{ items: AvailableZone[] }>(API.gpuAvailableZones, { ...q }, quiet(signal)).then(items),
  regionRecommend: (q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }, signal?: AbortSignal) =>
    api.get<RegionRecommend>(API.regionRecommend, { ...q }, quiet(signal)),
  gpuImages: (gpuTypeId: string | undefined, signal?: AbortSignal) =>
    api.get<{ items: Image[] }>(API.gpuImages, { gpuTypeId }, quiet(signal)).then(items),
  images: (category: SizeCategory, signal?: AbortSignal) =>
    api.get<ImagesPage>(API.images, { filterBy: formatFilterBy({ category }), pageSize: 100 }, quiet(signal)).then(items),
  sizes: ({ category, regionId, ...rest }: SizesParams, signal?: AbortSignal) =>
    api.get<SizesPage>(
      API.sizes,
      { filterBy: formatFilterBy({ category, region: regionId }), sortBy: 'priceDay,a', ...rest },
      quiet(signal),
    ),
  applications: (params: ApplicationsParams, signal?: AbortSignal) =>
    api.get<ApplicationsPage>(API.applicationList, { ...params }, quiet(signal)),
  /** The caller's vouchers usable now on `category` (the server drops the ones for other products). */
  usableVouchers: (category: InstanceCategory, signal?: AbortSignal) =>
    api.get<{ items: Voucher[] }>(API.vouchers, { usable: 'true', category }, quiet(signal)).then(items),
  /** The logged-in variant applies vouchers and the student discount; a visitor gets list prices. */
  gpuQuote: (body: GpuQuoteRequest, loggedIn: boolean, signal?: AbortSignal) =>
    api.post<Quote>(loggedIn ? API.gpuOrderUserPrice : API.gpuOrderPrice, body, quiet(signal)),
  sizeQuote: (body: SizeQuoteRequest, loggedIn: boolean, signal?: AbortSignal) =>
    api.post<Quote>(loggedIn ? API.orderUserPrice : API.orderPrice, body, quiet(signal)),
};

/** The catalogue changes rarely; capacity does, so lists that show free cards refresh sooner. */
const STATIC = 5 * 60_000;
const LIVE = 20_000;

export const catalogueQueries = {
  promotion: () =>
    queryOptions({ queryKey: ['catalogue', 'promotion'], queryFn: ({ signal }) => catalogueApi.promotion(signal), staleTime: STATIC }),
  gpuList: (params: GpuListParams) =>
    queryOptions({
      queryKey: ['catalogue', 'gpuList', params],
      queryFn: ({ signal }) => catalogueApi.gpuList(params, signal),
      staleTime: LIVE,
    }),
  regions: (category: InstanceCategory) =>
    queryOptions({
      queryKey: ['catalogue', 'regions', category],
      queryFn: ({ signal }) => catalogueApi.regions(category, signal),
      staleTime: STATIC,
    }),
  gpuTypes: () =>
    queryOptions({ queryKey: ['catalogue', 'gpuTypes'], queryFn: ({ signal }) => catalogueApi.gpuTypes(signal), staleTime: LIVE }),
  availableGpuTypes: (q: { regionId?: string; roomId?: string }) =>
    queryOptions({
      queryKey: ['catalogue', 'availableGpuTypes', q],
      queryFn: ({ signal }) => catalogueApi.availableGpuTypes({ ...q, gpuCount: 1 }, signal),
      staleTime: LIVE,
    }),
  regionRecommend: (q: { category: InstanceCategory; gpuTypeId?: string; sizeId?: string }) =>
    queryOptions({
      queryKey: ['catalogue', 'regionRecommend', q],
      queryFn: ({ signal }) => catalogueApi.regionRecommend(q, signal),
      staleTime: STATIC,
    }),
  gpuImages: (gpuTypeId: string | undefined) =>
    queryOptions({
      queryKey: ['catalogue', 'gpuImages', gpuTypeId],
      queryFn: ({ signal }) => catalogueApi.gpuImages(gpuTypeId, signal),
      staleTime: STATIC,
    }),
  images: (category: SizeCategory) =>
    queryOptions({ queryKey: ['catalogue', 'images', category], queryFn: ({ signal }) => catalogueApi.images(category, signal), staleTime: STATIC }),
  sizes: (params: SizesParams) =>
    queryOptions({ queryKey: ['catalogue', 'sizes', params], queryFn: ({ signal }) => catalogueApi.sizes(params, signal), staleTime: LIVE }),
  usableVouchers: (category: InstanceCategory) =>
    queryOptions({
      // Not ORDER_KEYS.vouchers: that cache holds the { items } answer of the pay dialog, this one the
      // bare list; both live on one page (the purchase page opens the pay dialog). ['vouchers'] still refreshes both.
      queryKey: ['vouchers', 'purchase', category],
      queryFn: ({ signal }) => catalogueApi.usableVouchers(category, signal),
      staleTime: 30_000,
    }),
  applications: (params: ApplicationsParams) =>
    queryOptions({
      queryKey: ['catalogue', 'applications', params],
      queryFn: ({ signal }) => catalogueApi.applications(params, signal),
      staleTime: STATIC,
    }),
};
