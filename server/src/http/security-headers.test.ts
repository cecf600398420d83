/**
 * No page of this origin can be framed by another site (clickjacking of the pay dialog), pages
 * run only this origin's scripts, and every response carries nosniff and a referrer policy.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, startTestServer, type TestServer } from '../../test/harness.js';
import { BASE, sandboxWiring } from '../../test/payment-sandbox.js';

/** The policy's directives by name. */
function csp(res: LightMyRequestResponse): Record<string, string[]> {
  const header = String(res.headers['content-security-policy'] ?? '');
  return Object.fromEntries(
    header
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

function expectNoFraming(res: LightMyRequestResponse, what: string) {
  expect(res.headers['x-frame-options'], what).toBe('DENY');
  expect(csp(res)['frame-ancestors'], what).toEqual(["'none'"]);
  expect(res.headers['x-content-type-options'], what).toBe('nosniff');
  expect(res.headers['referrer-policy'], what).toBe('strict-origin-when-cross-origin');
}

/** A page's policy: scripts of this origin only, no plugins, nothing from elsewhere. */
function expectPagePolicy(res: LightMyRequestResponse, what: string) {
  const p = csp(res);
  expect(p['default-src'], what).toEqual(["'self'"]);
  expect(p['script-src']?.[0], what).toBe("'self'");
  expect(p['script-src'], what).not.toContain("'unsafe-inline'");
  expect(p['script-src'], what).not.toContain("'unsafe-eval'");
  // antd's CSS-in-JS writes <style> elements; QR codes and previews are data: and blob: images.
  expect(p['style-src'], what).toEqual(["'self'", "'unsafe-inline'"]);
  expect(p['img-src'], what).toEqual(["'self'", 'data:', 'blob:']);
  expect(p['connect-src'], what).toEqual(["'self'"]);
  expect(p['object-src'], what).toEqual(["'none'"]);
}

describe('security headers', () => {
  let web: string;
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  const page = '<!doctype html><title>算力云</title><script type="module" src="/assets/index-abc.js"></script>';
  beforeAll(async () => {
    web = mkdtempSync(path.join(tmpdir(), 'console-web-'));
    mkdirSync(path.join(web, 'assets'), { recursive: true });
    writeFileSync(path.join(web, 'index.html'), page);
    writeFileSync(path.join(web, 'index.html.br'), brotliCompressSync(page));
    writeFileSync(path.join(web, 'assets', 'index-abc.js'), 'console.log(1)');
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    s = await startTestServer({ env: { WEB_DIST: web, PUBLIC_BASE_URL: BASE }, drivers: { payment: w.drivers } });
    clock = s.clock;
    w.wiring.app = s.app;
  });
  afterAll(async () => {
    await s.close();
    rmSync(web, { recursive: true, force: true });
  });

  it('console pages and the index fallback: no framing by anyone, this origin’s scripts only', async () => {
    for (const url of ['/', '/login', '/stats/cloud/gpu?region=bj-b', '/console/gpu-generic', '/no/such/page']) {
      const res = await get(s.app, url);
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toContain('算力云');
      expectNoFraming(res, url);
      expectPagePolicy(res, url);
    }
    const br = await s.app.inject({ method: 'GET', url: '/finance', headers: { 'accept-encoding': 'br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expectNoFraming(br, 'brotli page');
    expectPagePolicy(br, 'brotli page');
  });

  it('API answers, assets and errors carry them too, with a policy that loads nothing', async () => {
    for (const url of ['/healthz', '/userapi/api/v2.1/users/me/info', '/api/v1/nope', '/assets/index-abc.js', '/infra/api/v2.1/regions']) {
      const res = await get(s.app, url);
      expectNoFraming(res, url);
      expect(csp(res)['default-src'], url).toEqual(["'none'"]);
    }
    const bad = await s.app.inject({ method: 'POST', url: '/userapi/api/v2.1/login', payload: '{', headers: { 'content-type': 'application/json' } });
    expect(bad.statusCode).toBe(400);
    expectNoFraming(bad, 'bad JSON');
  });

  it('the API documentation at /docs is a page like the console’s, and its UI files are served', async () => {
    const docs = await s.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
    expectNoFraming(docs, '/docs/');
    expectPagePolicy(docs, '/docs/');
    // Its scripts are files of this origin, which script-src 'self' allows.
    const scripts = [...docs.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/src="\.?\/?(docs\/)?static\//);
      expect(body!.trim()).toBe('');
    }
    const init = await get(s.app, '/docs/static/swagger-initializer.js');
    expect(init.statusCode).toBe(200);
  });

  it('the sandbox scan page cannot be framed over the console, and runs exactly its own inline script', async () => {
    const { qrContent } = await w.drivers.Wechat.precreate({
      outTradeNo: 'CSP1',
      amount: 500_000n,
      subject: '余额充值',
      expiresAt: new Date(s.clock.now().getTime() + 15 * 60_000),
      notifyUrl: `${BASE}/billing/api/v1/notify/wechat`,
    });
    const res = await get(s.app, new URL(qrContent).pathname);
    expect(res.statusCode).toBe(200);
    expectNoFraming(res, 'scan page');
    expectPagePolicy(res, 'scan page');
    const inline = [...res.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toHaveLength(1);
    const hash = `'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`;
    expect(csp(res)['script-src']).toEqual(["'self'", hash]);
  });
});
