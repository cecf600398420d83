import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, json, startTestServer, type TestServer } from '../test/harness.js';
import { ConfigError, loadConfig } from './config.js';

describe('the HTTP shell', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('reports health with the database kind', async () => {
    const res = await get(s.app, '/healthz');
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ status: 'ok', database: process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite' });
  });

  it('answers unknown API paths with a JSON 404 under every service prefix', async () => {
    for (const url of ['/api/v1/nope', '/userapi/api/v2.1/x', '/infra/api/v2.1/sizes/zzz', '/order/api/v2.1/none', '/billing/api/v1/x']) {
      const res = await get(s.app, url);
      expect(res.statusCode, url).toBe(404);
      expect(json(res)).toMatchObject({ code: 40400001, message: '请求的接口不存在' });
    }
    const post = await s.app.inject({ method: 'POST', url: '/console/gpu-generic' });
    expect(post.statusCode).toBe(404);
  });

  it('serves an OpenAPI document generated from the schemas', async () => {
    const res = await get(s.app, '/docs/json');
    expect(res.statusCode).toBe(200);
    const doc = json(res);
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/userapi/api/v2.1/register', '/userapi/api/v2.1/login', '/api/v1/users/verify/smscode', '/userapi/api/v2.1/users/me/info']),
    );
    const smsBody = doc.paths['/api/v1/users/verify/smscode'].post.requestBody.content['application/json'].schema;
    expect(smsBody.required).toEqual(expect.arrayContaining(['mobile', 'scene']));
    expect((await get(s.app, '/docs')).statusCode).toBeLessThan(400);
  });

  it('turns an unexpected failure into 500 with the spec message and a request id, never a stack', async () => {
    s.app.log.level = 'silent';
    // Break the database under a live request.
    const res = await s.app.inject({
      method: 'GET',
      url: '/userapi/api/v2.1/users/me/info',
      headers: { authorization: 'Bearer x' },
    });
    expect(res.statusCode).toBe(401);
    const original = s.ctx.sessions.verify.bind(s.ctx.sessions);
    s.ctx.sessions.verify = async () => {
      throw new TypeError('boom at secret/internal/path.ts:42');
    };
    try {
      const broken = await get(s.app, '/userapi/api/v2.1/users/me/info', 'any');
      expect(broken.statusCode).toBe(500);
      const body = json(broken);
      expect(body.code).toBe(50000001);
      expect(body.message).toBe('服务器开了个小差，请稍后重试');
      expect(body.detail).toBe(`请求编号 ${broken.headers['x-request-id']}`);
      expect(broken.body).not.toContain('boom');
      expect(broken.body).not.toContain('.ts');
    } finally {
      s.ctx.sessions.verify = original;
    }
  });
});

describe('serving the console', () => {
  it('serves the built app for unknown non-API paths and its assets with long caching', async () => {
    const web = mkdtempSync(path.join(tmpdir(), 'console-web-'));
    mkdirSync(path.join(web, 'assets'), { recursive: true });
    writeFileSync(path.join(web, 'index.html'), '<!doctype html><title>算力云</title>');
    writeFileSync(path.join(web, 'assets', 'app-abc.js'), 'console.log(1)');
    const s = await startTestServer({ env: { WEB_DIST: web } });
    try {
      for (const url of ['/', '/console/gpu-generic', '/stats/cloud/gpu?x=1', '/no/such/page']) {
        const res = await get(s.app, url);
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['content-type']).toContain('text/html');
        expect(res.body).toContain('算力云');
        expect(res.headers['cache-control']).toBe('no-cache');
      }
      const asset = await get(s.app, '/assets/app-abc.js');
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['cache-control']).toContain('immutable');
    } finally {
      await s.close();
      rmSync(web, { recursive: true, force: true });
    }
  });
});

describe('serving the console precompressed', () => {
  const page = '<!doctype html><title>算力云</title><div id="root"></div>';
  const script = `console.log(${JSON.stringify('算力市场'.repeat(200))});`;
  let web: string;
  let s: TestServer;
  beforeAll(async () => {
    web = mkdtempSync(path.join(tmpdir(), 'console-web-'));
    mkdirSync(path.join(web, 'assets'), { recursive: true });
    // What the build writes: each file with its brotli and gzip copies beside it.
    const files = { 'index.html': page, [path.join('assets', 'app-abc.js')]: script };
    for (const [file, body] of Object.entries(files)) {
      writeFileSync(path.join(web, file), body);
      writeFileSync(path.join(web, `${file}.br`), brotliCompressSync(body));
      writeFileSync(path.join(web, `${file}.gz`), gzipSync(body));
    }
    s = await startTestServer({ env: { WEB_DIST: web } });
  });
  afterAll(async () => {
    await s.close();
    rmSync(web, { recursive: true, force: true });
  });
  const fetchAs = (url: string, acceptEncoding?: string) =>
    s.app.inject({ method: 'GET', url, headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });

  it('sends brotli to browsers that accept it, gzip to those that only take gzip, the plain file otherwise', async () => {
    const br = await fetchAs('/assets/app-abc.js', 'gzip, deflate, br, zstd');
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(script);
    const gz = await fetchAs('/assets/app-abc.js', 'gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(script);
    const plain = await fetchAs('/assets/app-abc.js');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe(script);
    for (const res of [br, gz, plain]) {
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('javascript');
      expect(res.headers.vary).toContain('accept-encoding');
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    }
  });

  it('sends the page of a client route compressed too, never cached stale', async () => {
    const br = await fetchAs('/stats/cloud/gpu?region=bj-b', 'br');
    expect(br.statusCode).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['content-type']).toContain('text/html');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(page);
    expect(br.headers['cache-control']).toBe('no-cache');
    expect(br.headers.vary).toContain('accept-encoding');
    const plain = await fetchAs('/console/gpu-generic');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe(page);
  });

  it('leaves the API alone: an unknown API path is still a JSON 404, not the page', async () => {
    const res = await fetchAs('/api/v1/nope', 'br, gzip');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(json(res)).toMatchObject({ code: 40400001 });
  });
});

describe('configuration', () => {
  it('stops with a message naming each bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ SESSION_SECRET: 'short' })).toThrow(/SESSION_SECRET/);
    expect(() => loadConfig({ SMS_DRIVER: 'aliyun' })).toThrow(/ALIYUN_SMS_ACCESS_KEY_ID/);
  });

  it('defaults to the embedded database with demo data, and PostgreSQL without', () => {
    const embedded = loadConfig({});
    expect(embedded.PORT).toBe(8080);
    expect(embedded.seedDemo).toBe(true);
    // The repository's data/, wherever npm runs the workspace script from.
    expect(embedded.dataDir).toBe(fileURLToPath(new URL('../../data', import.meta.url)));
    // A relative DATA_DIR is read from where the command was typed.
    expect(loadConfig({ DATA_DIR: 'mine', INIT_CWD: '/srv/console' }).dataDir).toBe('/srv/console/mine');
    const pg = loadConfig({ DATABASE_URL: 'postgres://u@h/db', PORT: '9000' });
    expect(pg.seedDemo).toBe(false);
    expect(pg.PORT).toBe(9000);
  });
});
