import { useUrlState } from './useUrlState';

/** The page sizes a list offers; the first is the default. */
export const PAGE_SIZES: readonly number[] = [10, 20, 50];

export interface Paging {
  page: number;
  pageSize: number;
}

/**
 * The query parameters of one list's paging: `page`/`pageSize`, or `<key>Page`/`<key>PageSize` for
 * a second list on the same page, so the two do not move each other.
 */
function paramsOf(key?: string) {
  return key ? { page: `${key}Page`, pageSize: `${key}PageSize` } : { page: 'page', pageSize: 'pageSize' };
}

/** A list's page and page size from the URL query: page 1 and the first size when absent or off. */
export function readPaging(p: URLSearchParams, sizes: readonly number[] = PAGE_SIZES, key?: string): Paging {
  const names = paramsOf(key);
  const page = Number(p.get(names.page));
  const pageSize = Number(p.get(names.pageSize));
  return { page: Number.isInteger(page) && page > 0 ? page : 1, pageSize: sizes.includes(pageSize) ? pageSize : sizes[0]! };
}

/** Writes page and pageSize into `p` (a fresh query unless given), leaving out the defaults. */
export function writePaging(q: Paging, p = new URLSearchParams(), sizes: readonly number[] = PAGE_SIZES, key?: string): URLSearchParams {
  const names = paramsOf(key);
  p.delete(names.page);
  p.delete(names.pageSize);
  if (q.page > 1) p.set(names.page, String(q.page));
  if (q.pageSize !== sizes[0]) p.set(names.pageSize, String(q.pageSize));
  return p;
}

/** antd's pagination change as the next paging: a new page size goes back to page 1 (the old page may not exist). */
export function nextPaging(current: Paging, page: number, pageSize: number): Paging {
  return { page: pageSize === current.pageSize ? page : 1, pageSize };
}

/**
 * Paging kept in the URL (?page=3&pageSize=20) for a list whose other state is not in the URL or
 * is kept by someone else: the rest of the query (a tab, another list's paging) stays as it is.
 */
export function useUrlPaging({ key, sizes = PAGE_SIZES }: { key?: string; sizes?: readonly number[] } = {}) {
  const url = useUrlState(
    (p) => readPaging(p, sizes, key),
    (q, current) => writePaging(q, current, sizes, key),
  );
  return { paging: url.value, set: (next: Paging) => url.set(next) };
}
