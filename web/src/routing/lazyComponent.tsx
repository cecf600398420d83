import type { ComponentType } from 'react';
import type { LazyRouteFunction, RouteObject } from 'react-router';
import { chunkLoaded } from './chunkReload';
import { ErrorView } from './RouteError';

/**
 * A route `lazy` that never rejects. react-router 7 keeps a route whose lazy import failed marked
 * as still loading and, inside a parent route, renders nothing at all instead of the error
 * boundary. So a failed import resolves to a component that shows the failure (and reloads once
 * for a stale chunk, spec §2); "刷新重试" reloads the document, which retries the import.
 */
export function lazyComponent(
  load: () => Promise<{ default: ComponentType }>,
  /** Only a page that loads proves the reload worked; a layout loading says nothing about it. */
  { isPage }: { isPage: boolean },
): LazyRouteFunction<RouteObject> {
  return async () => {
    try {
      const module = await load();
      if (isPage) chunkLoaded();
      return { Component: module.default };
    } catch (error) {
      return { Component: () => <ErrorView error={error} /> };
    }
  };
}
