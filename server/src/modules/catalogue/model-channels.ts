/**
 * The operator area's edits of the model square (issue 14): a model's prices, 上架 / 下架, order,
 * tags and description; an upstream channel created, edited or deleted.
 *
 * The catalogue file's `models` and `modelChannels` live as two JSON rows of `catalogue_state`
 * (seed-file.ts applyCatalogue). An edit rewrites the row in one transaction with the catalogue
 * version bump, so every process reloads it within seconds (store.ts) and rebuilds its channel
 * router (model/catalogue.ts); the process that made the edit sees it at once.
 *
 * How long an edit holds: applyCatalogue writes a file only when its `version` is newer than the
 * catalogue version the database has (published.ts), and an edit here leaves that version alone. So
 * an edit survives restarts and the file watcher until a newer file is applied whose `models` or
 * `modelChannels` differ from the last file's (`modelsHash`): then both lists are replaced wholesale
 * by the file's and every edit made here is gone. To keep an edit for good, write it into the file too.
 *
 * Each edit takes the catalogue's lock first (lockPublished, the lock applyCatalogue takes): an edit
 * and a file being applied never interleave, and two operators' edits apply one after the other
 * (neither is lost). Keys are stored as given, like the file's; the operator area never returns them.
 */
import { inArray } from 'drizzle-orm';
import type { ModelChannelSaveRequest, OperatorModel, OperatorModelChannel, OperatorModelChannels, OperatorModelUpdate } from '@console/contract';
import type { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Db, Tx } from '../../db/client.js';
import type { ChannelHealth } from '../../drivers/model-upstream/index.js';
import { AppError } from '../../http/errors.js';
import { catalogueState } from './schema.js';
import { lockPublished } from './published.js';
import {
  bumpVersion,
  channelKeyEnvName,
  checkModelChannel,
  modelChannelEntrySchema,
  modelEntrySchema,
  type ModelChannelEntry,
  type ModelEntry,
} from './seed-file.js';
import type { CatalogueStore, Snapshot } from './store.js';

/** The channel as the route hands it over (the contract's schema applied: defaults filled in). */
export type ModelChannelSave = Required<Omit<ModelChannelSaveRequest, 'baseUrl' | 'apiKey'>> & Pick<ModelChannelSaveRequest, 'baseUrl' | 'apiKey'>;

interface Lists {
  models: ModelEntry[];
  channels: ModelChannelEntry[];
}

export class ModelChannelAdmin {
  private readonly env: NodeJS.ProcessEnv;

  constructor(private readonly deps: { db: Db; store: CatalogueStore; clock: Clock; env?: NodeJS.ProcessEnv }) {
    this.env = deps.env ?? process.env;
  }

  /** Every model and channel as stored, keys withheld, with each channel's health as `health` (this process's router) has it. */
  view(snap: Pick<Snapshot, 'models' | 'modelChannels'>, health: readonly ChannelHealth[]): OperatorModelChannels {
    const active = new Set(snap.models.filter((m) => m.active !== false).map((m) => m.id));
    return {
      models: snap.models.map(toModelView),
      channels: snap.modelChannels.map((c) =>
        this.channelView(
          c,
          active,
          health.find((h) => h.id === c.id),
        ),
      ),
    };
  }

  /** Creates the channel `id` or replaces it; `apiKey` left out keeps the stored one. Returns whether it was new. */
  async saveChannel(id: string, input: ModelChannelSave): Promise<{ created: boolean }> {
    return this.edit(({ models, channels }) => {
      const index = channels.findIndex((c) => c.id === id);
      const existing = index >= 0 ? channels[index] : undefined;
      const modelIds = new Set(models.map((m) => m.id));
      const unknown = input.models.filter((m) => !modelIds.has(m));
      if (unknown.length) throw new AppError('MODEL_CHANNEL_MODEL_UNKNOWN', `models：模型 ${unknown.join('、')} 不在模型列表中`);
      const entry = this.channelEntry(id, input, existing);
      const at = `modelChannels.${index >= 0 ? index : channels.length}`;
      // The file's own checks, as a last net; a kept env:NAME key is not checked again (the list shows its problem).
      const keptEnv = input.apiKey === undefined ? channelKeyEnvName(entry.apiKey) : null;
      const env = keptEnv ? { ...this.env, [keptEnv]: this.env[keptEnv] ?? 'kept' } : this.env;
      checkModelChannel(
        entry,
        at,
        modelIds,
        (msg) => {
          throw new AppError('MODEL_CHANNEL_INVALID', msg.replace(`${at}.`, ''));
        },
        env,
      );
      const next = [...channels];
      if (existing) next[index] = entry;
      else next.push(entry);
      return { channels: next, result: { created: !existing } };
    });
  }

  async deleteChannel(id: string): Promise<void> {
    await this.edit(({ channels }) => {
      if (!channels.some((c) => c.id === id)) throw new AppError('MODEL_CHANNEL_NOT_FOUND', `渠道 ${id} 不存在`);
      return { channels: channels.filter((c) => c.id !== id), result: undefined };
    });
  }

