/**
 * A real S3 server for tests (@20minutes/s3rver: a Node implementation of the S3 REST API that checks
 * SigV4 signatures, presigned URLs' included, and their expiry), on a loopback port, its objects in a
 * scratch folder. s3rver 3.x is not used: it accepts any SigV4 signature.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from '@20minutes/s3rver';

/** The one account s3rver knows. */
export const S3_TEST_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** STORAGE_DRIVER=s3 and its settings for loadConfig, path style. */
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export async function startTestS3(bucket = 'console'): Promise<TestS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'console-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    allowMismatchedSignatures: false,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: (extra = {}) => ({
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: S3_TEST_KEY.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3_TEST_KEY.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
      ...extra,
    }),
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
