import { useSyncExternalStore } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { isMoneyUnits, type AuthResult, type User } from '@console/contract';
import { BILLING_KEYS, billingApi } from '../api/billing';
import { seesFinance } from '../auth/permissions';
import { USER_KEYS, userApi } from '../api/user';
import { session } from './store';

/** The session as React state: re-renders on login, logout, user refresh and other tabs. */
export function useSession() {
  const snapshot = useSyncExternalStore(session.subscribe, session.get);
  const queryClient = useQueryClient();
  return {
    ...snapshot,
    loggedIn: snapshot.token !== null,
    /** After register/login: keep token and user as spec §3 says. */
    signIn(result: AuthResult) {
      queryClient.clear();
      session.setLogin(result.token, result.user);
    },
    /** 退出登录: revoke the server session (best effort), then forget everything locally. */
    async signOut() {
      await userApi.logout().catch(() => undefined);
      session.clear();
      queryClient.clear();
    },
  };
}

/** me/info for one token; keeps the localStorage copy current. Shared by the hook and the guard. */
export function meQueryOptions(token: string | null) {
  return {
    queryKey: USER_KEYS.meOf(token),
    queryFn: async ({ signal }: { signal?: AbortSignal }): Promise<User> => {
      const user = await userApi.me(signal);
      session.setUser(user);
      return user;
    },
    staleTime: 60_000,
    // Back in the window, fetch the user even when fresh: a role or grant changed meanwhile (npm run operator, the parent) shows without a reload.
    refetchOnWindowFocus: 'always' as const,
  };
}

/** me/info, refreshed on start when a token exists. */
export function useMeQuery() {
  const token = useSyncExternalStore(session.subscribe, session.getToken);
  return useQuery({ ...meQueryOptions(token), enabled: token !== null });
}

/**
 * The balance for the header; its error state means '--', never a made-up number. A child without
 * 财务 never asks (the server refuses it its parent's balance): the query stays disabled.
 */
export function useMoneyQuery() {
  const token = useSyncExternalStore(session.subscribe, session.getToken);
  const user = useSyncExternalStore(session.subscribe, session.getUser);
  return useQuery({
    queryKey: BILLING_KEYS.moneyOf(token),
    queryFn: async ({ signal }) => {
      try {
        const money = await billingApi.money(signal);
        // A malformed figure must show '--', not crash the header or show a guess.
        if (!isMoneyUnits(money?.cash)) throw new Error('余额数据格式不正确');
        session.setCash(money.cash);
        return money;
      } catch (e) {
        session.setCash(null); // a stale figure would look real: forget it
        throw e;
      }
    },
    enabled: token !== null && seesFinance(user),
    staleTime: 30_000,
  });
}
