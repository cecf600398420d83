/**
 * The operator's catalogue file (server/catalogue/catalogue.json, or CATALOGUE_FILE): validated,
 * then written into the catalogue tables by id when its `version` is newer than the database's
 * (published.ts). Applying the same file twice changes nothing; an entry removed from the file is
 * deactivated, not deleted, because orders and instances refer to it.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { eq, inArray, not, sql } from 'drizzle-orm';
import { z } from 'zod';
import { BillingCycle, InstanceCategory, SIZE_CATEGORIES, yuanToUnits } from '@console/contract';
import type { Db, Tx } from '../../db/client.js';
import {
  catalogueApplications,
  catalogueGpuTypes,
  catalogueHosts,
  catalogueImages,
  cataloguePrices,
  catalogueRegions,
  catalogueRooms,
  catalogueSizes,
  catalogueState,
} from './schema.js';
import { rateToBp } from './pricing.js';
import { canonicalJson, lockPublished, writePublished } from './published.js';

export const DEFAULT_CATALOGUE_FILE = fileURLToPath(new URL('../../../catalogue/catalogue.json', import.meta.url));

const slug = z.string().regex(/^[\w.-]{1,64}$/, '编号只能包含字母、数字、点、下划线和横线');
const yuan = z.string().refine((v) => {
  try {
    return yuanToUnits(v) >= 0n;
  } catch {
    return false;
  }
}, '金额须为非负的元，最多 4 位小数');
const rate = z.string().refine((v) => rateToBp(v) !== null, '折扣须为 0 到 1 之间、最多 4 位小数的数字');
/** A share such as a bonus, where 0 is allowed. */
const fraction = z.string().refine((v) => v.trim() === '0' || rateToBp(v) !== null, '须为 0 到 1 之间、最多 4 位小数的数字');
const cyclePrice = z.object({ list: yuan, rate: rate.optional() });
const prices = z.partialRecord(z.enum(BillingCycle.values), cyclePrice).refine((p) => p.Hour !== undefined, '至少要有 Hour（按时）价格');
const categories = z.array(z.enum(InstanceCategory.values));
/** A document of the site: one string, or an array of lines (easier to edit in JSON). */
const agreementText = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v.join('\n') : v).trim())
  .pipe(z.string().min(1, '协议内容不能为空').max(100_000, '协议内容过长（最多 10 万字）'));

/** One model of the square (`models` of the file; also what the operator area edits, model-channels.ts). */
export const modelEntrySchema = z.object({
  /** As clients send it in `model`. */
  id: z.string().regex(/^[\w.:/-]{1,100}$/, '模型名称只能包含字母、数字和 . _ - : /，最多 100 个字符'),
  name: z.string().min(1),
  provider: z.string().min(1),
  type: z.enum(['chat', 'embedding']).default('chat'),
  contextLength: z.number().int().min(1).max(10_000_000),
  inputYuanPerMillion: yuan,
  outputYuanPerMillion: yuan,
  tags: z.array(z.string().min(1)).default([]),
  description: z.string().default(''),
  sort: z.number().int().default(0),
  active: z.boolean().default(true),
});

/** One upstream channel (`modelChannels` of the file; also what the operator area edits, model-channels.ts). */
export const modelChannelEntrySchema = z.object({
  id: slug,
  /** What the operator area shows (left out: the id). */
  name: z.string().trim().min(1).max(50).optional(),
  kind: z.enum(['embedded', 'openai']),
  /** openai: up to and including the version, e.g. https://api.example.com/v1. */
  baseUrl: z.url({ protocol: /^https?$/, error: '渠道地址须为 http:// 或 https:// 开头的网址' }).optional(),
  /** openai: the key, or "env:NAME" to read it from the server's environment (keeps the secret out of this file). */
  apiKey: z.string().min(1).optional(),
  /** The models (ids of `models`) this channel serves. */
  models: z.array(z.string().min(1)).min(1, '渠道至少要提供一个模型'),
  /** Model id → the upstream's own name for it. */
  modelMap: z.record(z.string(), z.string().min(1)).default({}),
  priority: z.number().int().min(-1000).max(1000).default(0),
  weight: z.number().int().min(0).max(10_000).default(1),
  enabled: z.boolean().default(true),
});

