import { redirect, type LoaderFunctionArgs } from 'react-router';
import { showRealNameDialog } from '../api/client';
import { getApiUi } from '../api/ui';
import { queryClient } from '../queryClient';
import { meQueryOptions } from '../session/useSession';
import { session } from '../session/store';
import { guard, type RouteMeta } from './guard';

/** The location the user is leaving; null while the first page is still loading. */
let currentLocation: string | null = null;

/** Keeps `currentLocation` in step with the router (called once where the router is created). */
export function trackLocation(router: {
  subscribe(fn: (state: { navigation: { state: string }; location: { pathname: string; search: string } }) => void): () => void;
}) {
  return router.subscribe((state) => {
    if (state.navigation.state === 'idle') currentLocation = state.location.pathname + state.location.search;
  });
}

/**
 * The router side of the guard: gathers the session, asks guard(), and does what it says.
 * Runs as the loader of every page, so a page never renders before its rules were checked.
 */
export function makeGuardLoader(metaFor: (pathname: string) => RouteMeta) {
  return async ({ request }: LoaderFunctionArgs) => {
    const url = new URL(request.url);
    // Child routing needs the flags: fetch the user once when only a token is known (e.g. ?token=).
    if (session.getToken() && !session.getUser()) {
      await queryClient.fetchQuery(meQueryOptions(session.getToken())).catch(() => undefined);
    }
    const decision = guard(
      {
        pathname: url.pathname,
        search: url.search,
        token: session.getToken(),
        user: session.getUser(),
        from: currentLocation,
      },
      metaFor,
    );
    if (decision.type === 'allow') return null;
    if (decision.type === 'certPrompt') showRealNameDialog();
    if (decision.type === 'redirect' && decision.storeToken) session.setToken(decision.storeToken);
    // One message however many redirects a click causes (the key replaces an open one).
    if (decision.type === 'redirect' && decision.notice) getApiUi().warning(decision.notice, 'child-redirect');
    throw redirect(decision.to);
  };
}
