import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type GiftEligibility,
  type GiftList,
  type Recharge,
  type RechargeOptions,
  type RechargePage,
  type RechargeRequest,
  type StatementKind,
  type StatementPage,
  type StorageChargePage,
  type UserMoney,
  type Voucher,
} from '@console/contract';
import { api } from './client';

/**
 * Query keys of the money views. `money` is the header balance (one per session token); a payment,
 * a recharge or a charge invalidates it. `vouchers` is the prefix of every voucher list (the coupon
 * page's, the pay dialog's and the purchase page's), so one invalidation refreshes them all.
 */
export const BILLING_KEYS = {
  money: ['money'] as const,
  moneyOf: (token: string | null) => ['money', token] as const,
  statements: ['statement'] as const,
  statement: (kind: StatementKind, page: number, pageSize: number) => ['statement', kind, page, pageSize] as const,
  /** The ledger entries under one roll-up row of a statement. */
  statementGroup: (kind: StatementKind, group: string, page: number, pageSize: number) => ['statement', kind, 'group', group, page, pageSize] as const,
  recharges: ['recharges'] as const,
  rechargeList: (page: number, pageSize: number) => ['recharges', 'list', page, pageSize] as const,
  /** One recharge's QR payment, polled while it is unpaid. */
  recharge: (id: string) => ['recharge', id] as const,
  rechargeOptions: ['rechargeOptions'] as const,
  gifts: ['gifts'] as const,
  giftList: ['gifts', 'list'] as const,
  giftEligibility: ['gifts', 'eligibility'] as const,
  vouchers: ['vouchers'] as const,
  voucherList: ['vouchers', 'all'] as const,
  storageCharges: (page: number, pageSize: number) => ['storageCharges', page, pageSize] as const,
};

export const billingApi = {
  /** Silent: the header shows '--' when the balance is unavailable instead of a toast. */
  money: (signal?: AbortSignal) => api.get<UserMoney>(API.userMoney, undefined, { signal, silent: true }),
  statement: (q: { kind: StatementKind; page: number; pageSize: number }, signal?: AbortSignal) => api.get<StatementPage>(API.userStatement, q, { signal }),
  statementGroup: (q: { kind: StatementKind; group: string; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<StatementPage>(API.userStatementGroup, q, { signal }),
  storageCharges: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<StorageChargePage>(API.storageCharges, q, { signal }),
  rechargeOptions: (signal?: AbortSignal) => api.get<RechargeOptions>(API.rechargeOptions, undefined, { signal }),
  createRecharge: (body: RechargeRequest) => api.post<Recharge>(API.recharge, body),
  /** Polled while the QR code is shown: silent, the dialog shows its own state. */
  recharge: (id: string, signal?: AbortSignal) => api.get<Recharge>(API.rechargeOne, { id }, { signal, silent: true }),
  cancelRecharge: (id: string) => api.post<Recharge>(API.rechargeCancel, { id }),
  recharges: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<RechargePage>(API.recharge, q, { signal }),
  gifts: (signal?: AbortSignal) => api.get<GiftList>(API.gift, undefined, { signal }),
  giftEligibility: (signal?: AbortSignal) => api.get<GiftEligibility>(API.giftEligibility, undefined, { signal, silent: true }),
  obtainGift: () => api.post<GiftList>(API.giftObtain, undefined, { successMessage: '新人赠送金已到账' }),
  renewGifts: () => api.post<GiftList & { renewed: number }>(API.giftRenew, undefined, { successMessage: '赠送金已续期' }),
  vouchers: (q: { usable?: boolean } = {}, signal?: AbortSignal) =>
    api.get<{ items: Voucher[] }>(API.vouchers, q.usable ? { usable: 'true' } : undefined, { signal }),
};

/** One factory per endpoint read by the pages: key and request travel together. */
export const billingQueries = {
  rechargeOptions: () => queryOptions({ queryKey: BILLING_KEYS.rechargeOptions, queryFn: ({ signal }) => billingApi.rechargeOptions(signal) }),
  gifts: () => queryOptions({ queryKey: BILLING_KEYS.giftList, queryFn: ({ signal }) => billingApi.gifts(signal) }),
  giftEligibility: () => queryOptions({ queryKey: BILLING_KEYS.giftEligibility, queryFn: ({ signal }) => billingApi.giftEligibility(signal) }),
  vouchers: () => queryOptions({ queryKey: BILLING_KEYS.voucherList, queryFn: ({ signal }) => billingApi.vouchers({}, signal) }),
};
