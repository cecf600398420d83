/**
 * The counters every limit a user could multiply across replicas is counted in (types.ts). Chosen
 * by the deployment: REDIS_URL set → redis; else a PostgreSQL database → postgres (every replica
 * shares it); else (PGlite, one process owns the database) → memory.
 */
import type { Database } from '../../db/client.js';
import { MemoryCounters } from './memory.js';
import { PostgresCounters } from './postgres.js';
import type { Counters } from './types.js';

export { MemoryCounters } from './memory.js';
export { PostgresCounters } from './postgres.js';
// redis.js is not re-exported: ioredis is loaded only where REDIS_URL is set (a tenth of a second at every start and test file).
export type { RedisCounters } from './redis.js';
export { CountersUnavailable, type CounterCheck, type Counters, type TakeResult } from './types.js';

export async function chooseCounters(
  redisUrl: string | undefined,
  database: Pick<Database, 'db' | 'kind'>,
  onError: (e: unknown) => void,
): Promise<{ counters: Counters; why: string }> {
  if (redisUrl) {
    try {
      const { RedisCounters } = await import('./redis.js');
      return { counters: await RedisCounters.connect(redisUrl), why: 'REDIS_URL 已设置：限流计数在 Redis 中，各副本共享' };
    } catch (e) {
      throw new Error(`REDIS_URL 连接不上（${(e as Error).message}）：请检查地址、密码和网络，或去掉 REDIS_URL 改用数据库计数`, { cause: e });
    }
  }
  if (database.kind === 'postgres') return { counters: new PostgresCounters(database.db, onError), why: 'PostgreSQL：限流计数在数据库中，各副本共享' };
  return { counters: embeddedCounters(database.db), why: '内嵌数据库（单进程）：限流计数在进程内存中' };
}

/** One memory counter per embedded database: apps opened on the same one in a process (tests' replicas) count together, as replicas on PostgreSQL do. */
const onEmbedded = new WeakMap<object, MemoryCounters>();

function embeddedCounters(db: object): MemoryCounters {
  let counters = onEmbedded.get(db);
  if (!counters) onEmbedded.set(db, (counters = new MemoryCounters()));
  return counters;
}
