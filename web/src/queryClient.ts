import { QueryClient } from '@tanstack/react-query';

/**
 * One client for the app and the router loaders. No automatic retries: the request layer already
 * shows each failure, and a retry storm would repeat the toast; pages offer a 重试 button instead.
 */
export const queryClient = new QueryClient({
  defaultOptions: {
    queries: { retry: false, refetchOnWindowFocus: false },
    mutations: { retry: false },
  },
});
