import { queryOptions } from '@tanstack/react-query';
import {
  API,
  formatFilterBy,
  orderPath,
  type GpuOrderRequest,
  type Order,
  type OrderKind,
  type OrderPage,
  type OrderPayStatus,
  type OrderQr,
  type OrderStatus,
  type OrderType,
  type PageOf,
  type PayOrderRequest,
  type ResourcePackage,
  type ResourceProduct,
  type resourceUsageSchema,
  type SizeOrderRequest,
  type UsageBill,
  type Voucher,
} from '@console/contract';
import { session } from '../session/store';
import { api, reactToError } from './client';
import { ApiError, CLIENT_MESSAGES } from './errors';
import { getApiUi } from './ui';

/**
 * What the bill list can be narrowed by; travels as one `filterBy` string (spec §3). A list means
 * "any of these" and repeats its key: { type: ['NewBuy', 'Renew'] } is `type,NewBuy,type,Renew`.
 */
export interface OrderFilter {
  kind?: OrderKind | readonly OrderKind[];
  status?: OrderStatus | readonly OrderStatus[];
  type?: OrderType | readonly OrderType[];
  category?: string;
}

/** Query keys of everything an order payment changes, so one invalidation refreshes them all. */
export const ORDER_KEYS = {
  all: ['orders'] as const,
  list: (filter: OrderFilter, page: number, pageSize: number) => ['orders', 'list', filter, page, pageSize] as const,
  unpaid: ['orders', 'unpaid'] as const,
  one: (uid: string) => ['orders', 'one', uid] as const,
  /** An order looked for under each kind in turn (a link that does not say which). */
  lookup: (uid: string, kinds: readonly OrderKind[]) => ['orders', 'one', uid, 'lookup', kinds.join(',')] as const,
  /** A post-paid order's bill, line by line. */
  usage: (uid: string) => ['orders', 'one', uid, 'usage'] as const,
  /** The payment of one order (GET …/pay), polled while a QR code is shown or the delivery runs. */
  payStatus: (uid: string) => ['orders', 'pay', uid] as const,
  packages: ['resource', 'packages'] as const,
  /** What one package paid for, a page of it (under `packages`: a refresh of the packages refreshes it too). */
  packageUsages: (id: string, page: number, pageSize: number) => ['resource', 'packages', id, 'usages', page, pageSize] as const,
  products: ['resource', 'products'] as const,
  vouchers: (category: string) => ['vouchers', 'usable', category] as const,
};

/** `filterBy` in a fixed key order (kind, status, type, category) so equal filters give equal URLs. */
export function orderFilterBy(filter: OrderFilter): string {
  return formatFilterBy({ kind: filter.kind, status: filter.status, type: filter.type, category: filter.category });
}

