/**
 * `npm run operator -- <command>`: the operator's hand tools.
 *
 *   credit <mobile> <yuan> --reason "<text>" [--to cash|gift] [--gift-days N]
 *       compensation from the platform to a user's cash (or gift credit), reason recorded
 *   grant <mobile> | revoke <mobile>
 *       give 管理员 / take every operator role (the older form)
 *   role grant|revoke <mobile> <admin|finance|support|ops>
 *       give or take one operator role (管理员, 财务, 客服, 运维)
 *   host add|list|remove
 *       the fleet's hosts and their compute agents (COMPUTE_DRIVER=fleet; cli/fleet-hosts.ts)
 *
 * The command is the machine's root: it holds every operator permission, and what it does is in the
 * audit trail as 本机命令行.
 *
 * With PostgreSQL (DATABASE_URL) it writes to the database directly. With the embedded PGlite, one
 * process owns the data directory: when `npm start` is running, every command goes through that
 * server (authenticated by the token it wrote into DATA_DIR/server.json); when it is not, the
 * command opens the database itself.
 */
import { randomUUID } from 'node:crypto';
import {
  API,
  OPERATOR_ROLE_LABELS,
  formatYuan,
  operatorCreditSchema,
  operatorRoleChangeSchema,
  type OperatorAccount,
  type OperatorCredit,
  type OperatorRoleChange,
  type OperatorRoleResult,
} from '@console/contract';
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { bwrapWorks } from '../drivers/compute/local/sandbox.js';
import { openDatabase } from '../db/client.js';
import { userByMobile } from '../modules/users/index.js';
import { GiftService } from '../modules/gifts/index.js';
import { RechargeTotals } from '../modules/recharge/index.js';
import { LedgerService } from '../modules/ledger/index.js';
import { CLI_ACTOR, OperatorAudit, OperatorRoles, OperatorService } from '../modules/operator/index.js';
import { readRunningServer, type RunningServer } from './running-server.js';
import { HOST_USAGE, hostCommand } from './fleet-hosts.js';

const USAGE = `用法：
  npm run operator -- credit <手机号> <金额元> --reason "<原因>" [--to cash|gift] [--gift-days 天数]
  npm run operator -- grant <手机号>      授予管理员角色
  npm run operator -- revoke <手机号>     收回全部运营角色
  npm run operator -- role grant <手机号> <admin|finance|support|ops>    授予角色（管理员 / 财务 / 客服 / 运维）
  npm run operator -- role revoke <手机号> <admin|finance|support|ops>   收回角色
${HOST_USAGE}`;

/** How the audit trail names what the command did directly on the database. */
const CLI_ORIGIN = { requestId: 'cli', ip: 'local' };

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
    const users = { findByMobile: (m: string) => userByMobile(database.db, m), mobilesOf: async () => new Map<string, string>() };
    const service = new OperatorService({
      db: database.db,
      ledger,
      gifts: new GiftService(database.db, ledger, systemClock, new RechargeTotals(database.db)),
      users,
      clock: systemClock,
      audit: new OperatorAudit({ db: database.db, clock: systemClock, users }),
    });
    return await service.credit(req, null, CLI_ACTOR, CLI_ORIGIN);
  } finally {
    await database.close();
  }
}

/** The older grant/revoke: 管理员, or every role. */
async function setRole(config: Config, mobile: string, isOperator: boolean): Promise<OperatorRoleResult> {
  const running = runningServer(config);
  if (running) return throughServer<OperatorRoleResult>(running, API.operatorRole, { mobile, isOperator });
  await changeRoleDirectly(config, mobile, isOperator ? 'admin' : 'all', isOperator);
  return { userId: '', mobile, isOperator: isOperator || config.OPERATOR_MOBILES.includes(mobile) };
}

/** `role grant|revoke <mobile> <role>`: through the running server, else on the database. */
async function changeRole(config: Config, req: OperatorRoleChange, grant: boolean): Promise<string[]> {
  const running = runningServer(config);
  if (running) return (await throughServer<OperatorAccount>(running, grant ? API.operatorRoleGrant : API.operatorRoleRevoke, req)).roles;
  return changeRoleDirectly(config, req.mobile, req.role, grant);
}

async function changeRoleDirectly(config: Config, mobile: string, role: OperatorRoleChange['role'] | 'all', grant: boolean) {
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
  try {
    const roles = new OperatorRoles({ db: database.db, clock: systemClock, operatorMobiles: config.OPERATOR_MOBILES });
    const audit = new OperatorAudit({ db: database.db, clock: systemClock, users: { mobilesOf: async () => new Map() } });
    const user = (await userByMobile(database.db, mobile)) ?? fail(`手机号 ${mobile} 未注册`);
    const before = await roles.rolesOf(user);
    await database.db.transaction(async (tx) => {
      if (grant && role !== 'all') await roles.grant(tx, mobile, role, null);
      else await roles.revoke(tx, mobile, role);
    });
    const after = await roles.rolesOf((await userByMobile(database.db, mobile))!);
    await audit.record(CLI_ACTOR, CLI_ORIGIN, {
      action: grant ? 'role.grant' : 'role.revoke',
      targetType: 'user',
      targetId: user.id,
      before: { mobile, roles: before },
      after: { mobile, roles: after },
    });
    return after;
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
  } else if (command === 'role') {
    const [action, mobile, role] = positional;
    if (action !== 'grant' && action !== 'revoke') fail(USAGE);
    const parsed = operatorRoleChangeSchema.safeParse({ mobile, role, reason: flags.reason });
    if (!parsed.success) fail(`参数有误：${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('；')}\n${USAGE}`);
    const roles = await changeRole(config, parsed.data, action === 'grant');
    const names = roles.map((r) => OPERATOR_ROLE_LABELS[r as OperatorRoleChange['role']]).join('、') || '无';
    console.log(`${parsed.data.mobile} 已${action === 'grant' ? '获得' : '失去'}「${OPERATOR_ROLE_LABELS[parsed.data.role]}」角色；现有角色：${names}`);
  } else if (command === 'host') {
    console.log(await hostCommand(config, positional, flags, process.env));
  } else {
    fail(USAGE);
  }
}

main().catch((e: Error) => fail(`失败：${e.message}`));
