/**
 * Counters in Redis (REDIS_URL), shared by every console process using it: one hash per counter,
 * a field per second, and one Lua script per call (EVALSHA; Redis runs a script atomically), so calls
 * at once in any number of processes cannot together pass a limit. A script drops the seconds that
 * left the window, sums the rest, and counts the call only when every check passes; each counter
 * expires a window after it was last counted.
 */
import { Redis } from 'ioredis';
import { CountersUnavailable, type CounterCheck, type Counters, type TakeResult } from './types.js';

/**
 * KEYS: the counters. ARGV: now (ms), then per counter its limit (-1: none, count whatever the window
 * holds), amount and window (s). Answers {0, 0} when counted, else {index (1-based), retry after (ms)}.
 */
const TAKE = `
local now_ms = tonumber(ARGV[1])
local now_s = math.floor(now_ms / 1000)
local n = #KEYS
for i = 1, n do
  local limit = tonumber(ARGV[2 + (i - 1) * 3])
  local amount = tonumber(ARGV[3 + (i - 1) * 3])
  local window = tonumber(ARGV[4 + (i - 1) * 3])
  local fields = redis.call('HGETALL', KEYS[i])
  local sum = 0
  local kept = {}
  local stale = {}
  for j = 1, #fields, 2 do
    local second = tonumber(fields[j])
    local counted = tonumber(fields[j + 1])
    if second <= now_s - window then
      stale[#stale + 1] = fields[j]
    else
      sum = sum + counted
      kept[#kept + 1] = { second, counted }
    end
  end
  if #stale > 0 then redis.call('HDEL', KEYS[i], unpack(stale)) end
  if limit >= 0 and not (sum < limit and sum + amount <= limit) then
    table.sort(kept, function(a, b) return a[1] < b[1] end)
    local left = sum
    for _, bucket in ipairs(kept) do
      left = left - bucket[2]
      if left < limit and left + amount <= limit then
        return { i, math.max(1, (bucket[1] + window) * 1000 - now_ms) }
      end
    end
    return { i, window * 1000 }
  end
end
for i = 1, n do
  local amount = tonumber(ARGV[3 + (i - 1) * 3])
  local window = tonumber(ARGV[4 + (i - 1) * 3])
  if amount ~= 0 then
    redis.call('HINCRBY', KEYS[i], now_s, amount)
    redis.call('PEXPIRE', KEYS[i], (window + 1) * 1000)
  end
end
return { 0, 0 }
`;

type WithTake = Redis & { rateTake(numKeys: number, ...args: (string | number)[]): Promise<[number, number]> };

export interface RedisCountersOptions {
  /** Put before every counter's key (tests use one of their own). */
  prefix?: string;
  /** How long a call waits for Redis before it is refused (the gateway answers 503). */
  commandTimeoutMs?: number;
}

export class RedisCounters implements Counters {
  readonly kind = 'redis';
  private readonly redis: WithTake;
  private readonly prefix: string;

  private constructor(redis: Redis, prefix: string) {
    redis.defineCommand('rateTake', { lua: TAKE });
    this.redis = redis as WithTake;
    this.prefix = prefix;
  }

  /** Connects now: a REDIS_URL that cannot be reached stops the server at start, not the first call. */
  static async connect(url: string, opts: RedisCountersOptions = {}): Promise<RedisCounters> {
    const redis = new Redis(url, {
      lazyConnect: true,
      // A call is refused at once while Redis is away (the client keeps reconnecting meanwhile).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
    });
    // Errors reach the calls; a dropped connection is reconnected by the client.
    redis.on('error', () => {});
    try {
      await redis.connect();
    } catch (e) {
      redis.disconnect();
      throw e;
    }
    return new RedisCounters(redis, opts.prefix ?? 'console:rate:');
  }

  async take(checks: CounterCheck[], now: number): Promise<TakeResult> {
    if (!checks.length) return { ok: true };
    const reply = await this.run(
      checks.map((c) => ({ ...c, limit: Math.floor(c.limit) })),
      now,
    );
    if (reply[0] === 0) return { ok: true };
    return { ok: false, index: reply[0] - 1, retryAfterMs: reply[1] };
  }

  async add(key: string, amount: number, windowMs: number, now: number): Promise<void> {
    await this.run([{ key, limit: -1, amount, windowMs }], now);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  /** Every key of this prefix removed (tests). */
  async flush(): Promise<void> {
    const keys = await this.redis.keys(`${this.prefix}*`);
    if (keys.length) await this.redis.del(...keys);
  }

  private async run(checks: CounterCheck[], now: number): Promise<[number, number]> {
    const keys = checks.map((c) => this.prefix + c.key);
    const args = checks.flatMap((c) => [c.limit, Math.floor(c.amount), Math.max(1, Math.round(c.windowMs / 1000))]);
    try {
      const [index, retry] = await this.redis.rateTake(keys.length, ...keys, Math.floor(now), ...args);
      return [Number(index), Number(retry)];
    } catch (e) {
      throw new CountersUnavailable(e);
    }
  }
}
