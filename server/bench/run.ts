/**
 * `npm run bench`: throughput of the foundation's hot paths as ratios against a bare route
 * measured in the same run on the same server, so the numbers mean the same on any machine.
 * Bounded: a fixed number of requests per case, loopback only.
 */
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { seedDemo, DEMO_ACCOUNT } from '../src/db/seed.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = 16;

async function measure(name: string, send: () => Promise<Response>, requests = REQUESTS) {
  let next = 0;
  let failures = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < requests) {
        const res = await send();
        await res.arrayBuffer();
        if (!res.ok) failures++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  return { name, rps: requests / seconds, failures };
}

async function main() {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent', DATA_DIR: '/tmp/console-bench' });
  const database = await openDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  const { app } = await buildApp({ config, database, clock: systemClock, logger: false });
  app.get('/__bench/bare', async () => ({ ok: true }));
  await seedDemo(database.db, systemClock);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const login = await fetch(`${address}/userapi/api/v2.1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ account: DEMO_ACCOUNT.mobile, password: DEMO_ACCOUNT.password }),
  });
  const { token } = (await login.json()) as { token: string };
  const auth = { authorization: `Bearer ${token}` };

  const baseline = await measure('bare route (baseline)', () => fetch(`${address}/__bench/bare`));
  const cases = [
    await measure('GET /healthz (one query)', () => fetch(`${address}/healthz`)),
    await measure('GET users/me/info (JWE + session row)', () => fetch(`${address}/userapi/api/v2.1/users/me/info`, { headers: auth })),
    await measure('POST smscode, invalid body (400 path)', () =>
      fetch(`${address}/api/v1/users/verify/smscode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mobile":"1"}' }),
    ),
    await measure(
      'POST login (scrypt, deliberately slow)',
      () =>
        fetch(`${address}/userapi/api/v2.1/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ account: DEMO_ACCOUNT.mobile, password: DEMO_ACCOUNT.password }),
        }),
      Math.max(50, Math.floor(REQUESTS / 30)),
    ),
  ];
  console.log(`database: ${database.kind}; ${REQUESTS} requests per case, concurrency ${CONCURRENCY}`);
  console.log(`${baseline.name.padEnd(44)} ${baseline.rps.toFixed(0).padStart(7)} req/s  ratio 1.00`);
  for (const c of cases) {
    const flag = c.failures && !c.name.includes('400') ? `  (${c.failures} non-2xx)` : '';
    console.log(`${c.name.padEnd(44)} ${c.rps.toFixed(0).padStart(7)} req/s  ratio ${(c.rps / baseline.rps).toFixed(2)}${flag}`);
  }
  await app.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
