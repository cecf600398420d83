/**
 * `npm run operator -- <command>`: the operator's hand tools.
 *
 *   credit <mobile> <yuan> --reason "<text>" [--to cash|gift] [--gift-days N]
 *       compensation from the platform to a user's cash (or gift credit), reason recorded
 *   grant <mobile> | revoke <mobile>
 *       give or take the operator role
 *
 * With PostgreSQL (DATABASE_URL) it writes to the database directly. With the embedded PGlite, one
 * process owns the data directory: when `npm start` is running, every command goes through that
 * server (authenticated by the token it wrote into DATA_DIR/server.json); when it is not, the
 * command opens the database itself.
 */
import { randomUUID } from 'node:crypto';
import { API, formatYuan, operatorCreditSchema, type OperatorCredit, type OperatorRoleResult } from '@console/contract';
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { bwrapWorks } from '../drivers/compute/local/sandbox.js';
import { openDatabase } from '../db/client.js';
import { setOperatorRole, userByMobile } from '../modules/users/index.js';
import { GiftService } from '../modules/gifts/index.js';
import { RechargeTotals } from '../modules/recharge/index.js';
import { LedgerService } from '../modules/ledger/index.js';
import { OperatorService } from '../modules/operator/index.js';
import { readRunningServer, type RunningServer } from './running-server.js';

const USAGE = `用法：
  npm run operator -- credit <手机号> <金额元> --reason "<原因>" [--to cash|gift] [--gift-days 天数]
  npm run operator -- grant <手机号>      授予运营权限
  npm run operator -- revoke <手机号>     收回运营权限`;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function parseFlags(args: string[]) {
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--')) {
      const value = args[i + 1];
      if (value === undefined || value.startsWith('--')) fail(`${a} 需要一个值\n${USAGE}`);
      flags[a.slice(2)] = value;
      i++;
    } else positional.push(a);
  }
  return { positional, flags };
}

/** The server that owns the embedded database, if one is running (with PostgreSQL, none is needed). */
const runningServer = (config: Config) => (config.DATABASE_URL ? null : readRunningServer(config.dataDir));

/** One operator request to the running server, authenticated by its local token. */
async function throughServer<T>(running: RunningServer, path: string, payload: unknown): Promise<T> {
  const res = await fetch(`${running.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-operator-token': running.token },
    body: JSON.stringify(payload),
  });
  const body = (await res.json()) as Record<string, string>;
  if (!res.ok) fail(`失败：${body.message}${body.detail ? `：${body.detail}` : ''}`);
  return body as T;
}

async function credit(config: Config, req: OperatorCredit) {
  const running = runningServer(config);
  if (running) return throughServer<Record<string, string>>(running, API.operatorCredit, req);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
  try {
    const ledger = new LedgerService(database.db, systemClock);
    const service = new OperatorService({
      db: database.db,
      ledger,
      gifts: new GiftService(database.db, ledger, systemClock, new RechargeTotals(database.db)),
      users: { findByMobile: (m) => userByMobile(database.db, m) },
    });
    return await service.credit(req, null);
  } finally {
    await database.close();
  }
}

async function setRole(config: Config, mobile: string, isOperator: boolean): Promise<OperatorRoleResult> {
  const running = runningServer(config);
  if (running) return throughServer<OperatorRoleResult>(running, API.operatorRole, { mobile, isOperator });
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
  try {
    const userId = (await setOperatorRole(database.db, mobile, isOperator, new Date())) ?? fail(`手机号 ${mobile} 未注册`);
    return { userId, mobile, isOperator: isOperator || config.OPERATOR_MOBILES.includes(mobile) };
  } finally {
    await database.close();
  }
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  const { positional, flags } = parseFlags(rest);
  const config = loadConfig(process.env, bwrapWorks);
  if (command === 'credit') {
    const [mobile, amount] = positional;
    const parsed = operatorCreditSchema.safeParse({
      mobile,
      amount,
      reason: flags.reason,
      to: flags.to,
      giftValidDays: flags['gift-days'],
      requestId: randomUUID(),
    });
    if (!parsed.success) fail(`参数有误：${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('；')}\n${USAGE}`);
    const result = await credit(config, parsed.data);
    console.log(
      `已给 ${result.mobile} 的${result.to === 'gift' ? '赠送金' : '现金'}账户补偿 ${parsed.data.amount} 元，当前余额 ${formatYuan(result.balance)} 元`,
    );
  } else if (command === 'grant' || command === 'revoke') {
    const mobile = positional[0] ?? fail(USAGE);
    const result = await setRole(config, mobile, command === 'grant');
    if (command === 'revoke' && result.isOperator) console.log(`${mobile} 的运营权限已收回，但该号码在 OPERATOR_MOBILES 中，仍是运营方`);
    else console.log(`${mobile} 已${command === 'grant' ? '获得' : '失去'}运营权限`);
  } else {
    fail(USAGE);
  }
}

main().catch((e: Error) => fail(`失败：${e.message}`));