export const ordersApi = {
  list: (q: { filter: OrderFilter; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<OrderPage>(API.orderList, { filterBy: orderFilterBy(q.filter) || undefined, page: q.page, pageSize: q.pageSize }, { signal }),
  /** Silent: the detail pages show "not found" themselves and try the next kind. */
  get: (kind: OrderKind, uid: string, signal?: AbortSignal) => api.get<Order>(orderPath(kind, uid), undefined, { signal, silent: true }),
  pay: (order: Pick<Order, 'kind' | 'orderUid'>, body: PayOrderRequest) => api.post<OrderPayStatus>(orderPath(order.kind, order.orderUid, '/pay'), body),
  /** Polled while a QR code is shown: silent, the dialog shows its own state. */
  payStatus: (order: Pick<Order, 'kind' | 'orderUid'>, signal?: AbortSignal) =>
    api.get<OrderPayStatus>(orderPath(order.kind, order.orderUid, '/pay'), undefined, { signal, silent: true }),
  qrcode: (order: Pick<Order, 'kind' | 'orderUid'>, method: 'Alipay' | 'Wechat') =>
    api.get<OrderQr>(orderPath(order.kind, order.orderUid, `/qrcode/${method === 'Alipay' ? 'alipay' : 'wechat'}`)),
  /** The voucher the unpaid order is to be paid with, kept on the order (null: none). */
  chooseVoucher: (order: Pick<Order, 'kind' | 'orderUid'>, voucherId: string | null) =>
    api.put<Order>(orderPath(order.kind, order.orderUid, '/voucher'), { voucherId }),
  /** A post-paid order's bill: each run segment, the data-disk days, arrears paid. */
  usageBill: (order: Pick<Order, 'kind' | 'orderUid'>, signal?: AbortSignal) =>
    api.get<UsageBill>(orderPath(order.kind, order.orderUid, '/usage'), undefined, { signal }),
  cancel: (order: Pick<Order, 'kind' | 'orderUid'>) =>
    api.post<Order>(orderPath(order.kind, order.orderUid, '/cancel'), undefined, { successMessage: '订单已取消' }),
  /** Usable vouchers for one product category (vouchers limited to other categories are left out by the server). */
  usableVouchers: (category: string, signal?: AbortSignal) => api.get<{ items: Voucher[] }>(API.vouchers, { usable: 'true', category }, { signal }),
  resourceProducts: (signal?: AbortSignal) => api.get<{ items: ResourceProduct[] }>(API.resourceProducts, undefined, { signal }),
  /**
   * New instance orders; the server prices them again. Post-paid cycles (Usage/Hour) answer an
   * order already billing (status Time) whose instance is being created; Day/Week/Month answer an
   * Unpaid order to pay. Silent: the purchase page offers a recharge on INSUFFICIENT_BALANCE and hands every
   * other failure back to the request layer.
   */
  createGpuOrder: (body: GpuOrderRequest) => api.post<Order>(API.gpuOrderCreate, body, { silent: true }),
  createSizeOrder: (body: SizeOrderRequest) => api.post<Order>(API.orderCreate, body, { silent: true }),
  createResourceOrder: (body: { productId: string; count: number }) => api.post<Order>(API.aiOrderCreate, body),
  resourcePackages: (signal?: AbortSignal) => api.get<{ items: ResourcePackage[] }>(API.resourcePackages, undefined, { signal }),
  /** Silent: /compute/detail shows "not found" (40450008) and load errors itself. */
  resourcePackageUsages: (id: string, q: { page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<PageOf<typeof resourceUsageSchema>>(API.resourcePackageUsages, { id, ...q }, { signal, silent: true }),
};

/**
 * 导出 CSV: the export needs the session header, so a plain link cannot download it. Fetched here
 * as bytes (Response.text() would drop the BOM that lets Excel read the Chinese) and saved through
 * a temporary object URL. Failures go through the request layer's reactions like any other call.
 */
export async function downloadOrdersCsv(filter: OrderFilter): Promise<void> {
  const filterBy = orderFilterBy(filter);
  const url = API.orderListCsv + (filterBy ? `?${new URLSearchParams({ filterBy })}` : '');
  const headers: Record<string, string> = { Accept: 'text/csv' };
  const token = session.getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let error: ApiError;
  try {
    const res = await fetch(url, { headers, credentials: 'include' });
    if (res.ok) {
      const blob = await res.blob();
      saveBlob(blob, fileNameOf(res.headers.get('content-disposition')) ?? `bills-${new Date().toISOString().slice(0, 10)}.csv`);
      return;
    }
    const body = (await res.json().catch(() => ({}))) as { code?: unknown; message?: unknown; detail?: unknown };
    error = new ApiError(
      'http',
      typeof body.message === 'string' && body.message ? body.message : `导出失败（HTTP ${res.status}）`,
      res.status,
      typeof body.code === 'number' ? body.code : undefined,
      typeof body.detail === 'string' && body.detail ? body.detail : undefined,
    );
  } catch {
    error = new ApiError('network', CLIENT_MESSAGES.network);
  }
  reactToError(error, getApiUi());
  throw error;
}

function fileNameOf(disposition: string | null): string | null {
  const m = disposition ? /filename="?([^";]+)"?/i.exec(disposition) : null;
  return m ? m[1]! : null;
}

function saveBlob(blob: Blob, name: string) {
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // Give the browser a moment to start the download before the URL goes away.
  setTimeout(() => URL.revokeObjectURL(href), 1000);
}

/** One factory per endpoint read by the pages and dialogs: key and request travel together. */
export const orderQueries = {
  one: (order: Pick<Order, 'kind' | 'orderUid'>) =>
    queryOptions({ queryKey: ORDER_KEYS.one(order.orderUid), queryFn: ({ signal }) => ordersApi.get(order.kind, order.orderUid, signal) }),
  /** The newest unpaid order, for the banner. */
  unpaid: () =>
    queryOptions({ queryKey: ORDER_KEYS.unpaid, queryFn: ({ signal }) => ordersApi.list({ filter: { status: 'Unpaid' }, page: 1, pageSize: 1 }, signal) }),
  usage: (order: Pick<Order, 'kind' | 'orderUid'>) =>
    queryOptions({ queryKey: ORDER_KEYS.usage(order.orderUid), queryFn: ({ signal }) => ordersApi.usageBill(order, signal) }),
  usableVouchers: (category: string) =>
    queryOptions({ queryKey: ORDER_KEYS.vouchers(category), queryFn: ({ signal }) => ordersApi.usableVouchers(category, signal) }),
  products: () => queryOptions({ queryKey: ORDER_KEYS.products, queryFn: ({ signal }) => ordersApi.resourceProducts(signal) }),
  packages: () => queryOptions({ queryKey: ORDER_KEYS.packages, queryFn: ({ signal }) => ordersApi.resourcePackages(signal) }),
};
