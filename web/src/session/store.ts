import type { User } from '@console/contract';

/**
 * The client-side session of spec §3: token, user object and cash, each under its own
 * localStorage key. A tiny subscribable store so React (useSyncExternalStore), the router
 * guard and the request layer all read the same values.
 */
export const STORAGE_KEYS = { token: 'token', user: 'user', cash: 'cash' } as const;

export interface SessionSnapshot {
  token: string | null;
  user: User | null;
  cash: string | null;
}

const listeners = new Set<() => void>();
let snapshot: SessionSnapshot = read();

function read(): SessionSnapshot {
  return {
    token: localStorage.getItem(STORAGE_KEYS.token) || null,
    user: parseUser(localStorage.getItem(STORAGE_KEYS.user)),
    cash: localStorage.getItem(STORAGE_KEYS.cash) || null,
  };
}

function parseUser(raw: string | null): User | null {
  if (!raw) return null;
  try {
    return JSON.parse(raw) as User;
  } catch {
    // A corrupt cache must not break start-up; me/info will refill it.
    return null;
  }
}

function write(key: string, value: string | null) {
  if (value === null) localStorage.removeItem(key);
  else localStorage.setItem(key, value);
}

function publish() {
  snapshot = read();
  listeners.forEach((l) => l());
}

export const session = {
  get: (): SessionSnapshot => snapshot,
  getToken: () => snapshot.token,
  getUser: () => snapshot.user,
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  setToken(token: string) {
    // A different token may belong to another account: drop that account's cached data.
    if (token !== snapshot.token) {
      write(STORAGE_KEYS.user, null);
      write(STORAGE_KEYS.cash, null);
    }
    write(STORAGE_KEYS.token, token);
    publish();
  },
  setLogin(token: string, user: User) {
    write(STORAGE_KEYS.token, token);
    write(STORAGE_KEYS.user, JSON.stringify(user));
    write(STORAGE_KEYS.cash, null);
    publish();
  },
  setUser(user: User) {
    write(STORAGE_KEYS.user, JSON.stringify(user));
    publish();
  },
  setCash(cash: string | null) {
    write(STORAGE_KEYS.cash, cash);
    publish();
  },
  clear() {
    Object.values(STORAGE_KEYS).forEach((k) => write(k, null));
    publish();
  },
  /** Re-reads localStorage (tests, or another tab changed it). */
  reload: publish,
};

// Another tab logging in or out changes the same keys: follow it.
if (typeof window !== 'undefined') {
  window.addEventListener('storage', (e) => {
    if (e.key === null || (Object.values(STORAGE_KEYS) as string[]).includes(e.key)) publish();
  });
}
