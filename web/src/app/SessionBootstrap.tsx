import { useMeQuery } from '../session/useSession';

/** Refreshes the cached user from me/info on start whenever a token exists (spec §3). */
export function SessionBootstrap() {
  useMeQuery();
  return null;
}
