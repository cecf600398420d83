/** Usage data in the contract's shapes for the tests of the stats page and the model bills, and handlers serving it. */
import type { ModelCall, ModelCallPage, ModelStats, ModelUsageSum } from '@console/contract';
import { json, type Handler } from '../../test/http';
import { costServer } from '../../test/fixtures/cost';

export const STATS = '/api/v1/model/stats';
export const CALLS = '/api/v1/model/calls';
export const KEYS = '/api/v1/model/keys';
export const MODELS = '/api/v1/model/models';

export const KEY_ID = '6f1c2b8e-3d4a-4e5b-9c6d-7e8f9a0b1c2d';

export const zero: ModelUsageSum = { requests: 0, failed: 0, promptTokens: 0, completionTokens: 0, packageTokens: 0, cost: '0' };
export const sum = (over: Partial<ModelUsageSum>): ModelUsageSum => ({ ...zero, ...over });

/** Every day from `from` to `to`, zeros unless `used` names the day. */
export function stats(from: string, to: string, used: Record<string, Partial<ModelUsageSum>> = {}, extra: Partial<ModelStats> = {}): ModelStats {
  const days: ModelStats['days'] = [];
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`); d = new Date(d.getTime() + 86400_000)) {
    const date = d.toISOString().slice(0, 10);
    days.push({ date, ...sum(used[date] ?? {}) });
  }
  const total = days.reduce<ModelUsageSum>(
    (t, d) => ({
      requests: t.requests + d.requests,
      failed: t.failed + d.failed,
      promptTokens: t.promptTokens + d.promptTokens,
      completionTokens: t.completionTokens + d.completionTokens,
      packageTokens: t.packageTokens + d.packageTokens,
      cost: String(BigInt(t.cost) + BigInt(d.cost)),
    }),
    zero,
  );
  return { from, to, total, days, models: [], keys: [], ...extra };
}

export function call(over: Partial<ModelCall> = {}): ModelCall {
  return {
    id: 'c1',
    createdAt: '2026-11-25T02:30:05.000Z',
    model: 'qwen-plus',
    keyId: KEY_ID,
    keyName: '生产环境',
    promptTokens: 1200,
    completionTokens: 300,
    packageTokens: 0,
    cost: '12345',
    latencyMs: 850,
    status: 'ok',
    error: null,
    ...over,
  };
}

export function callPage(items: ModelCall[], url: URL, sums: ModelUsageSum, total = items.length): ModelCallPage {
  return {
    items,
    total,
    page: Number(url.searchParams.get('page') ?? 1),
    pageSize: Number(url.searchParams.get('pageSize') ?? 10),
    sums,
    retentionDays: 30,
  };
}

/** The filters' names: one key and two models. */
const names: Handler = (url) => {
  if (url.pathname === KEYS) {
    return json(200, {
      items: [
        {
          id: KEY_ID,
          name: '生产环境',
          maskedKey: 'sk-abcd…wxyz',
          enabled: true,
          expired: false,
          expiresAt: null,
          spendLimit: null,
          spent: '0',
          allowedModels: [],
          allowedIps: [],
          rpmLimit: null,
          tpmLimit: null,
          lastUsedAt: null,
          createdAt: '2026-11-01T00:00:00.000Z',
        },
      ],
      total: 1,
      page: 1,
      pageSize: 100,
      limit: 50,
    });
  }
  if (url.pathname === MODELS) {
    const model = (id: string, name: string) => ({
      id,
      name,
      provider: '通义千问',
      type: 'chat',
      contextLength: 131072,
      inputPricePerMillion: '8000',
      outputPricePerMillion: '20000',
      tags: [],
      description: '',
    });
    return json(200, {
      items: [model('qwen-plus', '通义千问 Plus'), model('deepseek-v3', 'DeepSeek V3')],
      total: 2,
      page: 1,
      pageSize: 100,
      providers: [],
      tags: [],
    });
  }
  return undefined;
};

/** The cost server with the usage endpoints: `usage` answers stats and calls, the names are served here. */
export function usageServer(usage: Handler) {
  return costServer(usage, names);
}
