/**
 * `npm run bench`: throughput and latency of the hot paths as ratios against routes measured in
 * the same run on the same server, so the numbers mean the same on any machine.
 *
 * First the HTTP cases (bench/http.ts: the GPU market, quotes, the session routes against
 * `/healthz`, the market while 50 connections log in) on PGlite, then again on a scratch database
 * of the machine's PostgreSQL (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 * skipped when none answers). While the PGlite server is up, the GPU market's first-load
 * JavaScript in Chromium (bench/assets.ts, ≤ 300 KB); then the model gateway against its upstream
 * called directly (bench/gateway.ts), and a real instance's start-to-usable time (bench/local-start.ts,
 * under 3 s). Then, on PostgreSQL: ledger transfers
 * against pgbench (ratio 0.5) and one billing tick over 1,000 / 10,000 / 100,000 running
 * instances (100,000 under 10 s).
 */
import pg from 'pg';
import { benchLedger } from './ledger.js';
import { benchBilling } from './billing.js';
import { benchFirstLoad } from './assets.js';
import { benchHttp } from './http.js';
import { benchGateway } from './gateway.js';
import { benchLocalStart } from './local-start.js';
import { createScratchDatabase } from '../test/scratch-db.js';

const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postgresAnswers(): Promise<boolean> {
  const probe = new pg.Client({ connectionString: PG_URL });
  try {
    await probe.connect();
    await probe.end();
    return true;
  } catch {
    return false;
  }
}

/** The HTTP cases and the model gateway on scratch databases of the machine's PostgreSQL, dropped afterwards. */
async function httpOnPostgres(): Promise<number> {
  let missed = 0;
  for (const [name, run] of [
    ['console_bench_http', benchHttp],
    ['console_bench_gateway', benchGateway],
  ] as const) {
    const scratch = await createScratchDatabase(PG_URL, name);
    try {
      missed += await run(scratch.url);
    } finally {
      await scratch.drop();
    }
  }
  return missed;
}

/** The ledger against pgbench and the billing tick, on the machine's PostgreSQL. */
async function ledgerOnPostgres(): Promise<boolean> {
  const ledger = await benchLedger(PG_URL);
  const billing = await benchBilling(PG_URL);
  return ledger && billing;
}

async function main() {
  let missed = await benchHttp(undefined, async (base) => ((await benchFirstLoad(base)) ? 0 : 1));
  missed += await benchGateway();
  if (await benchLocalStart()) missed++;
  if (await postgresAnswers()) {
    missed += await httpOnPostgres();
    if (!(await ledgerOnPostgres())) missed++;
  } else {
    console.log(`
PostgreSQL (HTTP cases, ledger vs pgbench, billing tick): skipped (no PostgreSQL at ${PG_URL}; set BENCH_PG_URL)`);
  }
  if (missed) console.log(`${missed} target(s) missed`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