  /** Changes what `patch` names of model `id`; the rest stays. */
  async updateModel(id: string, patch: OperatorModelUpdate): Promise<OperatorModel> {
    return this.edit(({ models }) => {
      const index = models.findIndex((m) => m.id === id);
      if (index < 0) throw new AppError('MODEL_ENTRY_NOT_FOUND', `模型 ${id} 不在目录中`);
      const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
      const entry = parseEntry(modelEntrySchema, { ...models[index], ...changes });
      const next = [...models];
      next[index] = entry;
      return { models: next, result: toModelView(entry) };
    });
  }

  private channelEntry(id: string, input: ModelChannelSave, existing: ModelChannelEntry | undefined): ModelChannelEntry {
    const base = {
      id,
      name: input.name,
      kind: input.kind,
      models: input.models,
      modelMap: input.modelMap,
      priority: input.priority,
      weight: input.weight,
      enabled: input.enabled,
    };
    // The embedded model needs neither address nor key: whatever was stored goes.
    if (input.kind === 'embedded') return parseEntry(modelChannelEntrySchema, base);
    const apiKey = input.apiKey ?? (existing?.kind === 'openai' ? existing.apiKey : undefined);
    if (!apiKey) throw new AppError('MODEL_CHANNEL_INVALID', 'apiKey：OpenAI 兼容渠道须填写 API Key（可写 env:变量名，从服务器的环境变量读取）');
    if (input.apiKey !== undefined && apiKey.startsWith('env:')) {
      const name = channelKeyEnvName(apiKey);
      if (!name) throw new AppError('MODEL_CHANNEL_INVALID', 'apiKey：env: 后须为环境变量名（字母、数字和下划线，不以数字开头）');
      if (!this.env[name]) throw new AppError('MODEL_CHANNEL_INVALID', `apiKey：服务器上没有设置环境变量 ${name}，请先设置并重启服务，或直接填写密钥`);
    }
    return parseEntry(modelChannelEntrySchema, { ...base, baseUrl: input.baseUrl, apiKey });
  }

  private channelView(c: ModelChannelEntry, activeModels: ReadonlySet<string>, h: ChannelHealth | undefined): OperatorModelChannel {
    const env = channelKeyEnvName(c.apiKey);
    const enabled = c.enabled !== false;
    let problem: string | null = null;
    if (enabled) {
      if (env && !this.env[env]) problem = `服务器未设置环境变量 ${env}，该渠道暂不使用`;
      else if (c.kind === 'openai' && (!c.baseUrl || !c.apiKey)) problem = '缺少 Base URL 或 API Key，该渠道暂不使用';
      else if (!c.models.some((m) => activeModels.has(m))) problem = '渠道的模型均已下架，该渠道不接收请求';
    }
    return {
      id: c.id,
      name: c.name ?? c.id,
      kind: c.kind,
      baseUrl: c.kind === 'openai' ? (c.baseUrl ?? null) : null,
      apiKeySet: Boolean(c.apiKey),
      apiKeyEnv: env,
      models: c.models,
      modelMap: c.modelMap ?? {},
      priority: c.priority ?? 0,
      weight: c.weight ?? 1,
      enabled,
      problem,
      health: {
        inUse: h?.enabled ?? false,
        failures: h?.failures ?? 0,
        coolingUntil: h?.coolingUntil?.toISOString() ?? null,
        lastError: h?.lastError ?? null,
      },
    };
  }

  /** Reads both lists under the file's lock, writes what `change` returns and bumps the version, all in one transaction. */
  private async edit<T>(change: (lists: Lists) => { models?: ModelEntry[]; channels?: ModelChannelEntry[]; result: T }): Promise<T> {
    const now = this.deps.clock.now();
    const result = await this.deps.db.transaction(async (tx) => {
      await lockPublished(tx, now);
      const rows = await tx
        .select()
        .from(catalogueState)
        .where(inArray(catalogueState.key, ['models', 'modelChannels']));
      const value = <V>(key: string) => (rows.find((r) => r.key === key)?.value as V[] | undefined) ?? [];
      const out = change({ models: value<ModelEntry>('models'), channels: value<ModelChannelEntry>('modelChannels') });
      if (out.models) await writeState(tx, 'models', out.models, now);
      if (out.channels) await writeState(tx, 'modelChannels', out.channels, now);
      await bumpVersion(tx, now);
      return out.result;
    });
    this.deps.store.invalidateAll();
    return result;
  }
}

function parseEntry<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new AppError('VALIDATION_FAILED', `${issue.path.join('.') || 'body'}：${issue.message}`);
}

async function writeState(tx: Tx, key: string, value: unknown, now: Date) {
  await tx
    .insert(catalogueState)
    .values({ key, value, updatedAt: now })
    .onConflictDoUpdate({ target: catalogueState.key, set: { value, updatedAt: now } });
}

function toModelView(m: ModelEntry): OperatorModel {
  return {
    id: m.id,
    name: m.name,
    provider: m.provider,
    type: m.type ?? 'chat',
    contextLength: m.contextLength,
    inputYuanPerMillion: m.inputYuanPerMillion,
    outputYuanPerMillion: m.outputYuanPerMillion,
    tags: m.tags ?? [],
    description: m.description ?? '',
    sort: m.sort ?? 0,
    active: m.active !== false,
  };
}
