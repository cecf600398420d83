/**
 * The model square and its channels, from the operator's catalogue file (`models`, `modelChannels`;
 * validated in catalogue/seed-file.ts). Each process builds one channel router (drivers/model-upstream)
 * from the channels and rebuilds it whenever the catalogue snapshot it read changes (an edited file
 * reaches every process within seconds, catalogue/store.ts); a channel that keeps its id keeps its
 * health (failures, cooldown) across the rebuild.
 *
 * - A model inactive in the file is neither listed nor routed (a channel's other models still are).
 * - `embedded` channels answer from the embedded n-gram model under the upstream name (the
 *   channel's `modelMap`, else the model id), with the model's type and context length.
 * - `openai` channels call their base URL; an `env:NAME` key is read from this process's
 *   environment. A process lacking that variable (the file was checked where it was applied) keeps
 *   the channel disabled and logs why, rather than calling the upstream without a key.
 */
import { parseFilterBy, yuanToUnits, type Model, type ModelPage } from '@console/contract';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../clock.js';
import { ChannelRouter, EmbeddedUpstream, HttpUpstream, type Channel, type ChannelRouterOptions, type Pacer } from '../../drivers/model-upstream/index.js';
import { AppError } from '../../http/errors.js';
import { channelKeyEnvName, type CatalogueStore, type ModelChannelEntry, type ModelEntry } from '../catalogue/index.js';

/** A model of the square with its prices in 0.0001 yuan per million tokens. */
export interface ModelInfo {
  id: string;
  name: string;
  provider: string;
  type: 'chat' | 'embedding';
  contextLength: number;
  inputPricePerMillion: bigint;
  outputPricePerMillion: bigint;
  tags: string[];
  description: string;
  sort: number;
}

export interface ModelCatalogueOptions {
  catalogue: CatalogueStore;
  clock?: Clock;
  log?: Pick<FastifyBaseLogger, 'warn'>;
  /** Where `env:NAME` channel keys are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** The embedded model's output pace (tokens per second, default 40). */
  embeddedTokensPerSecond?: number;
  embeddedPacer?: Pacer;
  router?: Omit<ChannelRouterOptions, 'clock'>;
}

export class ModelCatalogue {
  private readonly routerInstance: ChannelRouter;
  private builtFrom: { models: ModelEntry[]; channels: ModelChannelEntry[] } | null = null;
  private models: ModelInfo[] = [];
  private byId = new Map<string, ModelInfo>();

  constructor(private readonly opts: ModelCatalogueOptions) {
    this.routerInstance = new ChannelRouter([], { ...opts.router, ...(opts.clock ? { clock: opts.clock } : {}) });
  }

  /** The channel router over the current channels. */
  async router(): Promise<ChannelRouter> {
    await this.current();
    return this.routerInstance;
  }

  /** Every active model, in the square's order (sort, then id). */
  async all(): Promise<ModelInfo[]> {
    await this.current();
    return this.models;
  }

  /** An active model, or undefined. */
  async get(id: string): Promise<ModelInfo | undefined> {
    await this.current();
    return this.byId.get(id);
  }

  /** The square: keyword over id, name and description; filterBy `provider`, `type`, `tag`. */
  async list(query: { page: number; pageSize: number; keyword?: string | undefined; filterBy?: string | undefined }): Promise<ModelPage> {
    const all = await this.all();
    let filters: Record<string, string>;
    try {
      filters = parseFilterBy(query.filterBy);
    } catch (e) {
      throw new AppError('VALIDATION_FAILED', `filterBy：${(e as Error).message}`);
    }
    const keyword = query.keyword?.toLowerCase();
    const hits = all.filter(
      (m) =>
        (!keyword || [m.id, m.name, m.description].some((t) => t.toLowerCase().includes(keyword))) &&
        (!filters.provider || m.provider === filters.provider) &&
        (!filters.type || m.type === filters.type) &&
        (!filters.tag || m.tags.includes(filters.tag)),
    );
    const start = (query.page - 1) * query.pageSize;
    return {
      items: hits.slice(start, start + query.pageSize).map(toDto),
      total: hits.length,
      page: query.page,
      pageSize: query.pageSize,
      providers: [...new Set(all.map((m) => m.provider))],
      tags: [...new Set(all.flatMap((m) => m.tags))],
    };
  }

  /** Rebuilds from the catalogue snapshot when its models or channels are not the ones built from. */
  private async current() {
    const snap = await this.opts.catalogue.get();
    if (this.builtFrom && this.builtFrom.models === snap.models && this.builtFrom.channels === snap.modelChannels) return;
    this.build(snap.models, snap.modelChannels);
    this.builtFrom = { models: snap.models, channels: snap.modelChannels };
  }

  private build(entries: ModelEntry[], channels: ModelChannelEntry[]) {
    const models = entries
      .filter((m) => m.active !== false)
      .map((m): ModelInfo => ({
        id: m.id,
        name: m.name,
        provider: m.provider,
        type: m.type ?? 'chat',
        contextLength: m.contextLength,
        inputPricePerMillion: yuanToUnits(m.inputYuanPerMillion),
        outputPricePerMillion: yuanToUnits(m.outputYuanPerMillion),
        tags: m.tags ?? [],
        description: m.description ?? '',
        sort: m.sort ?? 0,
      }))
      .sort((a, b) => a.sort - b.sort || a.id.localeCompare(b.id));
    const byId = new Map(models.map((m) => [m.id, m]));
    this.routerInstance.setChannels(channels.map((c) => this.channel(c, byId)));
    this.models = models;
    this.byId = byId;
  }

  private channel(c: ModelChannelEntry, models: Map<string, ModelInfo>): Channel {
    const served = c.models.filter((m) => models.has(m));
    const modelMap = c.modelMap ?? {};
    const base = { id: c.id, models: served, modelMap, priority: c.priority ?? 0, weight: c.weight ?? 1, enabled: c.enabled !== false };
    if (c.kind === 'embedded') {
      const upstream = new EmbeddedUpstream({
        models: served.map((id) => ({ id: modelMap[id] ?? id, type: models.get(id)!.type, contextLength: models.get(id)!.contextLength })),
        ...(this.opts.embeddedTokensPerSecond !== undefined ? { tokensPerSecond: this.opts.embeddedTokensPerSecond } : {}),
        ...(this.opts.embeddedPacer ? { pacer: this.opts.embeddedPacer } : {}),
      });
      return { ...base, upstream };
    }
    const envName = channelKeyEnvName(c.apiKey);
    const apiKey = envName ? (this.opts.env ?? process.env)[envName] : c.apiKey;
    if (envName && !apiKey) this.opts.log?.warn({ channel: c.id, env: envName }, '模型渠道的密钥环境变量未设置，该渠道暂不使用');
    const upstream = new HttpUpstream({ baseUrl: c.baseUrl ?? '', ...(apiKey ? { apiKey } : {}) });
    return { ...base, upstream, enabled: base.enabled && Boolean(apiKey) && Boolean(c.baseUrl) };
  }
}

function toDto(m: ModelInfo): Model {
  return {
    id: m.id,
    name: m.name,
    provider: m.provider,
    type: m.type,
    contextLength: m.contextLength,
    inputPricePerMillion: String(m.inputPricePerMillion),
    outputPricePerMillion: String(m.outputPricePerMillion),
    tags: m.tags,
    description: m.description,
  };
}
