/** Mounting for the tests: the app's own providers, with queries that fail at once instead of retrying. */
import type { ReactNode } from 'react';
import { render } from '@testing-library/react';
import { QueryClient } from '@tanstack/react-query';
import { ConfigProvider } from 'antd';
import { createMemoryRouter, MemoryRouter, RouterProvider } from 'react-router';
import { AppProviders } from '../app/AppProviders';
import { createRoutes } from '../routes';

/** A failed request shows its error state at once: the tests assert it, not the retries. */
export const testQueryClient = () => new QueryClient({ defaultOptions: { queries: { retry: false } } });

/**
 * antd's styles are not generated in the tests (zeroRuntime): jsdom lays nothing out, and writing antd's CSS-in-JS
 * into the document (about 600 KB of rules per test file), then parsing it and matching every rule on each
 * getComputedStyle, was the larger part of a page test's time. What hides an element still counts for the role
 * queries where antd says it in the markup (hidden, aria-hidden, inline display: none).
 */
function TestProviders({ children }: { children: ReactNode }) {
  return (
    <ConfigProvider theme={{ zeroRuntime: true }}>
      <AppProviders queryClient={testQueryClient()}>{children}</AppProviders>
    </ConfigProvider>
  );
}

/** Mounts the whole app at `url`, as main.tsx does, on a memory router. */
export function renderApp(url: string) {
  const router = createMemoryRouter(createRoutes(), { initialEntries: [url] });
  render(
    <TestProviders>
      <RouterProvider router={router} />
    </TestProviders>,
  );
  return router;
}

/** Mounts one component inside the app's providers and a router (for its links). */
export function renderWithProviders(ui: ReactNode) {
  return render(
    <TestProviders>
      <MemoryRouter>{ui}</MemoryRouter>
    </TestProviders>,
  );
}
