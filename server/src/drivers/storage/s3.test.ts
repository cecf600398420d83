import { randomBytes } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '@console/contract';
import { AppError } from '../../http/errors.js';
import { S3_TEST_KEY, startTestS3, type TestS3 } from '../../../test/s3-server.js';
import { S3StorageDriver, type S3StorageOptions } from './s3.js';
import type { StorageDriver } from './types.js';

let s3: TestS3;
beforeAll(async () => {
  s3 = await startTestS3();
});
afterAll(async () => s3.close());

const driver = (o: Partial<S3StorageOptions> = {}) =>
  new S3StorageDriver({ endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, credentials: S3_TEST_KEY, forcePathStyle: true, ...o });

async function read(d: StorageDriver, key: string) {
  const o = await d.get(key);
  return o && { ...o, bytes: await buffer(o.body) };
}

/** The store's error, as a request through the console answers it. */
async function storeErrorOf(p: Promise<unknown>): Promise<AppError> {
  const e = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(e).toBeInstanceOf(AppError);
  expect((e as AppError).code).toBe(ERRORS.STORAGE_UNAVAILABLE.code);
  return e as AppError;
}

describe('S3StorageDriver against a real S3 server', () => {
  it('keeps binary bodies and their content type; a missing object reads as null; delete removes', async () => {
    const d = driver();
    const body = randomBytes(70_000);
    await d.put('datasets/u1/a.png', body, 'image/png');
    const got = await read(d, 'datasets/u1/a.png');
    expect(got).toMatchObject({ contentType: 'image/png', size: body.length });
    expect(got!.bytes.equals(body)).toBe(true);

    expect(await d.get('datasets/u1/none.png')).toBeNull();
    await d.delete('datasets/u1/a.png');
    expect(await d.get('datasets/u1/a.png')).toBeNull();
    // Deleting what is not there is no error (a retried clean-up).
    await d.delete('datasets/u1/a.png');
    await expect(d.get('../etc/passwd')).rejects.toThrow('unsafe storage key');
  });

  it('puts every key under S3_PREFIX, so consoles sharing a bucket do not see each other', async () => {
    const a = driver({ prefix: 'console-a/' });
    const b = driver({ prefix: 'console-b' });
    await a.put('logos/x.png', Buffer.from('from a'), 'image/png');
    expect(await b.get('logos/x.png')).toBeNull();
    expect((await read(driver(), 'console-a/logos/x.png'))!.bytes.toString()).toBe('from a');
  });

  it('answers a wrong secret, or a missing bucket, with STORAGE_UNAVAILABLE naming what the store said — never as a missing file', async () => {
    const d = driver();
    await d.put('k/x.bin', Buffer.from('x'), 'application/octet-stream');
    const wrong = driver({ credentials: { ...S3_TEST_KEY, secretAccessKey: 'not-the-secret' } });
    const put = await storeErrorOf(wrong.put('k/y.bin', Buffer.from('y'), 'application/octet-stream'));
    expect(put.detail).toContain('SignatureDoesNotMatch');
    expect(put.detail).toContain('HTTP 403');
    expect((await storeErrorOf(wrong.get('k/x.bin'))).detail).toContain('SignatureDoesNotMatch');
    expect(await d.get('k/y.bin')).toBeNull();

    const noBucket = driver({ bucket: 'no-such-bucket' });
    expect((await storeErrorOf(noBucket.get('k/x.bin'))).detail).toContain('NoSuchBucket');
  });

  it('answers a store that is not there with STORAGE_UNAVAILABLE', async () => {
    const gone = driver({ endpoint: 'http://127.0.0.1:1' });
    expect((await storeErrorOf(gone.get('k/x.bin'))).detail).toMatch(/对象存储读取失败（.+）/);
  });

  it('signs a URL that plain fetch reads, with the headers asked for; a tampered one is refused', async () => {
    const d = driver();
    const body = randomBytes(5000);
    await d.put('loras/j/e1.safetensors', body, 'application/octet-stream');
    const object = await d.get('loras/j/e1.safetensors');
    object!.body.destroy();
    const url = await object!.signedUrl!({
      expiresInSeconds: 60,
      contentType: 'application/x-lora',
      contentDisposition: 'attachment; filename="my_lora-000001.safetensors"',
    });
    expect(url.startsWith(`${s3.endpoint}/${s3.bucket}/loras/j/e1.safetensors?`)).toBe(true);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-lora');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="my_lora-000001.safetensors"');
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);

    const tampered = url.replace(/X-Amz-Signature=([0-9a-f])/, (_m, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`);
    expect((await fetch(tampered)).status).toBe(403);
    // Signed with the wrong secret: refused by the store.
    const forged = await driver({ credentials: { ...S3_TEST_KEY, secretAccessKey: 'nope' } }).signedUrl('loras/j/e1.safetensors', { expiresInSeconds: 60 });
    expect((await fetch(forged)).status).toBe(403);
  });

  it('a signed URL stops working once it expires', async () => {
    const d = driver();
    await d.put('loras/j/e2.safetensors', Buffer.from('lora'), 'application/octet-stream');
    const url = await d.signedUrl('loras/j/e2.safetensors', { expiresInSeconds: 1 });
    // X-Amz-Date has whole seconds: past 2 s the link is over whatever the fraction it was signed at.
    await sleep(2100);
    const res = await fetch(url);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('Request has expired');
  });

  it('signs for S3_PUBLIC_ENDPOINT when browsers reach the store elsewhere', async () => {
    const d = driver({ publicEndpoint: 'https://files.example.com' });
    const url = await d.signedUrl('a/b.bin', { expiresInSeconds: 60 });
    expect(url.startsWith(`https://files.example.com/${s3.bucket}/a/b.bin?`)).toBe(true);
    expect(url).toContain('X-Amz-Signature=');
  });
});