export const catalogueFileSchema = z.object({
  /**
   * The catalogue's version (published.ts): a whole number the operator raises with every edit. A
   * file is applied only when its version is higher than the one the database has; left out, the
   * file counts as version 0 (applied only where nothing was published yet).
   */
  version: z
    .number({ error: 'version 须为正整数' })
    .int('version 须为正整数')
    .min(1, 'version 须为正整数（不写则视为 0）')
    .max(Number.MAX_SAFE_INTEGER, 'version 过大')
    .optional(),
  settings: z.object({
    dataDiskPricePerGbDay: yuan,
    studentDiscountRate: rate,
    newUserVoucherYuan: yuan,
    rechargeBonusRate: fraction,
    /** The 企业微信客服 link (http or https). Left out or "": the console shows no customer-service entry. */
    customerServiceUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/, error: '客服链接须为 http:// 或 https:// 开头的网址' })]).optional(),
    /** 用户协议 and 隐私政策 (agreements.ts has the format); left out: the defaults shipped in agreements.ts. */
    userAgreement: agreementText.optional(),
    privacyPolicy: agreementText.optional(),
    rechargeMinYuan: yuan.default('10'),
    rechargeMaxYuan: yuan.default('50000'),
    giftValidDays: z.number().int().min(1).max(3650).default(365),
    newUserVoucherValidDays: z.number().int().min(1).max(3650).default(30),
    paymentTimeoutMinutes: z.number().int().min(1).max(1440).default(15),
    /** The welcome credit a new account may claim (GET /order/api/v2.1/gift/eligibility); 0: none. */
    welcomeGiftYuan: yuan.default('0'),
    welcomeGiftValidDays: z.number().int().min(1).max(3650).default(30),
    /** After its validity a welcome item waits this long for renewal (status 0) before it expires. */
    giftRenewGraceDays: z.number().int().min(0).max(365).default(7),
    /** A renewal gives this many more days. */
    giftRenewDays: z.number().int().min(1).max(3650).default(30),
    /** What an instance started in no-card mode (no GPU mounted) costs per hour, post-paid. */
    noCardPricePerHourYuan: yuan.default('0.1'),
    /** What such an instance gets instead of its own CPU and memory (shown to the owner; the compute backend sizes the machine). */
    noCardCpu: z.number().positive().max(256).default(0.5),
    noCardMemoryGb: z.number().positive().max(4096).default(2),
    /** A post-paid instance stopped this long is released (its data deleted), with a notice before. */
    stoppedReleaseDays: z.number().int().min(1).max(365).default(15),
    /** A prepaid instance not renewed is stopped at expiry and released this long after it. */
    expiredReleaseDays: z.number().int().min(1).max(365).default(7),
    /** How long before a release the owner gets a notice. */
    releaseNoticeHours: z.number().int().min(1).max(720).default(24),
    /** Images an account may keep in my images (saved from stopped instances; kept free of charge). */
    userImageLimit: z.number().int().min(0).max(1000).default(10),
    /** After a migration the new host's cards are kept this long for the instance's start, then go back to the pool. */
    migrateHoldMinutes: z.number().int().min(5).max(10_080).default(120),
    /** E-commerce machines: what each Mbps beyond the size's own bandwidth costs per hour. */
    bandwidthPricePerMbpsHourYuan: yuan.default('0.03'),
    /** The bandwidths (Mbps) an e-commerce machine may be upgraded to, besides what its size includes. */
    bandwidthStepsMbps: z.array(z.number().int().min(1).max(10_000)).min(1).max(20).default([5, 10, 20, 30, 50, 100]),
    /**
     * The market on a real host (COMPUTE_DRIVER=local): how many times its cores and its memory are sold
     * to the machines that run at once (1: never more than it has; 2: each core sold twice). The
     * simulated fleet ignores them.
     */
    hostCpuOvercommit: z.number().min(0.1).max(64).default(1),
    hostMemoryOvercommit: z.number().min(0.1).max(16).default(1),
  }),
  regions: z.array(z.object({ id: slug, name: z.string().min(1), area: z.string().default('') })),
  rooms: z.array(
    z.object({ id: slug, regionId: slug, name: z.string().min(1), zones: z.array(z.string().min(1)).min(1), isDefault: z.boolean().default(false) }),
  ),
  gpuTypes: z.array(
    z.object({
      id: slug,
      name: z.string().min(1),
      memoryGb: z.number().int().positive(),
      architecture: z.string(),
      cudaCapability: z.string(),
      minCuda: z.string().regex(/^\d+\.\d+$/),
      fp32Tflops: z.number().positive(),
      description: z.string().default(''),
      prices,
    }),
  ),
  hosts: z.array(
    z.object({
      id: slug,
      name: z.string().min(1),
      roomId: slug,
      zone: z.string().min(1),
      gpuTypeId: slug,
      gpuTotal: z.number().int().min(1).max(16),
      gpuBusy: z.number().int().min(0).default(0),
      cpuModel: z.string(),
      cpuPerGpu: z.number().int().positive(),
      memoryGbPerGpu: z.number().int().positive(),
      systemDiskGb: z.number().int().positive(),
      dataDiskFreeGb: z.number().int().min(0),
      dataDiskMaxGb: z.number().int().positive(),
      maxCuda: z.string().regex(/^\d+\.\d+$/),
    }),
  ),
  sizes: z.array(
    z.object({
      id: slug,
      category: z.enum(SIZE_CATEGORIES),
      name: z.string().min(1),
      cpu: z.number().int().positive(),
      memoryGb: z.number().int().positive(),
      systemDiskGb: z.number().int().positive(),
      bandwidthMbps: z.number().int().positive(),
      gpuName: z.string().default(''),
      regionIds: z.array(slug).min(1),
      description: z.string().default(''),
      prices,
    }),
  ),
  images: z.array(
    z.object({
      id: slug,
      kind: z.enum(['os', 'framework']),
      name: z.string().min(1),
      os: z.string(),
      framework: z.string().default(''),
      frameworkVersion: z.string().default(''),
      cuda: z.union([z.literal(''), z.string().regex(/^\d+\.\d+$/)]).default(''),
      python: z.string().default(''),
      forGpu: z.boolean(),
      forCategories: categories,
      description: z.string().default(''),
      /** The OCI image machines boot from (`console/base:12`; built by `npm run images` or the operator's registry); absent: the host's own system. */
      oci: z
        .string()
        .regex(/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?$/, 'OCI 镜像引用格式不正确')
        .nullable()
        .default(null),
    }),
  ),
  applications: z.array(
    z.object({
      id: slug,
      name: z.string().min(1),
      category: z.string().min(1),
      description: z.string(),
      cover: z.string(),
      defaultPort: z.number().int().min(1).max(65535),
      imageId: slug,
      minGpuMemoryGb: z.number().int().min(0),
      tags: z.array(z.string()).default([]),
    }),
  ),
  /** 资源包 sold as Ai orders: a quantity of a unit (model tokens, GPU hours) valid for some days. */
  resourceProducts: z
    .array(
      z.object({
        id: slug,
        name: z.string().min(1),
        unit: z.string().min(1),
        quantity: z.string().regex(/^\d{1,15}$/),
        price: yuan,
        validDays: z.number().int().min(1).max(3650),
        description: z.string().default(''),
        /** A GPU-hour package: the card type whose post-paid runs it pays for; quantity is in card hours. */
        gpuTypeId: z.string().min(1).optional(),
      }),
    )
    .default([]),
  /** The model square (issue 14): what clients may call, priced per million tokens. */
  models: z.array(modelEntrySchema).default([]),
  /** Where calls for the models go: the embedded model, or an OpenAI-compatible endpoint. */
  modelChannels: z.array(modelChannelEntrySchema).default([]),
});
export type CatalogueFile = z.infer<typeof catalogueFileSchema>;
export type ModelEntry = CatalogueFile['models'][number];
export type ModelChannelEntry = CatalogueFile['modelChannels'][number];

