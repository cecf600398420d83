import type { Readable } from 'node:stream';

/** How a signed link answers: for how long it works, and the headers the store sends with the bytes. */
export interface SignedUrlOptions {
  expiresInSeconds: number;
  contentType?: string;
  /** e.g. `attachment; filename="x.safetensors"`: the browser saves the file under that name. */
  contentDisposition?: string;
}

/** A stored object being read. */
export interface StoredObject {
  body: Readable;
  contentType: string;
  size: number;
  /**
   * A short-lived URL the browser may fetch this object from, straight from the store (drivers whose
   * store browsers can reach: s3). Whoever is handed it has passed the console's access checks.
   */
  signedUrl?: (o: SignedUrlOptions) => Promise<string>;
}

/** Object storage: files under DATA_DIR by default; an S3-compatible store for replicas (s3.ts). */
export interface StorageDriver {
  readonly name: string;
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** null when the object does not exist. */
  get(key: string): Promise<StoredObject | null>;
  delete(key: string): Promise<void>;
  /** See StoredObject.signedUrl; absent where the store is not reachable by browsers (local). */
  signedUrl?(key: string, o: SignedUrlOptions): Promise<string>;
}

/** Keys are ours (never user input), but refuse traversal anyway. */
export function assertSafeKey(key: string) {
  if (!/^[a-z0-9][a-z0-9/_.-]*$/i.test(key) || key.includes('..')) throw new Error(`unsafe storage key: ${key}`);
}
