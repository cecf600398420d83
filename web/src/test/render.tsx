/** Mounting for the tests: the app's own providers, with queries that fail at once instead of retrying. */
import type { ReactNode } from 'react';
import { render } from '@testing-library/react';
import { QueryClient } from '@tanstack/react-query';
import { createMemoryRouter, MemoryRouter, RouterProvider } from 'react-router';
import { AppProviders } from '../app/AppProviders';
import { createRoutes } from '../routes';

/** A failed request shows its error state at once: the tests assert it, not the retries. */
export const testQueryClient = () => new QueryClient({ defaultOptions: { queries: { retry: false } } });

/** Mounts the whole app at `url`, as main.tsx does, on a memory router. */
export function renderApp(url: string) {
  const router = createMemoryRouter(createRoutes(), { initialEntries: [url] });
  render(
    <AppProviders queryClient={testQueryClient()}>
      <RouterProvider router={router} />
    </AppProviders>,
  );
  return router;
}

/** Mounts one component inside the app's providers and a router (for its links). */
export function renderWithProviders(ui: ReactNode) {
  return render(
    <AppProviders queryClient={testQueryClient()}>
      <MemoryRouter>{ui}</MemoryRouter>
    </AppProviders>,
  );
}
