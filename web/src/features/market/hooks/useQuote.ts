import { useEffect, useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { GpuQuoteRequest, SizeQuoteRequest } from '@console/contract';
import { CATALOGUE_KEYS, catalogueApi } from '../api/catalogue';

/** A value that follows `value` once it has stopped changing for `ms` (compared by content). */
export function useDebouncedValue<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  const key = JSON.stringify(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(JSON.parse(key) as T), ms);
    return () => clearTimeout(timer);
  }, [key, ms]);
  return settled;
}

export const QUOTE_DEBOUNCE_MS = 250;

type QuoteInput = { kind: 'gpu'; request: GpuQuoteRequest | null } | { kind: 'size'; request: SizeQuoteRequest | null };

/**
 * The server's price for the configuration on screen, asked again ~250 ms after the last change
 * (typing a duration should not send one request per key). `settling` is true while what is shown
 * is not yet the price of what is on screen, so the buy button waits for it.
 */
export function useQuote(asked: QuoteInput, loggedIn: boolean) {
  // A visitor's price has no voucher (the visitor endpoint refuses one): never send a stale id.
  const input = loggedIn || !asked.request?.voucherId ? asked : ({ ...asked, request: { ...asked.request, voucherId: undefined } } as QuoteInput);
  const settled = useDebouncedValue(input, QUOTE_DEBOUNCE_MS);
  const query = useQuery({
    queryKey: CATALOGUE_KEYS.quote(settled.kind, loggedIn, settled.request),
    queryFn: ({ signal }) =>
      settled.kind === 'gpu' ? catalogueApi.gpuQuote(settled.request!, loggedIn, signal) : catalogueApi.sizeQuote(settled.request!, loggedIn, signal),
    enabled: settled.request !== null,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
  const settling = JSON.stringify(settled) !== JSON.stringify(input) || query.isPlaceholderData || query.isFetching;
  return { query, settling };
}
