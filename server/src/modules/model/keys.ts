/**
 * API keys of the model gateway (/model/key).
 *
 * - A key is `sk-` and 48 random base62 characters, shown once when it is made. Only its SHA-256 is
 *   stored (a call's bearer is looked up by that hash) and a masked form `sk-abcd…wxyz` for the list.
 * - A key belongs to the account that made it (each account sees and manages only its own) and
 *   spends its payer's balance: a child account's keys spend its parent's (contract payerIdOf). A
 *   child needs `usingLLM` to manage keys (the routes) and for its keys to work (authenticate).
 * - Per key: name, enabled, expiry, spend limit (0.0001 yuan, against what the key has spent, the
 *   holds of its calls under way included: reserveSpend),
 *   allowed models (empty: all), allowed addresses (IPv4/IPv6 CIDR, node:net BlockList),
 *   requests-per-minute and tokens-per-minute limits. At most API_KEY_LIMIT keys per account.
 * - The rate limits are counted in the counters every console process shares (drivers/counters:
 *   PostgreSQL's rate_counts, Redis with REDIS_URL, this process's memory on PGlite): a sliding
 *   minute in one-second steps, requests counted at admission and tokens when the call is settled.
 *   An admission is one call of the counters (one round trip), all or nothing: three replicas
 *   admit a 3-rpm key's calls 3 times in all, not 3 times each. Only keys with a limit are counted
 *   (a limit newly set counts from then on). Nothing else about a key (spend, last use) lives in
 *   memory: the spend limit is held in the database (reserveSpend).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { and, count, desc, eq, isNull, sql } from 'drizzle-orm';
import {
  API_KEY_LIMIT,
  parseCidr,
  payerIdOf,
  type ApiKey,
  type ApiKeyCreateRequest,
  type ApiKeyCreated,
  type ApiKeyPage,
  type ApiKeyUpdateRequest,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { MemoryCounters, type CounterCheck, type Counters } from '../../drivers/counters/index.js';
import { AppError } from '../../http/errors.js';
import type { UserService } from '../users/index.js';
import type { ModelCatalogue } from './catalogue.js';
import { RecentCache } from './recent-cache.js';
import { modelApiKeys } from './schema.js';

type KeyRow = typeof modelApiKeys.$inferSelect;
type UserRow = NonNullable<Awaited<ReturnType<UserService['findById']>>>;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 48;
const SECRET_FORMAT = /^sk-[0-9A-Za-z]{48}$/;
/** Whether a bearer is meant as an API key (anything else at /v1 is tried as a console session). */
export function looksLikeApiKey(bearer: string): boolean {
  return bearer
    .replace(/^Bearer\s+/i, '')
    .trim()
    .startsWith('sk-');
}
/** How long a key row is reused before it is read again (see ApiKeyService.keyByHash). */
export const KEY_CACHE_MS = 1000;
/** A busy key's spend is written at most this often: the calls settled meanwhile go in one update. */
export const USE_GATHER_MS = 200;
/** Requests per minute of the online experience, per account. */
export const PLAYGROUND_RPM = 30;
/** The playground key's name in the stats and the call log. */
export const PLAYGROUND_KEY_NAME = '在线体验';

