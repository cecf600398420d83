import { PAGE, type PermissionFlag } from '@console/contract';
import { childHome, isAllowed, isCertified, type SessionUser } from './permissions';

/** What the route table says about a page (spec §2/§6). */
export interface RouteMeta {
  requireAuth?: boolean;
  /** Child accounts need any one of these flags. */
  perms?: readonly PermissionFlag[];
  /** Needs a certified account (spec §4: creating a dataset). */
  requireCert?: boolean;
  /** No child account opens it, whatever its flags (account management, products spec §6 grants no flag for). */
  mainOnly?: boolean;
  /** The operator's area. */
  requireOperator?: boolean;
}

export interface GuardInput {
  /** The location being opened. */
  pathname: string;
  search: string;
  token: string | null;
  user: SessionUser | null;
  /** The in-app location being left; null when the page is the first one loaded. */
  from: string | null;
}

export type GuardDecision =
  | { type: 'allow' }
  | { type: 'redirect'; to: string; storeToken?: string }
  /** Stay on (go back to) `to` and show the real-name dialog of spec §5. */
  | { type: 'certPrompt'; to: string };

const ALLOW: GuardDecision = { type: 'allow' };
const AUTH_PAGES: readonly string[] = [PAGE.login, PAGE.register];

/**
 * The navigation rules of spec §4 and the child routing of spec §6, as one pure function:
 * the router's loader feeds it the session and performs what it decides.
 */
export function guard(input: GuardInput, metaFor: (pathname: string) => RouteMeta): GuardDecision {
  const { pathname, search, user } = input;
  const query = new URLSearchParams(search);

  // An embedding page or a login callback hands over a session as ?token=: keep it, and
  // re-enter without it so the token does not linger in history, bookmarks or Referer.
  const queryToken = query.get('token');
  if (queryToken) {
    query.delete('token');
    return { type: 'redirect', to: withQuery(pathname, query), storeToken: queryToken };
  }

  const meta = metaFor(pathname);
  if (!input.token) {
    if (!meta.requireAuth) return ALLOW;
    return { type: 'redirect', to: `${PAGE.login}?redirect=${encodeURIComponent(pathname + search)}` };
  }

  if (AUTH_PAGES.includes(normalize(pathname))) {
    const target = safeRedirect(query.get('redirect')) ?? PAGE.cloudGpu;
    return { type: 'redirect', to: routeForUser(target, user, metaFor) };
  }

  if (user && !isAllowed(user, meta.perms)) return { type: 'redirect', to: childHome(user) };
  if (user?.isChild && (meta.mainOnly || meta.requireOperator)) return { type: 'redirect', to: childHome(user) };
  if (user && meta.requireOperator && !user.isOperator) return { type: 'redirect', to: PAGE.gpuGeneric };

  if (meta.requireCert && !isCertified(user)) {
    // Opened directly there is nothing to go back to: send the visitor to the GPU page.
    return input.from ? { type: 'certPrompt', to: input.from } : { type: 'redirect', to: PAGE.cloudGpu };
  }
  return ALLOW;
}

/** A target is only followed if the account may open it; a child is otherwise sent home. */
function routeForUser(target: string, user: SessionUser | null, metaFor: (pathname: string) => RouteMeta): string {
  if (!user) return target;
  const targetPath = new URL(target, SAME_SITE).pathname;
  return isAllowed(user, metaFor(targetPath).perms) ? target : childHome(user);
}

const SAME_SITE = 'http://same-site.invalid';

/**
 * The `redirect` query value if it is a same-site relative path, else null. Rejects
 * protocol-relative (`//evil`, `/\evil`), absolute and scheme URLs, control characters, and the
 * login pages themselves (which would loop).
 */
export function safeRedirect(raw: string | null | undefined): string | null {
  if (!raw || !raw.startsWith('/') || raw.startsWith('//') || raw.includes('\\')) return null;
  // eslint-disable-next-line no-control-regex -- rejecting control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw, SAME_SITE);
  } catch {
    return null;
  }
  if (url.origin !== SAME_SITE) return null;
  if (AUTH_PAGES.includes(normalize(url.pathname))) return null;
  return url.pathname + url.search + url.hash;
}

function normalize(pathname: string): string {
  return pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
}

function withQuery(pathname: string, query: URLSearchParams): string {
  const rest = query.toString();
  return rest ? `${pathname}?${rest}` : pathname;
}
