import {
  API,
  type Recharge,
  type RechargeRequest,
  type rechargeOptionsSchema,
  type rechargePageSchema,
  type statementPageSchema,
  type StorageCharge,
  type UserMoney,
  type Voucher,
  type giftListSchema,
  type giftEligibilitySchema,
} from '@console/contract';
import type { z } from 'zod';
import { api } from './client';

export type { UserMoney };
export type RechargeOptions = z.infer<typeof rechargeOptionsSchema>;
export type RechargePage = z.infer<typeof rechargePageSchema>;
export type StatementPage = z.infer<typeof statementPageSchema>;
export type GiftList = z.infer<typeof giftListSchema>;
export type GiftEligibility = z.infer<typeof giftEligibilitySchema>;
export type StatementKind = 'cash' | 'gift' | 'voucher' | 'deposit';

export const billingApi = {
  /** Silent: the header shows '--' when the balance is unavailable instead of a toast. */
  money: (signal?: AbortSignal) => api.get<UserMoney>(API.userMoney, undefined, { signal, silent: true }),
  statement: (q: { kind: StatementKind; page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<StatementPage>(API.userStatement, q, { signal }),
  storageCharges: (q: { page: number; pageSize: number }, signal?: AbortSignal) =>
    api.get<{ items: StorageCharge[]; total: number; page: number; pageSize: number }>(API.storageCharges, q, { signal }),
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
