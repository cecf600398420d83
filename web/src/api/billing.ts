import { API } from '@console/contract';
import { api } from './client';

export interface UserMoney {
  /** 0.0001-yuan units as a decimal string. */
  cash: string;
}

export const billingApi = {
  /** Silent: the header shows '--' when the balance is unavailable instead of a toast. */
  money: (signal?: AbortSignal) => api.get<UserMoney>(API.userMoney, undefined, { signal, silent: true }),
};
