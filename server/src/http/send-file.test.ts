import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorageDriver } from '../drivers/storage/local.js';
import { S3StorageDriver } from '../drivers/storage/s3.js';
import type { StorageDriver } from '../drivers/storage/types.js';
import { S3_TEST_KEY, startTestS3, type TestS3 } from '../../test/s3-server.js';
import { SIGNED_DOWNLOAD_MIN_BYTES, SIGNED_DOWNLOAD_SECONDS, sendFile } from './send-file.js';

let s3: TestS3;
let localDir: string;
const apps: FastifyInstance[] = [];
beforeAll(async () => {
  s3 = await startTestS3();
  localDir = mkdtempSync(path.join(tmpdir(), 'console-files-'));
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await s3.close();
  rmSync(localDir, { recursive: true, force: true });
});

/** A route serving stored files as the console's do: `?download=name` makes it a download. */
async function appOn(storage: StorageDriver) {
  const app = Fastify();
  app.get<{ Params: { '*': string }; Querystring: { download?: string } }>('/f/*', async (req, reply) => {
    const file = await storage.get(req.params['*']);
    if (!file) return reply.status(404).send();
    return sendFile(reply, file, { cacheControl: 'private, max-age=86400', attachment: req.query.download });
  });
  await app.ready();
  apps.push(app);
  return app;
}

const big = Buffer.alloc(SIGNED_DOWNLOAD_MIN_BYTES, 7);
big.write('LORA', 0);
const small = Buffer.from('a small file');

describe('sendFile', () => {
  it('answers a large download from S3 with a 302 to a short-lived signed URL that serves the file under its name', async () => {
    const storage = new S3StorageDriver({ endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, credentials: S3_TEST_KEY, forcePathStyle: true });
    await storage.put('loras/big.safetensors', big, 'application/octet-stream');
    await storage.put('loras/small.safetensors', small, 'application/octet-stream');
    const app = await appOn(storage);

    const res = await app.inject({ method: 'GET', url: '/f/loras/big.safetensors?download=my_lora-000003.safetensors' });
    expect(res.statusCode).toBe(302);
    expect(res.headers['cache-control']).toBe('private, no-store');
    expect(res.body).toBe('');
    const location = new URL(String(res.headers.location));
    expect(location.origin + location.pathname).toBe(`${s3.endpoint}/${s3.bucket}/loras/big.safetensors`);
    expect(location.searchParams.get('X-Amz-Expires')).toBe(String(SIGNED_DOWNLOAD_SECONDS));
    const fetched = await fetch(location);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-disposition')).toBe('attachment; filename="my_lora-000003.safetensors"');
    expect(fetched.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await fetched.arrayBuffer()).equals(big)).toBe(true);

    // Below the threshold, or shown inline (an <img> stays on the console's origin): streamed as before.
    const smallDownload = await app.inject({ method: 'GET', url: '/f/loras/small.safetensors?download=s.safetensors' });
    expect(smallDownload.statusCode).toBe(200);
    expect(smallDownload.headers['content-disposition']).toBe('attachment; filename="s.safetensors"');
    expect(smallDownload.rawPayload.equals(small)).toBe(true);
    const inline = await app.inject({ method: 'GET', url: '/f/loras/big.safetensors' });
    expect(inline.statusCode).toBe(200);
    expect(inline.headers['content-length']).toBe(String(big.length));
    expect(inline.rawPayload.equals(big)).toBe(true);
  });

  it('streams a large download from the local driver, which has no signed URLs', async () => {
    const storage = new LocalStorageDriver(localDir);
    await storage.put('loras/big.safetensors', big, 'application/octet-stream');
    const app = await appOn(storage);
    const res = await app.inject({ method: 'GET', url: '/f/loras/big.safetensors?download=x.safetensors' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toBe('attachment; filename="x.safetensors"');
    expect(res.rawPayload.equals(big)).toBe(true);
  });
});
