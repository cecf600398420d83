/**
 * `npm run operator -- host add|list|remove`: the registry of the fleet's hosts (COMPUTE_DRIVER=fleet,
 * drivers/compute/fleet.ts), one compute agent per catalogue host.
 *
 *   host add <主机ID> <代理地址> [--key-id <id>]   registers the agent of a catalogue host; prints a new
 *        secret once (set it as the agent's COMPUTE_AGENT_SECRET; it is never shown again), or takes
 *        it from COMPUTE_AGENT_SECRET in the environment
 *   host list                                     every host: status, last heartbeat, health, capacity
 *   host remove <主机ID>                          forgets a host no machine lives on
 *
 * On the database directly (the fleet runs on PostgreSQL: DATABASE_URL); on the embedded PGlite only
 * while `npm start` is not running.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { openDatabase, type Db } from '../db/client.js';
import { fleetKeyOf } from '../drivers/compute/index.js';
import { FleetComputeDriver, type FleetHostView } from '../drivers/compute/fleet.js';
import { readRunningServer } from './running-server.js';

export const HOST_USAGE = `  npm run operator -- host add <主机ID> <代理地址> [--key-id <密钥ID>]   登记主机的算力代理（打印一次新密钥）
  npm run operator -- host list                                         列出已登记的主机
  npm run operator -- host remove <主机ID>                              移除没有实例的主机`;

const KEY_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Runs one `host` command; the text to print. Throws an Error whose message is for the operator. */
export async function hostCommand(config: Config, args: string[], flags: Record<string, string>, env: NodeJS.ProcessEnv): Promise<string> {
  if (!config.DATABASE_URL && readRunningServer(config.dataDir))
    throw new Error('内置数据库正被运行中的控制台使用：请先停止 npm start，或在 PostgreSQL（DATABASE_URL）上运行机群');
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: 2 });
  try {
    const fleet = new FleetComputeDriver({ db: database.db, clock: systemClock, secretKey: fleetKeyOf(config, database.db, systemClock), graceMs: 60_000 });
    const [sub, ...rest] = args;
    if (sub === 'add') return await add(database.db, fleet, rest, flags, env);
    if (sub === 'list') return listText(await fleet.hosts());
    if (sub === 'remove') return await remove(fleet, rest);
    throw new Error(`用法：\n${HOST_USAGE}`);
  } finally {
    await database.close();
  }
}

async function add(db: Db, fleet: FleetComputeDriver, [hostId, baseUrl]: string[], flags: Record<string, string>, env: NodeJS.ProcessEnv) {
  if (!hostId || !baseUrl) throw new Error(`用法：\n${HOST_USAGE}`);
  const known = await db.execute(sql`select id from catalogue_hosts where id = ${hostId}`);
  if (!rowsOf(known).length) throw new Error(`目录中没有主机 ${hostId}（先在目录文件的 hosts 中加入它）`);
  if (!agentUrlOk(baseUrl)) throw new Error('代理地址必须是 https://（http:// 只允许 localhost / 127.0.0.1 / [::1]）');
  const keyId = flags['key-id'] ?? `console-${hostId}`;
  if (!KEY_ID_RE.test(keyId)) throw new Error('--key-id 应为 1–64 位字母、数字或 . _ -');
  const given = env.COMPUTE_AGENT_SECRET;
  if (given !== undefined && given.length < 32) throw new Error('COMPUTE_AGENT_SECRET 至少 32 个字符');
  const secret = given ?? randomBytes(32).toString('base64url');
  await fleet.addHost({ hostId, baseUrl, keyId, secret });
  const lines = [`已登记主机 ${hostId}：${baseUrl}（密钥 ID ${keyId}）`];
  if (!given)
    lines.push(
      `在该主机的算力代理上设置（此密钥不会再次显示）：`,
      `  COMPUTE_AGENT_HOST_ID=${hostId}`,
      `  COMPUTE_AGENT_KEY_ID=${keyId}`,
      `  COMPUTE_AGENT_SECRET=${secret}`,
    );
  return lines.join('\n');
}

async function remove(fleet: FleetComputeDriver, [hostId]: string[]) {
  if (!hostId) throw new Error(`用法：\n${HOST_USAGE}`);
  const r = await fleet.removeHost(hostId);
  if (r.machines) throw new Error(`主机 ${hostId} 上还有 ${r.machines} 台机器，不能移除（先迁移或释放它们）`);
  if (!r.removed) throw new Error(`主机 ${hostId} 未登记`);
  return `已移除主机 ${hostId}`;
}

/** One line per host: what an operator checks first. */
export function listText(hosts: FleetHostView[]): string {
  if (!hosts.length) return '尚未登记主机（npm run operator -- host add …）';
  return hosts
    .map((h) => {
      const state = h.status === 'lost' ? '失联' : h.healthy ? '正常' : h.lastSeenAt ? '不健康' : '未连接';
      const seen = h.lastSeenAt ? h.lastSeenAt.toISOString() : '从未';
      const cap = h.report?.capacity;
      const capacity = cap
        ? `CPU ${cap.cpus} 核，内存 ${cap.memoryGb} GB，磁盘 ${cap.diskGb} GB，GPU ${cap.gpus.map((g) => `${g.model}×${g.count}`).join('、') || '无'}`
        : '—';
      return `${h.hostId}\t${state}\t${h.baseUrl}\t密钥 ${h.keyId}\t最近心跳 ${seen}\t${capacity}${h.lastError ? `\t${h.lastError}` : ''}`;
    })
    .join('\n');
}

function agentUrlOk(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || (u.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname));
  } catch {
    return false;
  }
}

function rowsOf(result: unknown): unknown[] {
  return Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? []);
}
