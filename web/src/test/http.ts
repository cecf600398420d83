/**
 * A fake server for the tests: handlers answer by URL in the contract's shapes, unknown paths get
 * the server's own 404, and every call is recorded so a test can assert what the page asked for.
 */
import { vi, type Mock } from 'vitest';

export const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** Answers a request, or passes it on (undefined) to the next handler. */
export type Handler = (url: URL, init?: RequestInit) => Response | undefined;

const notFound = () => json(404, { code: 40400001, message: '请求的接口不存在' });

/** Stubs fetch with `handlers`, asked in order; whatever none of them answers is a 404. */
export function fakeServer(...handlers: Handler[]): Mock<typeof fetch> {
  const mock = vi.fn<typeof fetch>(async (input, init) => {
    const url = new URL(String(input), 'http://localhost');
    for (const handler of handlers) {
      const res = handler(url, init);
      if (res) return res;
    }
    return notFound();
  });
  vi.stubGlobal('fetch', mock);
  return mock;
}

/** One list page as the server answers it, echoing the paging the request asked for. */
export const page = <T>(items: T[], url: URL, total = items.length) => ({
  items,
  total,
  page: Number(url.searchParams.get('page') ?? 1),
  pageSize: Number(url.searchParams.get('pageSize') ?? 10),
});

/** The URLs (path + query) fetched under `path`, whatever the method. */
export function calls(mock: Mock<typeof fetch>, path: string): URL[] {
  return mock.mock.calls.map(([input]) => new URL(String(input), 'http://localhost')).filter((u) => u.pathname === path);
}

/** The calls made to `path` with `method` (URL + parsed body). */
export function callsTo(mock: Mock<typeof fetch>, path: string, method = 'GET') {
  return mock.mock.calls
    .map(([input, init]) => ({ url: new URL(String(input), 'http://localhost'), init, method: init?.method ?? 'GET' }))
    .filter((c) => c.url.pathname === path && c.method === method)
    .map((c) => ({ ...c, body: c.init?.body ? (JSON.parse(String(c.init.body)) as unknown) : undefined }));
}
