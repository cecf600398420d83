/**
 * A replica's way out on a listening server (buildApp + listen): readiness flips to 503 at once
 * while liveness stays 200 and requests are still served with `Connection: close`; then a request in
 * flight finishes with 200, the web terminal's WebSocket is told 1012, a live stream ends, and the
 * close completes. And the readiness checks themselves, and the configuration of the stop.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { API, SOCKET_RESTART, type Readiness } from '@console/contract';
import { buildApp } from '../app.js';
import { ManualClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import type { Database } from '../db/client.js';
import { openTestDatabase, type TestServer } from '../../test/harness.js';
import { DELAYS_ENV, instanceKit } from '../../test/instances-kit.js';
import { Lifecycle } from './lifecycle.js';
import { registerProbes } from './probes.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A plain HTTP GET on a new connection: status, headers, body. */
function fetchRaw(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** The console on a port, with a test-only slow route and a live stream registered before it starts. */
async function listening() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-test-'));
  const { database, drop } = await openTestDatabase();
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    WEB_DIST: path.join(dataDir, 'web'),
    DEV_TOOLS: 'true',
    COMPUTE_DRIVER: 'simulated',
    COMPUTE_SIM_DELAYS: DELAYS_ENV,
    SSH_GATEWAY_PORT: '0',
    MACHINE_PORT: '0',
  });
  const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
  const { app, ctx, lifecycle } = await buildApp({ config, database, clock, logger: false });
  const slow = { started: vi.fn(), release: () => {} };
  const released = new Promise<void>((resolve) => (slow.release = resolve));
  app.get('/test/slow', async () => {
    slow.started();
    await released;
    return { done: true };
  });
  // As the training progress route: nothing marks it; the browser's EventSource asks for text/event-stream.
  app.get('/test/stream', async (_req, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', connection: 'keep-alive' });
    reply.raw.write('data: first\n\n');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  let closed = false;
  const s: TestServer = {
    app,
    ctx,
    clock,
    dataDir,
    async close() {
      if (!closed) await app.close();
      closed = true;
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  cleanups.push(() => s.close());
  return { s, lifecycle, base, slow, markClosed: () => (closed = true) };
}

describe('stopping a replica', () => {
  it('turns unready at once, serves through the drain, then finishes what is in flight and tells WebSockets to reconnect', async () => {
    const { s, lifecycle, base, slow, markClosed } = await listening();
    const kit = instanceKit(() => s);
    // The simulated machines get a shell (a host command standing in for it) so the web terminal opens.
    Object.assign(s.ctx.drivers.compute, { shell: () => ({ file: '/bin/sh', args: ['-c', 'echo shell-up; sleep 60'], env: {} }) });
    const u = await kit.fundedUser('500');
    const { id } = await kit.running(u.token);

    const before = await fetchRaw(`${base}${API.readyz}`);
    expect(before.status, before.body).toBe(200);
    expect(JSON.parse(before.body)).toMatchObject({ status: 'ready', checks: { database: 'ok', migrations: 'ok', stopping: false }, reasons: [] });

    // A terminal open, a live stream open, a request in flight.
    const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceTerminal.replace(':id', id)}`, { headers: { authorization: `Bearer ${u.token}` } });
    const closedWith = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data, binary) => !binary && JSON.parse(data.toString()).type === 'ready' && resolve());
      ws.once('error', reject);
    });
    const stream = await new Promise<{ ended: Promise<string> }>((resolve, reject) => {
      http
        .get(`${base}/test/stream`, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
          let body = '';
          const ended = new Promise<string>((done) => res.on('end', () => done(body)));
          res.on('data', (c: Buffer) => {
            body += c.toString();
            if (body.includes('first')) resolve({ ended });
          });
        })
        .on('error', reject);
    });
    // An idle keep-alive connection (a load balancer's pool) must not hold the close.
    const keepAlive = new http.Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) =>
      http.get(`${base}${API.livez}`, { agent: keepAlive }, (res) => res.resume().on('end', resolve)).on('error', reject),
    );
    expect(Object.values(keepAlive.freeSockets).flat()).toHaveLength(1);
    const inFlight = fetchRaw(`${base}/test/slow`);
    await vi.waitFor(() => expect(slow.started).toHaveBeenCalled());

    const stopped = lifecycle.stop(s.app, { drainMs: 1500, timeoutMs: 20_000 });
    markClosed();
    // During the drain: unready, alive, and still serving — each response closing its connection.
    const ready = await fetchRaw(`${base}${API.readyz}`);
    expect(ready.status).toBe(503);
    const body = JSON.parse(ready.body) as Readiness;
    expect(body).toMatchObject({ status: 'unready', checks: { stopping: true, database: 'ok' } });
    expect(body.reasons.join()).toContain('正在停止');
    const live = await fetchRaw(`${base}${API.livez}`);
    expect(live.status).toBe(200);
    expect(JSON.parse(live.body)).toEqual({ status: 'alive' });
    expect(live.headers.connection).toBe('close');
    expect((await fetchRaw(`${base}/healthz`)).status).toBe(200);

    // The listener closes: the terminal is told to reconnect, the live stream ends.
    expect(await closedWith).toEqual({ code: SOCKET_RESTART.code, reason: SOCKET_RESTART.reason });
    expect(await stream.ended).toContain('data: first');
    // The request that was in flight when the close began still gets its answer.
    slow.release();
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toEqual({ done: true });
    expect(answered.headers.connection).toBe('close');
    // Nothing had to be cut: the idle connection was closed, not waited for.
    expect(await stopped).toBe(true);
    keepAlive.destroy();
    await expect(fetchRaw(`${base}${API.livez}`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  }, 60_000);

  it('cuts what is still running when the timeout runs out', async () => {
    const { s, lifecycle, base, slow, markClosed } = await listening();
    const inFlight = fetchRaw(`${base}/test/slow`).catch((e: NodeJS.ErrnoException) => e.code);
    await vi.waitFor(() => expect(slow.started).toHaveBeenCalled());
    markClosed();
    expect(await lifecycle.stop(s.app, { drainMs: 0, timeoutMs: 300 })).toBe(false);
    expect(await inFlight).toBe('ECONNRESET');
    slow.release();
  });
});

describe('readiness', () => {
  async function probes(execute: (query: string) => Promise<unknown>, opts: { stopping?: boolean } = {}) {
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    const lifecycle = new Lifecycle();
    lifecycle.register(app);
    const database = { db: { execute }, kind: 'postgres', close: async () => {} } as unknown as Database;
    await registerProbes(app, { database, lifecycle, dbTimeoutMs: 100 });
    await app.ready();
    cleanups.push(() => app.close());
    if (opts.stopping) lifecycle.beginStopping();
    const res = await app.inject({ method: 'GET', url: API.readyz });
    return { status: res.statusCode, body: JSON.parse(res.body) as Readiness, live: (await app.inject({ method: 'GET', url: API.livez })).statusCode };
  }
  const applied = (at: number) => async () => ({ rows: [{ at: String(at) }] });

  it('is ready when the database answers and has every migration of this version', async () => {
    expect(await probes(applied(Number.MAX_SAFE_INTEGER))).toMatchObject({ status: 200, body: { status: 'ready', reasons: [] } });
  });

  it('names a database that does not answer in time or refuses, while liveness stays 200', async () => {
    const hung = await probes(() => new Promise(() => {}));
    expect(hung).toMatchObject({ status: 503, live: 200, body: { status: 'unready', checks: { database: 'timeout', migrations: 'unknown' } } });
    expect(hung.body.reasons).toEqual(['数据库在 100 毫秒内没有应答']);
    const down = await probes(async () => {
      throw new Error('connect ECONNREFUSED 10.0.0.5:5432');
    });
    expect(down).toMatchObject({ status: 503, live: 200, body: { checks: { database: 'down' } } });
    expect(down.body.reasons[0]).toContain('ECONNREFUSED');
  });

  it('is not ready on a database behind this version’s migrations, nor while stopping', async () => {
    const behind = await probes(applied(1));
    expect(behind).toMatchObject({ status: 503, body: { checks: { database: 'ok', migrations: 'pending' } } });
    expect(behind.body.reasons[0]).toContain('数据库迁移尚未全部执行');
    const stopping = await probes(applied(Number.MAX_SAFE_INTEGER), { stopping: true });
    expect(stopping).toMatchObject({ status: 503, live: 200, body: { checks: { stopping: true, migrations: 'ok' } } });
  });
});

describe('the stop configuration', () => {
  const env = { COMPUTE_DRIVER: 'simulated' };
  it('drains 5 s behind a load balancer, not at all on a loopback HOST, and keeps the drain below the timeout', () => {
    expect(loadConfig({ ...env, HOST: '0.0.0.0', DEV_TOOLS: 'true' }).shutdownDrainMs).toBe(5000);
    expect(loadConfig({ ...env, HOST: '127.0.0.1' }).shutdownDrainMs).toBe(0);
    expect(loadConfig({ ...env, SHUTDOWN_DRAIN_MS: '1200' })).toMatchObject({ shutdownDrainMs: 1200, SHUTDOWN_TIMEOUT_MS: 25_000 });
    expect(() => loadConfig({ ...env, SHUTDOWN_DRAIN_MS: '30000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, SHUTDOWN_TIMEOUT_MS: 'soon' })).toThrow(/SHUTDOWN_TIMEOUT_MS/);
  });
});
