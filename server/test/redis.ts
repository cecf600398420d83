/**
 * The Redis the counters' tests use (TEST_REDIS_URL, default the machine's redis://127.0.0.1:6379).
 * Where none answers, those tests are skipped with a line saying so — and fail under CI (`CI` set),
 * where a missing Redis is a broken machine, not a choice.
 */
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** Whether the Redis tests run here (under CI they always do, and fail without one). */
export async function redisForTests(): Promise<boolean> {
  if (process.env.CI) return true;
  if (await answers(TEST_REDIS_URL)) return true;
  console.warn(`Redis 不可用（${TEST_REDIS_URL}）：跳过 Redis 计数测试；安装 Debian 的 redis-server 或设置 TEST_REDIS_URL`);
  return false;
}