/** `env:NAME` names an environment variable holding a channel's key. */
export function channelKeyEnvName(apiKey: string | undefined): string | null {
  const m = apiKey === undefined ? null : /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(apiKey);
  return m ? m[1]! : null;
}
export type ResourceProductEntry = CatalogueFile['resourceProducts'][number];
export type CatalogueSettings = CatalogueFile['settings'];

export class CatalogueFileError extends Error {}

/** `env` resolves the channels' `env:NAME` keys (a missing one is an error of the file). */
export function readCatalogueFile(file: string, env: NodeJS.ProcessEnv = process.env): { data: CatalogueFile; hash: string } {
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CatalogueFileError(`目录文件 ${file} 不是有效的 JSON：${(e as Error).message}`);
  }
  const parsed = catalogueFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CatalogueFileError(`目录文件 ${file} 第 ${issue.path.join('.')} 项有误：${issue.message}`);
  }
  checkReferences(parsed.data, file, env);
  return { data: parsed.data, hash: contentHash(parsed.data) };
}

/**
 * What tells two files of the same version apart: the SHA-256 of the validated content, without
 * its version (keys sorted: reformatting the file or reordering an object's keys changes nothing).
 */
export function contentHash(data: CatalogueFile): string {
  const { version: _v, ...content } = data;
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/** Every id a row points at must exist in the same file, and ids must be unique. */
function checkReferences(c: CatalogueFile, file: string, env: NodeJS.ProcessEnv) {
  const fail = (msg: string): never => {
    throw new CatalogueFileError(`目录文件 ${file}：${msg}`);
  };
  const ids = (rows: { id: string }[], what: string) => {
    const set = new Set<string>();
    for (const r of rows) {
      if (set.has(r.id)) fail(`${what} ${r.id} 重复`);
      set.add(r.id);
    }
    return set;
  };
  const regions = ids(c.regions, '地区');
  const rooms = ids(c.rooms, '机房');
  const gpuTypes = ids(c.gpuTypes, 'GPU 型号');
  const images = ids(c.images, '镜像');
  ids(c.hosts, '主机');
  ids(c.sizes, '规格');
  ids(c.applications, '镜像应用');
  for (const r of c.rooms) if (!regions.has(r.regionId)) fail(`机房 ${r.id} 的地区 ${r.regionId} 不存在`);
  for (const h of c.hosts) {
    if (!rooms.has(h.roomId)) fail(`主机 ${h.id} 的机房 ${h.roomId} 不存在`);
    if (!gpuTypes.has(h.gpuTypeId)) fail(`主机 ${h.id} 的 GPU 型号 ${h.gpuTypeId} 不存在`);
    if (h.gpuBusy > h.gpuTotal) fail(`主机 ${h.id} 的 gpuBusy 大于 gpuTotal`);
    const room = c.rooms.find((r) => r.id === h.roomId)!;
    if (!room.zones.includes(h.zone)) fail(`主机 ${h.id} 的可用区 ${h.zone} 不在机房 ${room.id} 中`);
  }
  for (const s of c.sizes) for (const r of s.regionIds) if (!regions.has(r)) fail(`规格 ${s.id} 的地区 ${r} 不存在`);
  for (const a of c.applications) if (!images.has(a.imageId)) fail(`镜像应用 ${a.id} 的镜像 ${a.imageId} 不存在`);
  for (const p of c.resourceProducts) if (p.gpuTypeId && !gpuTypes.has(p.gpuTypeId)) fail(`资源包 ${p.id} 的 GPU 型号 ${p.gpuTypeId} 不存在`);
  checkModels(c, fail, env);
}

function checkModels(c: CatalogueFile, fail: (msg: string) => never, env: NodeJS.ProcessEnv) {
  const models = new Set<string>();
  for (const [i, m] of c.models.entries()) {
    if (models.has(m.id)) fail(`models.${i}.id：模型 ${m.id} 重复`);
    models.add(m.id);
  }
  const channels = new Set<string>();
  for (const [i, ch] of c.modelChannels.entries()) {
    const at = `modelChannels.${i}`;
    if (channels.has(ch.id)) fail(`${at}.id：模型渠道 ${ch.id} 重复`);
    channels.add(ch.id);
    checkModelChannel(ch, at, models, fail, env);
  }
}

/**
 * What a channel must agree on with the rest of the catalogue: its models exist, its renames are of
 * models it serves, an openai channel has a base URL and a key, and an `env:NAME` key names a
 * variable set in `env`. Used for the file and for an operator's edit (model-channels.ts).
 */
export function checkModelChannel(ch: ModelChannelEntry, at: string, models: ReadonlySet<string>, fail: (msg: string) => never, env: NodeJS.ProcessEnv) {
  for (const [j, m] of ch.models.entries()) if (!models.has(m)) fail(`${at}.models.${j}：模型渠道 ${ch.id} 的模型 ${m} 不在 models 中`);
  for (const m of Object.keys(ch.modelMap)) if (!ch.models.includes(m)) fail(`${at}.modelMap.${m}：模型渠道 ${ch.id} 不提供模型 ${m}，不能为它改名`);
  if (ch.kind === 'openai') {
    if (!ch.baseUrl) fail(`${at}.baseUrl：openai 模型渠道 ${ch.id} 须填写 baseUrl`);
    if (!ch.apiKey) fail(`${at}.apiKey：openai 模型渠道 ${ch.id} 须填写 apiKey（可写 env:变量名 从环境变量读取）`);
    const name = channelKeyEnvName(ch.apiKey);
    if (ch.apiKey!.startsWith('env:') && !name) fail(`${at}.apiKey：${ch.apiKey} 不是有效的环境变量引用（env:变量名）`);
    if (name && !env[name]) fail(`${at}.apiKey：模型渠道 ${ch.id} 的密钥引用的环境变量 ${name} 未设置`);
  }
}

/** What applying a file did (applyCatalogue); describeApply says it in the log's words. */
export type ApplyOutcome =
  /** The file's version was higher than the database's (or nothing was published): it is the catalogue now. */
  | { result: 'applied'; version: number; previous: number | null }
  /** The database already has this version with this content. */
  | { result: 'unchanged'; version: number }
  /** Refused, nothing written: the database has a higher version, or this version with other content. */
  | { result: 'older' | 'conflict'; version: number; databaseVersion: number };

/**
 * Writes the file into the tables when its `version` is higher than the catalogue version the
 * database has (published.ts); an older file, or one of the same version with other content, is
 * refused and changes nothing. Serialised across processes by the `published` row lock, so of two
 * replicas applying different files at once the higher version is what stays.
 *
 * The operator area edits `models` and `modelChannels` in place (model-channels.ts). The file's
 * two lists have a hash of their own (`modelsHash`): a newer file that changes something else (a
 * GPU's price) leaves the console's edits alone; the first time a newer file's `models` or
 * `modelChannels` differ from what was last applied from a file, both lists are replaced wholesale
 * by the file's — every console edit of models and channels is lost, a channel created in the
 * console disappears, one deleted there comes back.
 */
export async function applyCatalogue(db: Db, file: { data: CatalogueFile; hash: string }, now: Date): Promise<ApplyOutcome> {
  const version = file.data.version ?? 0;
  return db.transaction(async (tx): Promise<ApplyOutcome> => {
    const published = await lockPublished(tx, now);
    if (published) {
      if (version < published.version) return { result: 'older', version, databaseVersion: published.version };
      if (version === published.version) {
        return published.hash === file.hash ? { result: 'unchanged', version } : { result: 'conflict', version, databaseVersion: published.version };
      }
    }
    await writeCatalogue(tx, file.data, now);
    await writePublished(tx, { version, hash: file.hash, source: 'file' }, now);
    // The hash of the last file applied before versions existed (its lock row until then).
    await tx.delete(catalogueState).where(eq(catalogueState.key, 'seedHash'));
    await setState(tx, 'settings', file.data.settings, now);
    await setState(tx, 'resourceProducts', file.data.resourceProducts, now);
    const modelsHash = createHash('sha256')
      .update(JSON.stringify([file.data.models, file.data.modelChannels]))
      .digest('hex');
    const [applied] = await tx.select().from(catalogueState).where(eq(catalogueState.key, 'modelsHash'));
    if (applied?.value !== modelsHash) {
      await setState(tx, 'models', file.data.models, now);
      await setState(tx, 'modelChannels', file.data.modelChannels, now);
      await setState(tx, 'modelsHash', modelsHash, now);
    }
    await bumpVersion(tx, now);
    return { result: 'applied', version, previous: published?.version ?? null };
  });
}

/** The log lines of an apply (Chinese, for the operator): what happened and, when refused, what to do. */
export function describeApply(path: string, file: { data: CatalogueFile }, outcome: ApplyOutcome): { level: 'info' | 'warn'; message: string }[] {
  const lines: { level: 'info' | 'warn'; message: string }[] = [];
  const next = (v: number) => v + 1;
  switch (outcome.result) {
    case 'applied':
      lines.push({
        level: 'info',
        message:
          outcome.previous === null
            ? `目录文件 ${path} 版本 ${outcome.version} 已生效（数据库中此前没有目录版本）`
            : `目录文件 ${path} 版本 ${outcome.version} 已生效（数据库中原为版本 ${outcome.previous}）`,
      });
      break;
    case 'unchanged':
      break;
    case 'older':
      lines.push({
        level: 'warn',
        message: `目录文件 ${path} 的版本 ${outcome.version} 低于数据库中已生效的版本 ${outcome.databaseVersion}，未应用，继续使用版本 ${outcome.databaseVersion}。这是一份旧的目录文件：请换成最新的目录文件；如确要以它为准，把其中的 version 改为 ${next(outcome.databaseVersion)} 后保存`,
      });
      break;
    case 'conflict':
      lines.push({
        level: 'warn',
        message: `目录文件 ${path} 的版本 ${outcome.version} 与数据库中已生效的版本相同，但内容不同，未应用，继续使用数据库中的版本 ${outcome.databaseVersion}。修改目录时请同时把 version 改为 ${next(outcome.databaseVersion)} 后保存`,
      });
      break;
  }
  if (file.data.version === undefined) {
    lines.push({
      level: 'warn',
      message: `目录文件 ${path} 没有 version，按版本 0 处理：只在数据库中还没有目录时应用。请在文件开头加上 "version": 1，以后每次修改目录都把它加 1，否则修改不会生效`,
    });
  }
  return lines;
}

async function setState(tx: Tx, key: string, value: unknown, now: Date) {
  await tx
    .insert(catalogueState)
    .values({ key, value, updatedAt: now })
    .onConflictDoUpdate({ target: catalogueState.key, set: { value, updatedAt: now } });
}

/** The catalogue's version: every process reloads its cached copy when it changes. */
export async function bumpVersion(tx: Tx | Db, now: Date) {
  await tx
    .insert(catalogueState)
    .values({ key: 'version', value: 1, updatedAt: now })
    .onConflictDoUpdate({ target: catalogueState.key, set: { value: sql`to_jsonb((${catalogueState.value})::text::int + 1)`, updatedAt: now } });
}

async function writeCatalogue(tx: Tx, c: CatalogueFile, now: Date) {
  const sorted = <T>(rows: T[]) => rows.map((r, i) => ({ ...r, sort: i, active: true }));
  await upsert(tx, catalogueRegions, sorted(c.regions));
  await upsert(tx, catalogueRooms, sorted(c.rooms));
  await upsert(tx, catalogueGpuTypes, sorted(c.gpuTypes.map(({ prices: _p, ...g }) => g)));
  await upsert(tx, catalogueSizes, sorted(c.sizes.map(({ prices: _p, ...s }) => s)));
  await upsert(tx, catalogueImages, sorted(c.images));
  await upsert(tx, catalogueApplications, sorted(c.applications));
  await writeHosts(tx, c.hosts, now);
  await writePrices(tx, c);
}

type Upsertable =
  typeof catalogueRegions | typeof catalogueRooms | typeof catalogueGpuTypes | typeof catalogueSizes | typeof catalogueImages | typeof catalogueApplications;

async function upsert<T extends Upsertable>(tx: Tx, table: T, rows: (T['$inferInsert'] & { id: string })[]) {
  const ids = rows.map((r) => r.id);
  await tx
    .update(table)
    .set({ active: false } as never)
    .where(ids.length ? not(inArray(table.id, ids)) : sql`true`);
  for (const row of rows) {
    const { id: _id, ...rest } = row;
    await tx
      .insert(table)
      .values(row as never)
      .onConflictDoUpdate({ target: table.id, set: rest as never });
  }
}

/**
 * Hosts keep their live inventory: a change of gpuTotal moves gpuFree by the same amount (never
 * below zero), and gpuBusy only counts when the host is new.
 */
async function writeHosts(tx: Tx, hosts: CatalogueFile['hosts'], now: Date) {
  const ids = hosts.map((h) => h.id);
  await tx
    .update(catalogueHosts)
    .set({ active: false, updatedAt: now })
    .where(ids.length ? not(inArray(catalogueHosts.id, ids)) : sql`true`);
  for (const [i, { gpuBusy, ...h }] of hosts.entries()) {
    const row = { ...h, sort: i, active: true, updatedAt: now };
    await tx
      .insert(catalogueHosts)
      .values({ ...row, gpuFree: h.gpuTotal - gpuBusy })
      .onConflictDoUpdate({
        target: catalogueHosts.id,
        set: {
          ...row,
          gpuFree: sql`least(greatest(${catalogueHosts.gpuFree} + ${h.gpuTotal} - ${catalogueHosts.gpuTotal}, 0), ${h.gpuTotal})`,
        },
      });
  }
}

async function writePrices(tx: Tx, c: CatalogueFile) {
  await tx.delete(cataloguePrices);
  const rows: (typeof cataloguePrices.$inferInsert)[] = [];
  const add = (productKind: 'gpu' | 'size', productId: string, prices: CatalogueFile['gpuTypes'][number]['prices']) => {
    for (const cycle of BillingCycle.values) {
      // Usage is billed like Hour unless the operator prices it apart.
      const p = prices[cycle] ?? (cycle === 'Usage' ? prices.Hour : undefined);
      if (!p) continue;
      rows.push({ productKind, productId, cycle, listPrice: yuanToUnits(p.list), discountBp: rateToBp(p.rate ?? '1')! });
    }
  };
  for (const g of c.gpuTypes) add('gpu', g.id, g.prices);
  for (const s of c.sizes) add('size', s.id, s.prices);
  if (rows.length) await tx.insert(cataloguePrices).values(rows);
}
