/**
 * After a deploy, an open tab asks for page chunks that no longer exist. Spec §2: reload the
 * browser at the target path. Only once per target (remembered in sessionStorage), so a chunk
 * that is really broken shows an error instead of reloading forever.
 */
export const CHUNK_RELOAD_KEY = 'chunkReloadTarget';

export function isChunkLoadError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return /dynamically imported module|Importing a module script failed|Unable to preload|ChunkLoadError|Loading chunk/i.test(`${error.name} ${error.message}`);
}

/** Reloads at `target` unless that was already tried; returns whether it reloaded. */
export function reloadOnceAt(
  target: string,
  storage: Pick<Storage, 'getItem' | 'setItem'> = sessionStorage,
  assign: (url: string) => void = (url) => window.location.assign(url),
): boolean {
  if (storage.getItem(CHUNK_RELOAD_KEY) === target) return false;
  storage.setItem(CHUNK_RELOAD_KEY, target);
  assign(target);
  return true;
}

/** A page loaded fine: a later deploy may again trigger one reload. */
export function chunkLoaded(storage: Pick<Storage, 'removeItem'> = sessionStorage) {
  storage.removeItem(CHUNK_RELOAD_KEY);
}
