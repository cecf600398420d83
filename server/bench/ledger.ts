/**
 * Ledger transfers per second on PostgreSQL against pgbench's simple-update rate (`pgbench -N`) on
 * the same server in the same run, as a ratio (target: at least 0.5). Both use the same
 * number of connections and a fixed number of transactions; each gets a scratch database that is
 * dropped afterwards.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../src/clock.js';
import { openDatabase } from '../src/db/client.js';
import { users } from '../src/db/schema.js';
import { LedgerService } from '../src/modules/ledger/service.js';
import { checkLedger } from '../src/modules/ledger/check.js';
import { createScratchDatabase } from '../test/scratch-db.js';

const CLIENTS = 8;
const PER_CLIENT = Number(process.env.BENCH_LEDGER_TX ?? 500);
const ACCOUNTS = 1000;

function pgbenchTps(url: string): number {
  const u = new URL(url);
  const args = ['-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres')];
  const db = u.pathname.slice(1);
  execFileSync('pgbench', [...args, '-i', '-s', '1', '-q', db], { stdio: 'ignore' });
  const out = execFileSync('pgbench', [...args, '-N', '-c', String(CLIENTS), '-j', '2', '-t', String(PER_CLIENT), db], { encoding: 'utf8' });
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
  if (!m) throw new Error(`could not read pgbench's tps:\n${out}`);
  return Number(m[1]);
}

async function ledgerTps(url: string): Promise<number> {
  const database = await openDatabase({ url, poolSize: CLIENTS });
  const db = database.db;
  const now = new Date();
  const ids = Array.from({ length: ACCOUNTS }, () => randomUUID());
  await db.insert(users).values(ids.map((id, i) => ({ id, mobile: `139${String(i).padStart(8, '0')}`, createdAt: now, updatedAt: now })));
  const ledger = new LedgerService(db, systemClock);
  for (const id of ids) {
    await ledger.post({
      key: `fund-${id}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -1_000_000_000n },
        { account: { userId: id, kind: 'cash' }, amount: 1_000_000_000n },
      ],
    });
  }
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < PER_CLIENT; i++) {
        const id = ids[Math.floor(Math.random() * ACCOUNTS)]!;
        await ledger.post({
          key: `bench-${c}-${i}`,
          kind: 'order',
          legs: [
            { account: { userId: id, kind: 'cash' }, amount: -1234n },
            { account: { platform: 'revenue' }, amount: 1234n },
          ],
        });
      }
    }),
  );
  const tps = (CLIENTS * PER_CLIENT) / ((performance.now() - started) / 1000);
  const report = await checkLedger(db);
  if (!report.ok) throw new Error(`ledger invariants broken after the bench: ${report.problems.join('; ')}`);
  await database.close();
  return tps;
}

export async function benchLedger(adminUrl: string) {
  const a = await createScratchDatabase(adminUrl, 'console_bench');
  const b = await createScratchDatabase(adminUrl, 'console_bench');
  try {
    const baseline = pgbenchTps(a.url);
    const ours = await ledgerTps(b.url);
    const ratio = ours / baseline;
    console.log(`\nPostgreSQL, ${CLIENTS} connections, ${CLIENTS * PER_CLIENT} transactions each`);
    console.log(`${'pgbench -N simple-update (baseline)'.padEnd(42)} ${baseline.toFixed(0).padStart(7)} tps  ratio 1.00`);
    console.log(
      `${'ledger transfer (2 legs, idempotency key)'.padEnd(42)} ${ours.toFixed(0).padStart(7)} tps  ratio ${ratio.toFixed(2)}  (${ratio >= 0.5 ? 'target met' : 'below target ratio 0.5; MISSED'})`,
    );
    return ratio >= 0.5;
  } finally {
    await a.drop();
    await b.drop();
  }
}
