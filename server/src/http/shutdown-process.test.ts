/**
 * SIGTERM to the real server process (`npm start`'s src/main.ts): /readyz turns 503 at once while
 * /livez stays 200 through the drain; the listener then closes, a request that was in flight (its
 * body still arriving) is answered 200 with `Connection: close`, and the process exits 0.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { API } from '@console/contract';
import { createScratchDatabase } from '../../test/scratch-db.js';

const SERVER_DIR = fileURLToPath(new URL('../..', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Status of a GET on a new connection, or the connection error's code. */
function probe(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
      .on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe('the server process on SIGTERM', () => {
  it('drains, finishes the request in flight and exits 0', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'console-stop-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const scratch = process.env.TEST_DATABASE_URL ? await createScratchDatabase(process.env.TEST_DATABASE_URL, 'console_stop') : null;
    if (scratch) cleanups.push(() => scratch.drop());
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: SERVER_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: dataDir,
        WEB_DIST: path.join(dataDir, 'web'),
        ...(scratch ? { DATABASE_URL: scratch.url } : {}),
        SEED_DEMO: 'false',
        PORT: '0',
        MACHINE_PORT: '0',
        SSH_GATEWAY_PORT: '0',
        COMPUTE_DRIVER: 'simulated',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        SHUTDOWN_DRAIN_MS: '5000',
        SHUTDOWN_TIMEOUT_MS: '20000',
      },
    });
    cleanups.push(() => void (child.exitCode === null && child.kill('SIGKILL')));
    let log = '';
    child.stderr.on('data', (c: Buffer) => (log += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The console's own listener (the machines' listener says so too, with `listener`).
    const base = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        log += c.toString();
        for (const line of log.split('\n')) {
          const m = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(line);
          if (m && !line.includes('"listener"')) resolve(m[1]!);
        }
      });
      void exited.then((code) => reject(new Error(`server exited ${code} before listening:\n${log}`)));
    });
    expect(await probe(`${base}${API.readyz}`)).toBe(200);

    // A request in flight: its headers are in, its body is still on its way.
    const body = JSON.stringify({ mobile: '13900001111', scene: 'register' });
    const sock = net.connect(Number(new URL(base).port), '127.0.0.1');
    let answer = '';
    sock.on('data', (c: Buffer) => (answer += c.toString()));
    const answered = new Promise<void>((resolve) => sock.once('end', () => resolve()));
    await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
    sock.write(
      `POST ${API.smsCode} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );

    child.kill('SIGTERM');
    // At once: not ready, still alive.
    await vi.waitFor(async () => expect(await probe(`${base}${API.readyz}`)).toBe(503), { timeout: 4000, interval: 20 });
    expect(await probe(`${base}${API.livez}`)).toBe(200);
    // After the drain the listener closes; the request in flight is still answered.
    await vi.waitFor(async () => expect(await probe(`${base}${API.livez}`)).toBe('ECONNREFUSED'), { timeout: 20_000, interval: 100 });
    sock.write(body.slice(10));
    await answered;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(await exited, log).toBe(0);
  }, 400_000); // a fresh database's migrations first: seconds on an idle machine, minutes on a busy one
});
