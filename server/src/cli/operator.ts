/**
 * `npm run operator -- <command>`: the operator's hand tools.
 *
 *   credit <mobile> <yuan> --reason "<text>" [--to cash|gift] [--gift-days N]
 *       compensation from the platform to a user's cash (or gift credit), reason recorded
 *   grant <mobile> | revoke <mobile>
 *       give or take the operator role
 *
 * With PostgreSQL (DATABASE_URL) it writes to the database directly. With the embedded PGlite, one
 * process owns the data directory: when `npm start` is running, `credit` goes through that server
 * (authenticated by the token it wrote into DATA_DIR/server.json); when it is not, the command
 * opens the database itself.
 */
import { randomUUID } from 'node:crypto';
import { operatorCreditSchema, type OperatorCredit } from '@console/contract';
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { openDatabase } from '../db/client.js';
import { setOperatorRole, userByMobile } from '../modules/users/index.js';
import { GiftService } from '../modules/gifts/index.js';
import { RechargeTotals } from '../modules/recharge/index.js';
import { LedgerService } from '../modules/ledger/index.js';
import { OperatorService } from '../modules/operator/index.js';
import { readRunningServer } from './running-server.js';

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

async function credit(config: Config, req: OperatorCredit) {
  const running = config.DATABASE_URL ? null : readRunningServer(config.dataDir);
  if (running) {
    const res = await fetch(`${running.url}/api/v1/operator/credit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-operator-token': running.token },
      body: JSON.stringify(req),
    });
    const body = (await res.json()) as Record<string, string>;
    if (!res.ok) fail(`失败：${body.message}${body.detail ? `：${body.detail}` : ''}`);
    return body;
  }
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

async function setRole(config: Config, mobile: string, isOperator: boolean) {
  if (!config.DATABASE_URL && readRunningServer(config.dataDir))
    fail('内置数据库正被运行中的服务占用：请先停止 npm start，或用环境变量 OPERATOR_MOBILES 配置运营手机号');
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
  try {
    if (!(await setOperatorRole(database.db, mobile, isOperator, new Date()))) fail(`手机号 ${mobile} 未注册`);
  } finally {
    await database.close();
  }
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  const { positional, flags } = parseFlags(rest);
  const config = loadConfig();
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
      `已给 ${result.mobile} 的${result.to === 'gift' ? '赠送金' : '现金'}账户补偿 ${parsed.data.amount} 元，当前余额 ${(Number(result.balance) / 10000).toFixed(2)} 元`,
    );
  } else if (command === 'grant' || command === 'revoke') {
    const mobile = positional[0] ?? fail(USAGE);
    await setRole(config, mobile, command === 'grant');
    console.log(`${mobile} 已${command === 'grant' ? '获得' : '失去'}运营权限`);
  } else {
    fail(USAGE);
  }
}

main().catch((e: Error) => fail(`失败：${e.message}`));
