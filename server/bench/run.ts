/**
 * `npm run bench`: throughput and latency of the hot paths as ratios against a bare route measured
 * in the same run on the same server, so the numbers mean the same on any machine. Each case sends a
 * fixed number of requests over loopback (autocannon, 50 connections) and stops by itself.
 *
 * Targets (issue 4): the cached GPU market list at least half the bare route's rate, p99 under 10 ms.
 * Then, on the machine's PostgreSQL: ledger transfers against pgbench (issue 5, ratio 0.5) and one
 * billing tick over 1,000 / 10,000 / 100,000 running instances (issue 6, 100,000 under 10 s).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { benchLedger } from './ledger.js';
import { benchBilling } from './billing.js';
import { DEMO_ACCOUNT } from '../src/db/seed.js';

/** Each case runs this long (autocannon ends amount-based runs only on whole-second ticks, which would skew rates). */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 50;

interface Case {
  name: string;
  path: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  amount?: number;
  /** Non-2xx answers are the point of this case (the 400 path). */
  expectErrors?: boolean;
  target?: { ratio?: number; p99Ms?: number };
}

async function run(base: string, c: Case) {
  const started = performance.now();
  const result = await autocannon({
    url: base + c.path,
    method: c.method ?? 'GET',
    connections: CONNECTIONS,
    ...(c.amount ? { amount: c.amount } : { duration: SECONDS }),
    // What browsers send: the cached catalogue answers come compressed.
    headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip, deflate, br', ...c.headers },
    body: c.body === undefined ? undefined : JSON.stringify(c.body),
  });
  const answered = result.requests.total || 1;
  return { rps: answered / ((performance.now() - started) / 1000), p99: result.latency.p99, p50: result.latency.p50, non2xx: result.non2xx, errors: result.errors };
}

/** Starts bench/serve.ts in a child process and waits for the address it prints. */
async function startServer() {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./serve.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const { address, database } = JSON.parse(first) as { address: string; database: string };
  return { base: address, database, stop: () => child.kill('SIGTERM') };
}

/** The ledger against pgbench, on the machine's PostgreSQL (BENCH_PG_URL; skipped when none answers). */
async function ledgerOnPostgres(): Promise<boolean> {
  const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    await probe.end();
  } catch {
    console.log(`\nledger vs pgbench: skipped (no PostgreSQL at ${url}; set BENCH_PG_URL)`);
    return true;
  }
  const ledger = await benchLedger(url);
  const billing = await benchBilling(url);
  return ledger && billing;
}

async function main() {
  const { base, database, stop } = await startServer();
  const login = await fetch(`${base}/userapi/api/v2.1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ account: DEMO_ACCOUNT.mobile, password: DEMO_ACCOUNT.password }),
  });
  const { token } = (await login.json()) as { token: string };
  const auth = { authorization: `Bearer ${token}` };
  const gpuQuote = { gpuTypeId: 'rtx4090', gpuCount: 2, regionId: 'bj-b', cycle: 'Day', duration: 3, dataDiskGb: 100 };

  const cases: Case[] = [
    { name: 'GET /upgpu/api/v2.1/gpu/list (cached)', path: '/upgpu/api/v2.1/gpu/list', target: { ratio: 0.5, p99Ms: 10 } },
    { name: 'GET gpu/list filtered + sorted', path: '/upgpu/api/v2.1/gpu/list?filterBy=region,bj-b,gpuCount,2&sortBy=priceDay&cycle=Day' },
    { name: 'POST gpu/order/price (visitor quote)', path: '/infra/api/v2.1/gpu/order/price', method: 'POST', body: gpuQuote, target: { p99Ms: 10 } },
    { name: 'POST gpu/order/user/price (session)', path: '/infra/api/v2.1/gpu/order/user/price', method: 'POST', body: gpuQuote, headers: auth },
    { name: 'GET /healthz (one query)', path: '/healthz' },
    { name: 'GET users/me/info (JWE + session row)', path: '/userapi/api/v2.1/users/me/info', headers: auth },
    { name: 'POST smscode, invalid body (400 path)', path: '/api/v1/users/verify/smscode', method: 'POST', body: { mobile: '1' }, expectErrors: true },
    {
      name: 'POST login (scrypt, deliberately slow)',
      path: '/userapi/api/v2.1/login',
      method: 'POST',
      body: { account: DEMO_ACCOUNT.mobile, password: DEMO_ACCOUNT.password },
      amount: 100,
    },
  ];

  // Warm up JIT and caches so the first case is not penalised.
  await run(base, { name: 'warm-up', path: '/__bench/bare' });
  await run(base, { name: 'warm-up', path: cases[0]!.path });
  const baseline = await run(base, { name: 'bare', path: '/__bench/bare' });

  console.log(`database: ${database}; ${SECONDS} s per case, ${CONNECTIONS} connections`);
  const row = (name: string, r: Awaited<ReturnType<typeof run>>, note = '') =>
    console.log(
      `${name.padEnd(42)} ${r.rps.toFixed(0).padStart(7)} req/s  ratio ${(r.rps / baseline.rps).toFixed(2)}  p50 ${r.p50} ms  p99 ${r.p99} ms${note}`,
    );
  row('bare route (baseline)', baseline);
  let missed = 0;
  for (const c of cases) {
    const r = await run(base, c);
    const notes: string[] = [];
    if ((r.non2xx || r.errors) && !c.expectErrors) notes.push(`${r.non2xx} non-2xx, ${r.errors} errors`);
    if (c.target?.ratio !== undefined && r.rps / baseline.rps < c.target.ratio) notes.push(`below target ratio ${c.target.ratio}`);
    if (c.target?.p99Ms !== undefined && r.p99 >= c.target.p99Ms) notes.push(`p99 over target ${c.target.p99Ms} ms; the bare route's p99 is ${baseline.p99} ms here`);
    if (c.target) notes.push(notes.length ? 'MISSED' : 'target met');
    if (notes.includes('MISSED')) missed++;
    row(c.name, r, notes.length ? `  (${notes.join('; ')})` : '');
  }
  stop();
  if (!(await ledgerOnPostgres())) missed++;
  if (missed) console.log(`${missed} target(s) missed`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
