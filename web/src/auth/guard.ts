import { PAGE, type PermissionFlag } from '@console/contract';
import { childHome, isAllowed, isCertified, type SessionUser } from './permissions';

/** What the route table says about a page (spec §2/§6). */
export interface RouteMeta {
  /** The page's name, for the message that tells a child why it was sent elsewhere. */
  title?: string;
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
  /** `notice`: why a child was sent elsewhere (spec §4 routes it by its flags), shown as a message. */
  | { type: 'redirect'; to: string; storeToken?: string; notice?: string }
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
    const asked = safeRedirect(query.get('redirect'));
    // Nothing asked for: a child simply goes home, no message.
    if (!asked && user?.isChild) return { type: 'redirect', to: childHome(user) };
    return routeForUser(asked ?? PAGE.cloudGpu, user, metaFor);
  }

  if (user && !isAllowed(user, meta.perms)) return childRedirect(user, meta, metaFor);
  if (user?.isChild && (meta.mainOnly || meta.requireOperator)) return childRedirect(user, meta, metaFor);
  if (user && meta.requireOperator && !user.isOperator) return { type: 'redirect', to: PAGE.gpuGeneric };

  if (meta.requireCert && !isCertified(user)) {
    // Opened directly there is nothing to go back to: send the visitor to the GPU page.
    return input.from ? { type: 'certPrompt', to: input.from } : { type: 'redirect', to: PAGE.cloudGpu };
  }
  return ALLOW;
}

/** A target is only followed if the account may open it; a child is otherwise sent home, and told why. */
function routeForUser(target: string, user: SessionUser | null, metaFor: (pathname: string) => RouteMeta): GuardDecision {
  if (!user) return { type: 'redirect', to: target };
  const meta = metaFor(new URL(target, SAME_SITE).pathname);
  const closed = !isAllowed(user, meta.perms) || (user.isChild && (meta.mainOnly || meta.requireOperator));
  return closed ? childRedirect(user, meta, metaFor) : { type: 'redirect', to: target };
}

/** A child sent home from a page its flags do not open (spec §4), with a message saying so. */
function childRedirect(user: SessionUser, meta: RouteMeta, metaFor: (pathname: string) => RouteMeta): GuardDecision {
  const to = childHome(user);
  const page = meta.title ? `「${meta.title}」` : '该页面';
  const home = metaFor(to).title ?? to;
  return { type: 'redirect', to, notice: `子账号无权访问${page}，已为您跳转到「${home}」（如需权限请联系主账号开通）` };
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
