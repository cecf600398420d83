import { describe, expect, it, vi } from 'vitest';
import { render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, Outlet, RouterProvider } from 'react-router';

const assigned = vi.hoisted(() => ({ urls: [] as string[] }));
vi.mock('./chunkReload', async (importOriginal) => {
  const real = await importOriginal<typeof import('./chunkReload')>();
  // The boundary's real reload would leave jsdom: record the target instead.
  return { ...real, reloadOnceAt: (target: string) => real.reloadOnceAt(target, sessionStorage, (u) => assigned.urls.push(u)) };
});
const { RouteError } = await import('./RouteError');
const { lazyComponent } = await import('./lazyComponent');
const { CHUNK_RELOAD_KEY, chunkLoaded, isChunkLoadError, reloadOnceAt } = await vi.importActual<typeof import('./chunkReload')>('./chunkReload');

const staleChunk = () => new TypeError('Failed to fetch dynamically imported module: /assets/BillPage-old.js');

describe('reloading after a stale chunk (spec §2)', () => {
  it('recognises the browsers’ failed dynamic import errors', () => {
    expect(isChunkLoadError(staleChunk())).toBe(true);
    expect(isChunkLoadError(new TypeError('Importing a module script failed.'))).toBe(true);
    expect(isChunkLoadError(new Error('x is undefined'))).toBe(false);
  });

  it('reloads once per target, never twice in a row', () => {
    const assign = vi.fn();
    expect(reloadOnceAt('/console/cost/bill', sessionStorage, assign)).toBe(true);
    expect(reloadOnceAt('/console/cost/bill', sessionStorage, assign)).toBe(false);
    expect(assign).toHaveBeenCalledTimes(1);
    expect(assign).toHaveBeenCalledWith('/console/cost/bill');
    // After a page loads fine, a later deploy may reload again.
    chunkLoaded();
    expect(sessionStorage.getItem(CHUNK_RELOAD_KEY)).toBeNull();
    expect(reloadOnceAt('/console/cost/bill', sessionStorage, assign)).toBe(true);
  });

  /** Like routes.tsx: a page under a root and a layout route, whose chunk is gone. */
  function openFailingPage() {
    const router = createMemoryRouter(
      [
        {
          id: 'root',
          Component: Outlet,
          ErrorBoundary: RouteError,
          children: [
            { path: '/', element: <p>首页</p> },
            {
              id: 'layout',
              lazy: lazyComponent(
                async () => ({
                  default: () => (
                    <main>
                      布局
                      <Outlet />
                    </main>
                  ),
                }),
                { isPage: false },
              ),
              children: [
                {
                  path: '/console/cost/bill',
                  loader: () => null,
                  ErrorBoundary: RouteError,
                  lazy: lazyComponent(() => Promise.reject(staleChunk()), { isPage: true }),
                },
              ],
            },
          ],
        },
      ],
      { initialEntries: ['/'] },
    );
    render(<RouterProvider router={router} />);
    return router.navigate('/console/cost/bill?page=2');
  }

  it('a page whose chunk fails reloads the browser at the target path', async () => {
    assigned.urls = [];
    await openFailingPage();
    await waitFor(() => expect(assigned.urls).toEqual(['/console/cost/bill?page=2']));
  });

  it('if it fails again after that reload, it shows an error instead of looping', async () => {
    assigned.urls = [];
    sessionStorage.setItem(CHUNK_RELOAD_KEY, '/console/cost/bill?page=2');
    await openFailingPage();
    expect(await screen.findByText('页面加载失败')).toBeTruthy();
    expect(screen.getByText('布局')).toBeTruthy(); // the layout stays around the error
    expect(assigned.urls).toEqual([]);
  });
});
