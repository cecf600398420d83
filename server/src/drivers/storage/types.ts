import type { Readable } from 'node:stream';

/** Object storage: files under DATA_DIR by default; an S3-compatible store in production. */
export interface StorageDriver {
  readonly name: string;
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** null when the object does not exist. */
  get(key: string): Promise<{ body: Readable; contentType: string; size: number } | null>;
  delete(key: string): Promise<void>;
}

/** Keys are ours (never user input), but refuse traversal anyway. */
export function assertSafeKey(key: string) {
  if (!/^[a-z0-9][a-z0-9/_.-]*$/i.test(key) || key.includes('..')) throw new Error(`unsafe storage key: ${key}`);
}
