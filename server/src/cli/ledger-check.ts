/**
 * `npm run ledger:check`: checks the ledger's invariants on the configured database (DATABASE_URL,
 * or the embedded one under DATA_DIR — stop the server first, PGlite has one writer). Exit code 1
 * and one line per problem when anything is wrong.
 */
import { loadConfig } from '../config.js';
import { bwrapWorks } from '../drivers/compute/local/sandbox.js';
import { openDatabase } from '../db/client.js';
import { checkLedger } from '../modules/ledger/index.js';

const config = loadConfig(process.env, bwrapWorks);
const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
try {
  const report = await checkLedger(database.db);
  console.log(`账户 ${report.accounts} 个，转账 ${report.transfers} 笔，分录 ${report.entries} 条`);
  if (report.ok) console.log('账本检查通过：总账为零，每笔转账平衡，余额与分录一致，无负数可用余额');
  else for (const p of report.problems) console.log(`问题：${p}`);
  process.exitCode = report.ok ? 0 : 1;
} finally {
  await database.close();
}
