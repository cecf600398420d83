import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { catalogueQueries, type QuoteInput } from '../api/catalogue';
import { useDebouncedValue } from '../../../hooks/useDebouncedValue';

export const QUOTE_DEBOUNCE_MS = 250;

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
    ...catalogueQueries.quote(settled, loggedIn),
    enabled: settled.request !== null,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
  const settling = JSON.stringify(settled) !== JSON.stringify(input) || query.isPlaceholderData || query.isFetching;
  return { query, settling };
}