/** `sk-` and 48 base62 characters from the CSPRNG (bytes ≥ 248 are skipped, so every character is equally likely). */
export function newSecret(): string {
  let out = 'sk-';
  while (out.length < 3 + SECRET_LENGTH) {
    for (const b of randomBytes(64)) {
      if (b >= 248) continue;
      out += BASE62[b % 62];
      if (out.length === 3 + SECRET_LENGTH) break;
    }
  }
  return out;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function maskSecret(secret: string): string {
  return `${secret.slice(0, 7)}…${secret.slice(-4)}`;
}

/** Why a bearer was refused, with the HTTP status and OpenAI error code the gateway answers. */
export type ApiKeyFailureReason =
  | 'unknown_key'
  | 'disabled'
  | 'expired'
  | 'account_disabled'
  | 'permission_denied'
  | 'ip_not_allowed'
  | 'model_not_allowed'
  | 'over_spend_limit'
  | 'rate_limited'
  | 'rate_limiter_unavailable';

export interface ApiKeyFailure {
  ok: false;
  reason: ApiKeyFailureReason;
  status: 401 | 403 | 429 | 503;
  /** OpenAI's `error.code`. */
  code: string;
  /** For the user, in Chinese: what happened and what to do. */
  message: string;
  /** rate_limited: when a call would be admitted again. */
  retryAfterMs?: number;
}

/** What the gateway needs of an admitted key. */
export interface AuthenticatedKey {
  id: string;
  name: string;
  ownerId: string;
  payerId: string;
  allowedModels: string[];
  /** What the key may still spend (0.0001 yuan), null: no limit of its own. */
  spendLeft: bigint | null;
  tpmLimit: number | null;
}

export type ApiKeyAuthResult = { ok: true; key: AuthenticatedKey; user: UserRow } | ApiKeyFailure;

const FAILURES: Record<ApiKeyFailureReason, Omit<ApiKeyFailure, 'ok' | 'reason'>> = {
  unknown_key: { status: 401, code: 'invalid_api_key', message: 'API 密钥无效：请检查密钥是否完整，或在控制台「API KEY」中新建密钥' },
  disabled: { status: 401, code: 'api_key_disabled', message: 'API 密钥已停用：请在控制台「API KEY」中启用，或换用其他密钥' },
  expired: { status: 401, code: 'api_key_expired', message: 'API 密钥已过期：请在控制台「API KEY」中延长有效期，或新建密钥' },
  account_disabled: { status: 403, code: 'account_disabled', message: '账号已被停用，请联系客服' },
  permission_denied: { status: 403, code: 'permission_denied', message: '子账号没有使用大模型的权限（usingLLM），请联系主账号开通' },
  ip_not_allowed: { status: 403, code: 'ip_not_allowed', message: '当前 IP 不在该密钥的 IP 白名单中：请在控制台「API KEY」中添加' },
  model_not_allowed: { status: 403, code: 'model_not_allowed', message: '该密钥不能调用此模型：请在控制台「API KEY」中调整可用模型，或换用其他密钥' },
  over_spend_limit: { status: 403, code: 'api_key_spend_limit', message: '该密钥的消费已达上限：请在控制台「API KEY」中提高上限，或换用其他密钥' },
  rate_limited: { status: 429, code: 'rate_limit_exceeded', message: '该密钥每分钟的请求数或 Token 数已达上限，请稍后重试' },
  rate_limiter_unavailable: { status: 503, code: 'rate_limiter_unavailable', message: '限流计数服务暂时不可用，本次请求未执行，请稍后重试' },
};

function failure(reason: ApiKeyFailureReason, extra: { retryAfterMs?: number; message?: string } = {}): ApiKeyFailure {
  return { ok: false, reason, ...FAILURES[reason], ...extra };
}

/** The rate limits' window: a sliding minute. */
const MINUTE_MS = 60_000;

export class ApiKeyService {
  /** Per key: the spend gathering for the next write, and the write under way (see recordUse). */
  private readonly useQueued = new Map<string, { cost: bigint; at: Date; written: Promise<void> }>();
  private readonly useWriting = new Map<string, Promise<void>>();
  /** Key rows by secret hash (see keyByHash). */
  private readonly keyCache: RecentCache<string, KeyRow>;
  /** When each key's spend was last written (recordUse). */
  private readonly useWrittenAt = new Map<string, number>();
  /** The account behind a key, and whether it may call, by owner; kept as long as key rows. */
  private readonly accountCache: RecentCache<string, { user: UserRow; refused: ApiKeyFailure | null }>;
  /** Allowed-address lists by their text (shared by keys with the same list). */
  private readonly blockLists = new Map<string, BlockList>();

  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      users: Pick<UserService, 'findById'>;
      models: Pick<ModelCatalogue, 'get'>;
      /** Where requests and tokens per minute are counted (default: this process's memory). */
      counters?: Counters;
      /** Told when the counters cannot be reached (the call is refused 503). */
      onError?: (e: unknown) => void;
      /** Keys per account (default API_KEY_LIMIT). */
      limit?: number;
    },
  ) {
    const now = () => deps.clock.now().getTime();
    this.keyCache = new RecentCache(KEY_CACHE_MS, now);
    this.accountCache = new RecentCache(KEY_CACHE_MS, now);
    this.counters = deps.counters ?? new MemoryCounters();
  }

  private readonly counters: Counters;

  private get limit() {
    return this.deps.limit ?? API_KEY_LIMIT;
  }

  async list(ownerId: string, query: { page: number; pageSize: number }): Promise<ApiKeyPage> {
    const live = and(eq(modelApiKeys.ownerId, ownerId), isNull(modelApiKeys.deletedAt), eq(modelApiKeys.playground, false));
    const [rows, [total]] = await Promise.all([
      this.deps.db
        .select()
        .from(modelApiKeys)
        .where(live)
        .orderBy(desc(modelApiKeys.createdAt), desc(modelApiKeys.id))
        .limit(query.pageSize)
        .offset((query.page - 1) * query.pageSize),
      this.deps.db.select({ n: count() }).from(modelApiKeys).where(live),
    ]);
    const now = this.deps.clock.now();
    return { items: rows.map((r) => toDto(r, now)), total: total?.n ?? 0, page: query.page, pageSize: query.pageSize, limit: this.limit };
  }

  /** Makes a key for this account; the answer holds the secret, which is never shown again. */
  async create(owner: UserRow, req: ApiKeyCreateRequest): Promise<ApiKeyCreated> {
    const now = this.deps.clock.now();
    const expiresAt = this.expiry(req.expiresAt, now);
    await this.checkModels(req.allowedModels, []);
    const secret = newSecret();
    const row = await this.deps.db.transaction(async (tx) => {
      // One account's keys are made one at a time, so two at once cannot both pass the limit.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`model-api-key:${owner.id}`}, 0))`);
      const [n] = await tx
        .select({ n: count() })
        .from(modelApiKeys)
        .where(and(eq(modelApiKeys.ownerId, owner.id), isNull(modelApiKeys.deletedAt), eq(modelApiKeys.playground, false)));
      if ((n?.n ?? 0) >= this.limit) throw new AppError('API_KEY_LIMIT', `已有 ${n!.n} 个密钥，上限 ${this.limit} 个`);
      const [created] = await tx
        .insert(modelApiKeys)
        .values({
          id: randomUUID(),
          ownerId: owner.id,
          payerId: payerIdOf(owner),
          name: req.name,
          secretHash: hashSecret(secret),
          masked: maskSecret(secret),
          expiresAt,
          spendLimit: req.spendLimit === null ? null : BigInt(req.spendLimit),
          allowedModels: unique(req.allowedModels),
          allowedIps: unique(req.allowedIps.map((ip) => ip.trim())),
          rpmLimit: req.rpmLimit,
          tpmLimit: req.tpmLimit,
          createdAt: now,
          updatedAt: now,
        })
        .returning();
      return created!;
    });
    return { ...toDto(row, now), secret };
  }

  async update(ownerId: string, id: string, req: ApiKeyUpdateRequest): Promise<ApiKey> {
    const now = this.deps.clock.now();
    const row = await this.own(ownerId, id);
    const set: Partial<typeof modelApiKeys.$inferInsert> = { updatedAt: now };
    if (req.name !== undefined) set.name = req.name;
    if (req.enabled !== undefined) set.enabled = req.enabled;
    if (req.expiresAt !== undefined) set.expiresAt = this.expiry(req.expiresAt, now);
    if (req.spendLimit !== undefined) set.spendLimit = req.spendLimit === null ? null : BigInt(req.spendLimit);
    if (req.allowedModels !== undefined) {
      // Models the key already names may have left the square since; only newly added ones must exist.
      await this.checkModels(req.allowedModels, row.allowedModels);
      set.allowedModels = unique(req.allowedModels);
    }
    if (req.allowedIps !== undefined) set.allowedIps = unique(req.allowedIps.map((ip) => ip.trim()));
    if (req.rpmLimit !== undefined) set.rpmLimit = req.rpmLimit;
    if (req.tpmLimit !== undefined) set.tpmLimit = req.tpmLimit;
    const [updated] = await this.deps.db
      .update(modelApiKeys)
      .set(set)
      .where(and(eq(modelApiKeys.id, id), isNull(modelApiKeys.deletedAt)))
      .returning();
    if (!updated) throw new AppError('API_KEY_NOT_FOUND');
    this.keyCache.delete(updated.secretHash);
    return toDto(updated, now);
  }

  /** Deletes the key: it stops working at once and leaves the list (its row stays for the call log). */
  async remove(ownerId: string, id: string): Promise<void> {
    const row = await this.own(ownerId, id);
    const now = this.deps.clock.now();
    await this.deps.db
      .update(modelApiKeys)
      .set({ deletedAt: now, enabled: false, updatedAt: now })
      .where(and(eq(modelApiKeys.id, id), isNull(modelApiKeys.deletedAt)));
    this.keyCache.delete(row.secretHash);
  }

  /**
   * Whether a call may go ahead: the bearer (`sk-…`, with or without `Bearer `), the caller's address,
   * and the model it asks for (left out for calls of no model, such as the model list). Checks in
   * order: the key, its account, the address, the model, the spend limit, the rate limits; an
   * admitted call counts towards the key's requests per minute.
   */
  async authenticate(bearer: string, ip: string, model?: string): Promise<ApiKeyAuthResult> {
    const secret = bearer.replace(/^Bearer\s+/i, '').trim();
    if (!SECRET_FORMAT.test(secret)) return failure('unknown_key');
    const row = await this.keyByHash(hashSecret(secret));
    if (!row) return failure('unknown_key');
    const now = this.deps.clock.now();
    if (!row.enabled) return failure('disabled');
    if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) return failure('expired');

    const { user, refused } = await this.account(row.ownerId);
    if (refused) return refused;
    if (row.allowedIps.length && !this.ipAllowed(row.allowedIps, ip)) {
      return failure('ip_not_allowed', { message: `当前 IP ${ip} 不在该密钥的 IP 白名单中：请在控制台「API KEY」中添加` });
    }
    if (model !== undefined && row.allowedModels.length && !row.allowedModels.includes(model)) {
      return failure('model_not_allowed', { message: `该密钥不能调用模型 ${model}：请在控制台「API KEY」中调整可用模型，或换用其他密钥` });
    }
    if (row.spendLimit !== null && row.spent >= row.spendLimit) return failure('over_spend_limit');

    // Tokens are only looked at (they are counted when the call is settled); the request is counted.
    const checks: (CounterCheck & { message: string })[] = [];
    if (row.tpmLimit !== null)
      checks.push({
        key: tokensKey(row.id),
        limit: row.tpmLimit,
        amount: 0,
        windowMs: MINUTE_MS,
        message: `该密钥每分钟最多 ${row.tpmLimit} 个 Token，请稍后重试`,
      });
    if (row.rpmLimit !== null)
      checks.push({
        key: requestsKey(row.id),
        limit: row.rpmLimit,
        amount: 1,
        windowMs: MINUTE_MS,
        message: `该密钥每分钟最多 ${row.rpmLimit} 次请求，请稍后重试`,
      });
    const limited = await this.take(checks, now);
    if (limited) return limited;
    return { ok: true, user: user!, key: authenticated(row) };
  }

  /** Forgets what is known of an account: its state changed in this process (another process's changes count within KEY_CACHE_MS). */
  forgetAccount(userId: string): void {
    this.accountCache.delete(userId);
  }

  /** The key owner's account and whether it may call (disabled, a child without usingLLM or with a disabled parent), kept KEY_CACHE_MS. */
  private async account(ownerId: string): Promise<{ user: UserRow | undefined; refused: ApiKeyFailure | null }> {
    const known = await this.accountCache.get(ownerId, async () => {
      const user = await this.deps.users.findById(ownerId);
      return user && { user, refused: await this.accountRefusal(user) };
    });
    return known ?? { user: undefined, refused: failure('account_disabled') };
  }

  /**
   * The key row of a secret's hash, kept KEY_CACHE_MS in this process and refreshed ahead (every
   * call of a busy key would otherwise read it again). This process's own edits and deletions drop
   * it at once; another process's take effect within KEY_CACHE_MS.
   */
  private async keyByHash(hash: string): Promise<KeyRow | undefined> {
    return this.keyCache.get(hash, async () => {
      const [row] = await this.deps.db
        .select()
        .from(modelApiKeys)
        .where(and(eq(modelApiKeys.secretHash, hash), isNull(modelApiKeys.deletedAt)));
      return row;
    });
  }

  /**
   * The online experience (/model/experience) calls the gateway with the console's session instead
   * of a key: its calls go through the account's playground key, made on first use, under the same
   * account checks and PLAYGROUND_RPM requests per minute.
   */
  async playground(user: UserRow): Promise<ApiKeyAuthResult> {
    const refused = await this.accountRefusal(user);
    if (refused) return refused;
    const row = await this.playgroundKey(user);
    const limited = await this.take(
      [{ key: requestsKey(row.id), limit: PLAYGROUND_RPM, amount: 1, windowMs: MINUTE_MS, message: `在线体验每分钟最多 ${PLAYGROUND_RPM} 次请求，请稍后重试` }],
      this.deps.clock.now(),
    );
    if (limited) return limited;
    return { ok: true, user, key: authenticated(row) };
  }

  /** Counts the call against its limits (one call of the counters, none without limits); the refusal, or null when admitted. */
  private async take(checks: (CounterCheck & { message: string })[], now: Date): Promise<ApiKeyFailure | null> {
    if (!checks.length) return null;
    let taken;
    try {
      taken = await this.counters.take(checks, now.getTime());
    } catch (e) {
      // The counters cannot be reached: the call is refused rather than admitted past every replica's count.
      this.deps.onError?.(e);
      return failure('rate_limiter_unavailable');
    }
    if (taken.ok) return null;
    return failure('rate_limited', { retryAfterMs: taken.retryAfterMs, message: checks[taken.index]!.message });
  }

  private async playgroundKey(user: UserRow): Promise<KeyRow> {
    const mine = and(eq(modelApiKeys.ownerId, user.id), eq(modelApiKeys.playground, true));
    const [found] = await this.deps.db.select().from(modelApiKeys).where(mine);
    if (found) return found;
    const now = this.deps.clock.now();
    await this.deps.db
      .insert(modelApiKeys)
      .values({
        id: randomUUID(),
        ownerId: user.id,
        payerId: payerIdOf(user),
        name: PLAYGROUND_KEY_NAME,
        // Nobody ever holds this secret: the key is only reached through a console session.
        secretHash: hashSecret(newSecret()),
        masked: PLAYGROUND_KEY_NAME,
        playground: true,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing();
    const [made] = await this.deps.db.select().from(modelApiKeys).where(mine);
    return made!;
  }

  /** Why this account may not call the gateway (disabled, its parent disabled, a child without usingLLM), or null. */
  private async accountRefusal(user: UserRow): Promise<ApiKeyFailure | null> {
    if (user.disabled || user.deletedAt) return failure('account_disabled');
    if (user.isChild) {
      const parent = await this.deps.users.findById(payerIdOf(user));
      if (!parent || parent.disabled) return failure('account_disabled', { message: '主账号已停用，请联系客服' });
      if (!user.usingLLM) return failure('permission_denied');
    }
    return null;
  }

  /**
   * A settled call: adds its cost to the key's spend and notes the time of use (the later of the
   * stored one and `at`); `tokens` count towards its tokens per minute in the shared counters (the
   * gateway passes them for keys with a tpm limit only). Calls of one
   * key settling at once are written together: while one update of the key's row is under way the
   * next ones gather and follow as one (otherwise every settle of a busy key would queue on that row,
   * each holding a database connection). Resolves once this call's spend is written.
   */
  recordUse(keyId: string, cost: bigint, at: Date, tokens = 0): Promise<void> {
    const counted = tokens > 0 ? this.counters.add(tokensKey(keyId), tokens, MINUTE_MS, this.deps.clock.now().getTime()) : null;
    const written = this.queueUse(keyId, cost, at);
    return counted ? Promise.all([written, counted]).then(() => {}) : written;
  }

  private queueUse(keyId: string, cost: bigint, at: Date): Promise<void> {
    let next = this.useQueued.get(keyId);
    if (!next) {
      const batch = { cost: 0n, at, written: Promise.resolve() };
      batch.written = this.writeUse(keyId, batch);
      this.useQueued.set(keyId, batch);
      next = batch;
    }
    next.cost += cost;
    if (at > next.at) next.at = at;
    return next.written;
  }

  private async writeUse(keyId: string, batch: { cost: bigint; at: Date }): Promise<void> {
    // Waits for the write under way (if any), and writes a busy key at most every USE_GATHER_MS;
    // everything recorded meanwhile joins this batch.
    await this.useWriting.get(keyId)?.catch(() => {});
    const since = performance.now() - (this.useWrittenAt.get(keyId) ?? -Infinity);
    if (since < USE_GATHER_MS) await new Promise((resolve) => setTimeout(resolve, USE_GATHER_MS - since));
    this.useQueued.delete(keyId);
    if (this.useWrittenAt.size >= 10_000) this.useWrittenAt.clear();
    this.useWrittenAt.set(keyId, performance.now());
    const write = this.deps.db
      .update(modelApiKeys)
      .set({
        spent: sql`${modelApiKeys.spent} + ${batch.cost}`,
        lastUsedAt: sql`greatest(${modelApiKeys.lastUsedAt}, ${batch.at.toISOString()}::timestamptz)`,
      })
      .where(eq(modelApiKeys.id, keyId))
      .returning({ secretHash: modelApiKeys.secretHash, spent: modelApiKeys.spent })
      .then(([updated]) => {
        // The spend limit is checked against the cached row: keep its spend current in this process.
        if (updated) this.keyCache.patch(updated.secretHash, (row) => ({ ...row, spent: updated.spent }));
      });
    this.useWriting.set(keyId, write);
    try {
      await write;
    } finally {
      if (this.useWriting.get(keyId) === write) this.useWriting.delete(keyId);
    }
  }

  /**
   * Counts a call's hold against its key's spend limit before the upstream is asked, in the hold's
   * transaction: `spent` takes the hold at once (calls under way count as spent), and only while it
   * stays within the limit — one conditional update, so calls at once in any number of processes
   * cannot together pass it. False: the limit would be passed (the caller rolls back). The settle
   * puts the difference to the exact cost (adjustSpend), the sweeper gives back a dead call's hold.
   */
  async reserveSpend(tx: Executor, keyId: string, held: bigint): Promise<boolean> {
    const [kept] = await tx
      .update(modelApiKeys)
      .set({ spent: sql`${modelApiKeys.spent} + ${held}` })
      .where(and(eq(modelApiKeys.id, keyId), sql`(${modelApiKeys.spendLimit} is null or ${modelApiKeys.spent} + ${held} <= ${modelApiKeys.spendLimit})`))
      .returning({ id: modelApiKeys.id });
    return kept !== undefined;
  }

  /** A reserved call's spend, from its hold to what it cost (`delta` = cost − hold), in the settle's transaction. */
  async adjustSpend(tx: Executor, keyId: string, delta: bigint): Promise<void> {
    if (delta === 0n) return;
    await tx
      .update(modelApiKeys)
      .set({ spent: sql`${modelApiKeys.spent} + ${delta}` })
      .where(eq(modelApiKeys.id, keyId));
  }

  private async own(ownerId: string, id: string): Promise<KeyRow> {
    const [row] = await this.deps.db
      .select()
      .from(modelApiKeys)
      .where(and(eq(modelApiKeys.id, id), eq(modelApiKeys.ownerId, ownerId), isNull(modelApiKeys.deletedAt), eq(modelApiKeys.playground, false)));
    if (!row) throw new AppError('API_KEY_NOT_FOUND');
    return row;
  }

  private expiry(iso: string | null, now: Date): Date | null {
    if (iso === null) return null;
    const at = new Date(iso);
    if (at.getTime() <= now.getTime()) throw new AppError('API_KEY_EXPIRY_PAST', `expiresAt：${iso} 不晚于当前时间`);
    return at;
  }

  private async checkModels(wanted: string[], already: string[]) {
    for (const [i, id] of wanted.entries()) {
      if (already.includes(id)) continue;
      if (!(await this.deps.models.get(id))) throw new AppError('MODEL_UNKNOWN', `allowedModels.${i}：模型 ${id} 不在模型广场中`);
    }
  }

  private ipAllowed(ranges: string[], ip: string): boolean {
    const text = ranges.join(',');
    let list = this.blockLists.get(text);
    if (!list) {
      list = new BlockList();
      for (const range of ranges) {
        const parsed = parseCidr(range);
        if (!parsed) continue;
        list.addSubnet(parsed.address, parsed.prefix, parsed.family);
      }
      if (this.blockLists.size >= 10_000) this.blockLists.clear();
      this.blockLists.set(text, list);
    }
    // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    const address = mapped ? mapped[1]! : ip;
    if (isIPv4(address)) return list.check(address, 'ipv4');
    if (isIPv6(address)) return list.check(address, 'ipv6');
    return false;
  }
}

/** A key's counters (drivers/counters): its requests and its tokens over the last minute. */
function requestsKey(keyId: string): string {
  return `key-rpm:${keyId}`;
}

function tokensKey(keyId: string): string {
  return `key-tpm:${keyId}`;
}

function authenticated(row: KeyRow): AuthenticatedKey {
  return {
    id: row.id,
    name: row.name,
    ownerId: row.ownerId,
    payerId: row.payerId,
    allowedModels: row.allowedModels,
    spendLeft: row.spendLimit === null ? null : row.spendLimit - row.spent,
    tpmLimit: row.tpmLimit,
  };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function toDto(r: KeyRow, now: Date): ApiKey {
  return {
    id: r.id,
    name: r.name,
    maskedKey: r.masked,
    enabled: r.enabled,
    expired: r.expiresAt !== null && r.expiresAt.getTime() <= now.getTime(),
    expiresAt: r.expiresAt?.toISOString() ?? null,
    spendLimit: r.spendLimit === null ? null : String(r.spendLimit),
    spent: String(r.spent),
    allowedModels: r.allowedModels,
    allowedIps: r.allowedIps,
    rpmLimit: r.rpmLimit,
    tpmLimit: r.tpmLimit,
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
  };
}
