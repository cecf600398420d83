import { useMatches } from 'react-router';

export interface RouteHandle {
  title?: string;
}

/** The title of the deepest matched route that has one (titles live in routes.tsx). */
export function useRouteTitle(): string | undefined {
  const matches = useMatches();
  for (let i = matches.length - 1; i >= 0; i--) {
    const title = (matches[i]!.handle as RouteHandle | undefined)?.title;
    if (title) return title;
  }
  return undefined;
}
