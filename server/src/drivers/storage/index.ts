import path from 'node:path';
import type { Config } from '../../config.js';
import { LocalStorageDriver } from './local.js';
import type { StorageDriver } from './types.js';

export type { SignedUrlOptions, StorageDriver, StoredObject } from './types.js';

/**
 * STORAGE_DRIVER: files under DATA_DIR/files (one process), or the S3-compatible bucket every replica shares.
 * The AWS SDK is loaded only when chosen: importing it costs a quarter of a second, paid by every test file and every start.
 */
export async function makeStorageDriver(config: Config): Promise<StorageDriver> {
  if (config.STORAGE_DRIVER === 'local') return new LocalStorageDriver(path.join(config.dataDir, 'files'));
  const { S3StorageDriver } = await import('./s3.js');
  return new S3StorageDriver({
    endpoint: config.S3_ENDPOINT,
    publicEndpoint: config.S3_PUBLIC_ENDPOINT,
    region: config.S3_REGION,
    // loadConfig refuses STORAGE_DRIVER=s3 without a bucket, and one key without the other.
    bucket: config.S3_BUCKET!,
    credentials:
      config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY }
        : undefined,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    prefix: config.S3_PREFIX,
  });
}
