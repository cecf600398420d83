import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.js';
import { makeStorageDriver } from './index.js';

const s3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'console-files', S3_ACCESS_KEY_ID: 'AK', S3_SECRET_ACCESS_KEY: 'SK' };

describe('STORAGE_DRIVER and the S3_* settings', () => {
  it('is the local driver unless asked, and s3 with its settings', async () => {
    expect((await makeStorageDriver(loadConfig({}))).name).toBe('local');
    const c = loadConfig({ ...s3, S3_ENDPOINT: 'http://minio.local:9000', S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: 'console-a' });
    expect(c).toMatchObject({ S3_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: true, S3_PREFIX: 'console-a' });
    expect((await makeStorageDriver(c)).name).toBe('s3');
    // Without keys: the SDK's own credential chain.
    expect((await makeStorageDriver(loadConfig({ STORAGE_DRIVER: 's3', S3_BUCKET: 'b-1' }))).name).toBe('s3');
  });

  it('stops the server naming the variable that is missing or wrong', () => {
    expect(() => loadConfig({ STORAGE_DRIVER: 's3' })).toThrow(/STORAGE_DRIVER=s3 时必须设置 S3_BUCKET/);
    expect(() => loadConfig({ ...s3, S3_SECRET_ACCESS_KEY: '' })).toThrow(/必须设置 S3_SECRET_ACCESS_KEY/);
    expect(() => loadConfig({ STORAGE_DRIVER: 'nfs' })).toThrow(/STORAGE_DRIVER/);
    for (const [name, value] of [
      ['S3_BUCKET', 'Console_Files'],
      ['S3_ENDPOINT', 'minio:9000'],
      ['S3_PUBLIC_ENDPOINT', 'ftp://files.example.com'],
      ['S3_REGION', 'US East'],
      ['S3_FORCE_PATH_STYLE', 'maybe'],
      ['S3_PREFIX', '../other'],
    ] as const) {
      expect(() => loadConfig({ ...s3, [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => loadConfig({ ...s3, [name]: value })).toThrow(new RegExp(`${name}: `));
    }
  });
});
