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
 *
 * A case that fails is reported and the rest still run; the exit status is 1 when any failed.
 */
import pg from 'pg';
import { benchLedger } from './ledger.js';
import { benchBilling } from './billing.js';
import { benchFirstLoad } from './assets.js';
import { benchHttp } from './http.js';
import { benchGateway } from './gateway.js';
import { benchLocalStart } from './local-start.js';
import { benchAgentEcho } from './agent-echo.js';
import { benchReplicas } from './replicas.js';
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

/** One of the HTTP cases or the model gateway on a scratch database of the machine's PostgreSQL, dropped afterwards. */
async function onScratch(name: string, run: (url: string) => Promise<number>): Promise<number> {
  const scratch = await createScratchDatabase(PG_URL, name);
  try {
    return await run(scratch.url);
  } finally {
    await scratch.drop();
  }
}

/** A case: its name and what it does; resolves to how many targets it missed. */
type Case = [name: string, run: () => Promise<number>];

/**
 * Runs every case in turn; one that throws is reported and the rest still run (a failure in the
 * local instance case once hid the whole PostgreSQL half). Exit status 1 when any case failed.
 */
async function runCases(cases: Case[]): Promise<{ missed: number; failed: string[] }> {
  let missed = 0;
  const failed: string[] = [];
  for (const [name, run] of cases) {
    try {
      missed += await run();
    } catch (e) {
      failed.push(name);
      console.log(`\n${name}: FAILED — ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
  return { missed, failed };
}

async function main() {
  const cases: Case[] = [
    ['HTTP cases on PGlite (with the first load in Chromium)', () => benchHttp(undefined, async (base) => ((await benchFirstLoad(base)) ? 0 : 1))],
    ['model gateway on PGlite', () => benchGateway()],
    ['local instance start-to-usable', async () => Number(await benchLocalStart())],
    ['terminal echo through console and agent', async () => Number(await benchAgentEcho())],
    ["replicas' machinery: leases and bus on vs off, a dead holder's job taken over (PGlite, then PostgreSQL)", () => benchReplicas(PG_URL)],
  ];
  if (await postgresAnswers()) {
    cases.push(
      ['HTTP cases on PostgreSQL', () => onScratch('console_bench_http', (url) => benchHttp(url))],
      ['model gateway on PostgreSQL', () => onScratch('console_bench_gateway', (url) => benchGateway(url))],
      ['ledger against pgbench', async () => Number(!(await benchLedger(PG_URL)))],
      ['billing tick', async () => Number(!(await benchBilling(PG_URL)))],
    );
  } else {
    console.log(`
PostgreSQL (HTTP cases, ledger vs pgbench, billing tick): skipped (no PostgreSQL at ${PG_URL}; set BENCH_PG_URL)`);
  }
  const { missed, failed } = await runCases(cases);
  if (missed) console.log(`${missed} target(s) missed`);
  if (failed.length) {
    console.log(`${failed.length} case(s) failed: ${failed.join('; ')}`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
