import { useUrlState } from './useUrlState';

/** The page sizes a list offers; the first is the default. */
export const PAGE_SIZES = [10, 20, 50];

export interface Paging {
  page: number;
  pageSize: number;
}

/** A list's page and page size from the URL query: page 1 and the first size when absent or off. */
export function readPaging(p: URLSearchParams, sizes: readonly number[] = PAGE_SIZES): Paging {
  const page = Number(p.get('page'));
  const pageSize = Number(p.get('pageSize'));
  return { page: Number.isInteger(page) && page > 0 ? page : 1, pageSize: sizes.includes(pageSize) ? pageSize : sizes[0]! };
}

/** Writes page and pageSize into `p` (a fresh query unless given), leaving out the defaults. */
export function writePaging(q: Paging, p = new URLSearchParams(), sizes: readonly number[] = PAGE_SIZES): URLSearchParams {
  if (q.page > 1) p.set('page', String(q.page));
  if (q.pageSize !== sizes[0]) p.set('pageSize', String(q.pageSize));
  return p;
}

/**
 * Paging kept in the URL (?page=3&pageSize=20), for a list with no other URL state. `set` takes
 * antd's pagination change: a new page size goes back to page 1.
 */
export function useUrlPaging(sizes: readonly number[] = PAGE_SIZES) {
  const url = useUrlState(
    (p) => readPaging(p, sizes),
    (q) => writePaging(q, undefined, sizes),
  );
  return {
    paging: url.value,
    set: (page: number, pageSize: number) => url.set({ page: pageSize === url.latest().pageSize ? page : 1, pageSize }),
  };
}
