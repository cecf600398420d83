import { queryOptions, useQuery } from '@tanstack/react-query';
import { API, type Agreement, type AgreementKind, type SiteSettings } from '@console/contract';
import { api } from './client';

/** Pages show their own error state (or, for the settings, simply leave the entry out): no toasts. */
const quiet = (signal?: AbortSignal) => ({ signal, silent: true });

/** The operator's public site settings and documents (the catalogue file's settings). */
export const siteApi = {
  settings: (signal?: AbortSignal) => api.get<SiteSettings>(API.siteSettings, undefined, quiet(signal)),
  agreement: (kind: AgreementKind, signal?: AbortSignal) => api.get<Agreement>(API.siteAgreement, { kind }, quiet(signal)),
};

export const SITE_KEYS = {
  settings: ['site', 'settings'] as const,
  agreement: (kind: AgreementKind) => ['site', 'agreement', kind] as const,
};

/** They change when the operator edits the file: rarely. */
const STATIC = 5 * 60_000;

export const siteQueries = {
  settings: () => queryOptions({ queryKey: SITE_KEYS.settings, queryFn: ({ signal }) => siteApi.settings(signal), staleTime: STATIC }),
  agreement: (kind: AgreementKind) =>
    queryOptions({ queryKey: SITE_KEYS.agreement(kind), queryFn: ({ signal }) => siteApi.agreement(kind, signal), staleTime: STATIC }),
};

/** The 企业微信客服 link the operator configured; undefined while unknown, unset or unreachable. */
export function useCustomerServiceUrl(): string | undefined {
  return useQuery(siteQueries.settings()).data?.customerServiceUrl ?? undefined;
}
