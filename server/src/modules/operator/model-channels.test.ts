/**
 * 「模型渠道」 of the operator area: who may use it, what an edit changes for the square and for a
 * /v1 call's price and routing, what it refuses, that channel keys never come back, and how long an
 * edit holds against the catalogue file.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { API, yuanToUnits, type ApiKeyCreated, type ModelPage, type OperatorModelChannels } from '@console/contract';
import { get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { catalogueState, modelCalls, users } from '../../db/schema.js';
import { checkLedger } from '../ledger/index.js';
import { DEFAULT_CATALOGUE_FILE, type ModelChannelEntry } from '../catalogue/index.js';
import { tokenCost } from '../model/gateway.js';

const LIST = API.operatorModelChannels;
const channelUrl = (id: string) => API.operatorModelChannel.replace(':id', encodeURIComponent(id));
const modelUrl = (id: string) => API.operatorModel.replace(':id', encodeURIComponent(id));

const EMBEDDED = {
  name: '内置模型',
  kind: 'embedded',
  models: ['qwen-mini-sim', 'deepseek-lite-sim', 'gpt-4o-mini-sim', 'text-embedding-sim'],
  priority: 0,
  weight: 1,
  enabled: true,
};

function catalogueCopy(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'operator-models-')), 'catalogue.json');
  writeFileSync(file, readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));
  return file;
}

describe('operator model channels', () => {
  let s: TestServer;
  let op: { token: string; user: { id: string } };
  let file: string;
  beforeAll(async () => {
    file = catalogueCopy();
    s = await startTestServer({ env: { CATALOGUE_FILE: file, MODEL_EMBEDDED_TOKENS_PER_SECOND: '2000' } });
    op = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, op.user.id));
  });
  afterAll(async () => s.close());
  afterEach(async () => expect((await checkLedger(s.ctx.db)).problems).toEqual([]));

  const del = (url: string, token?: string) => s.app.inject({ method: 'DELETE', url, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const view = async () => {
    const res = await get(s.app, LIST, op.token);
    expect(res.statusCode, res.body).toBe(200);
    return json<OperatorModelChannels>(res);
  };
  const stored = async (key: 'models' | 'modelChannels') => {
    const [row] = await s.ctx.db.select().from(catalogueState).where(eq(catalogueState.key, key));
    return row!.value as ModelChannelEntry[];
  };
  const version = async () => (await s.ctx.db.select().from(catalogueState).where(eq(catalogueState.key, 'version')))[0]!.value;
  const squarePrice = async (id: string) => json<ModelPage>(await get(s.app, `${API.modelModels}?pageSize=100`)).items.find((m) => m.id === id);

  async function fundedKey(yuan: string) {
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(yuan) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits(yuan) },
      ],
    });
    const res = await post(s.app, API.modelKeys, { name: 'gw' }, u.token);
    expect(res.statusCode, res.body).toBe(200);
    return { user: u, key: json<ApiKeyCreated>(res) };
  }
  const chat = (secret: string, model: string) =>
    s.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: `Bearer ${secret}` },
      payload: { model, messages: [{ role: 'user', content: '你好' }], max_tokens: 8 },
    });

  it('is refused to users who are not operators and to visitors, changing nothing', async () => {
    const plain = await registerUser(s);
    const before = await stored('modelChannels');
    for (const res of [
      await get(s.app, LIST, plain.token),
      await put(s.app, channelUrl('embedded'), { ...EMBEDDED, enabled: false }, plain.token),
      await put(s.app, modelUrl('qwen-mini-sim'), { inputYuanPerMillion: '0' }, plain.token),
      await del(channelUrl('embedded'), plain.token),
    ]) {
      expect(res.statusCode).toBe(403);
      expect(json(res)).toMatchObject({ code: 40300002 });
    }
    expect((await get(s.app, LIST)).statusCode).toBe(401);
    expect(await stored('modelChannels')).toEqual(before);
    expect((await squarePrice('qwen-mini-sim'))!.inputPricePerMillion).toBe('8000');
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = json<{ paths: Record<string, Record<string, unknown>> }>(await get(s.app, '/docs/json'));
    expect(Object.keys(doc.paths[LIST]!)).toEqual(['get']);
    expect(Object.keys(doc.paths['/api/v1/operator/model-channels/{id}']!).sort()).toEqual(['delete', 'put']);
    expect(Object.keys(doc.paths['/api/v1/operator/models/{id}']!)).toEqual(['put']);
  });

  it('lists the models with yuan prices and the channels with their health', async () => {
    const v = await view();
    expect(v.models.find((m) => m.id === 'qwen-mini-sim')).toMatchObject({ inputYuanPerMillion: '0.8', outputYuanPerMillion: '2', active: true });
    expect(v.channels).toEqual([
      {
        id: 'embedded',
        name: 'embedded',
        kind: 'embedded',
        baseUrl: null,
        apiKeySet: false,
        apiKeyEnv: null,
        models: EMBEDDED.models,
        modelMap: {},
        priority: 0,
        weight: 1,
        enabled: true,
        problem: null,
        health: { inUse: true, failures: 0, coolingUntil: null, lastError: null },
      },
    ]);
  });

  it('charges a /v1 call at the price the operator set, which the square shows at once', async () => {
    const res = await put(s.app, modelUrl('deepseek-lite-sim'), { inputYuanPerMillion: '30', outputYuanPerMillion: '120.5', tags: ['对话', '新价'] }, op.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(json<OperatorModelChannels>(res).models.find((m) => m.id === 'deepseek-lite-sim')).toMatchObject({
      inputYuanPerMillion: '30',
      outputYuanPerMillion: '120.5',
      tags: ['对话', '新价'],
      description: expect.stringContaining('16K'), // left as it was
    });
    expect(await squarePrice('deepseek-lite-sim')).toMatchObject({ inputPricePerMillion: '300000', outputPricePerMillion: '1205000', tags: ['对话', '新价'] });

    const { user, key } = await fundedKey('5');
    const answer = await chat(key.secret, 'deepseek-lite-sim');
    expect(answer.statusCode, answer.body).toBe(200);
    const usage = json<{ usage: { prompt_tokens: number; completion_tokens: number } }>(answer).usage;
    const expected = tokenCost({ inputPricePerMillion: 300000n, outputPricePerMillion: 1205000n }, usage.prompt_tokens, usage.completion_tokens);
    expect(expected).toBeGreaterThan(tokenCost({ inputPricePerMillion: 10000n, outputPricePerMillion: 40000n }, usage.prompt_tokens, usage.completion_tokens));
    // Calls are settled just after their answer went out.
    await s.ctx.modelGateway.drain();
    const [call] = await s.ctx.db.select().from(modelCalls).where(eq(modelCalls.keyId, key.id));
    expect(call).toMatchObject({ status: 'ok', cost: expected });
    expect((await s.ctx.ledger.balances(user.user.id)).cash).toBe(yuanToUnits('5') - expected);
  });

  it('takes a model off the square (下架) and puts it back (上架)', async () => {
    await put(s.app, modelUrl('gpt-4o-mini-sim'), { active: false }, op.token);
    expect(await squarePrice('gpt-4o-mini-sim')).toBeUndefined();
    expect((await view()).models.find((m) => m.id === 'gpt-4o-mini-sim')).toMatchObject({ active: false });
    await put(s.app, modelUrl('gpt-4o-mini-sim'), { active: true }, op.token);
    expect(await squarePrice('gpt-4o-mini-sim')).toMatchObject({ inputPricePerMillion: '10500' });
    expect(json(await put(s.app, modelUrl('no-such-model'), { active: true }, op.token))).toMatchObject({ code: 40441002 });
    // Model ids may hold a slash (vendor/model): still this route, not an unknown URL.
    expect(json(await put(s.app, modelUrl('vendor/no-such-model'), { active: true }, op.token))).toMatchObject({ code: 40441002 });
  });

  it('makes a model unavailable (503 in OpenAI shape) while its only channel is disabled, and serves it again once enabled', async () => {
    const { key } = await fundedKey('1');
    const off = await put(s.app, channelUrl('embedded'), { ...EMBEDDED, enabled: false }, op.token);
    expect(off.statusCode, off.body).toBe(200);
    expect(json<OperatorModelChannels>(off).channels[0]).toMatchObject({ enabled: false, health: { inUse: false } });
    const down = await chat(key.secret, 'qwen-mini-sim');
    expect(down.statusCode).toBe(503);
    expect(json(down)).toMatchObject({ error: { code: 'upstream_unavailable', type: 'api_error', message: expect.stringContaining('qwen-mini-sim') } });

    expect((await put(s.app, channelUrl('embedded'), EMBEDDED, op.token)).statusCode).toBe(200);
    const up = await chat(key.secret, 'qwen-mini-sim');
    expect(up.statusCode, up.body).toBe(200);
    expect(json(up)).toMatchObject({ object: 'chat.completion', model: 'qwen-mini-sim' });
  });

  it('refuses bad input with the field and a Chinese message, changing nothing', async () => {
    const models = await stored('models');
    const channels = await stored('modelChannels');
    const v = await version();
    const remote = { name: '上游', kind: 'openai', baseUrl: 'https://llm.example.com/v1', apiKey: 'sk-x', models: ['qwen-mini-sim'] };
    for (const [url, body, code, detail] of [
      [modelUrl('qwen-mini-sim'), { inputYuanPerMillion: '-1' }, 40000001, /^inputYuanPerMillion：价格须为不小于 0 的数字/],
      [modelUrl('qwen-mini-sim'), { outputYuanPerMillion: '0.00001' }, 40000001, /^outputYuanPerMillion：.*最多 4 位小数/],
      [channelUrl('remote'), { ...remote, baseUrl: 'ftp://llm.example.com' }, 40000001, /^baseUrl：Base URL 须为 http:\/\/ 或 https:\/\//],
      [channelUrl('remote'), { ...remote, baseUrl: 'not a url' }, 40000001, /^baseUrl：/],
      [channelUrl('remote'), { ...remote, baseUrl: 'https://user:pw@llm.example.com/v1' }, 40000001, /不能包含账号或密码/],
      [channelUrl('remote'), { ...remote, baseUrl: undefined }, 40000001, /^baseUrl：OpenAI 兼容渠道须填写 Base URL/],
      [channelUrl('remote'), { ...remote, weight: 0 }, 40000001, /^weight：权重须为 1 到 10000 的整数/],
      [channelUrl('remote'), { ...remote, models: [] }, 40000001, /^models：渠道至少要提供一个模型/],
      [channelUrl('remote'), { ...remote, models: ['qwen-mini-sim', 'gpt-9-sim'] }, 40041001, /模型 gpt-9-sim 不在模型列表中/],
      [channelUrl('remote'), { ...remote, apiKey: undefined }, 40041002, /^apiKey：OpenAI 兼容渠道须填写 API Key/],
      [channelUrl('remote'), { ...remote, apiKey: 'env:NO_SUCH_MODEL_KEY_VAR' }, 40041002, /环境变量 NO_SUCH_MODEL_KEY_VAR/],
      [channelUrl('remote'), { ...remote, modelMap: { 'deepseek-lite-sim': 'ds' } }, 40000001, /^modelMap：模型映射中的模型须是该渠道提供的模型/],
      [channelUrl('bad id!'), remote, 40000001, /^id：渠道编号只能包含/],
    ] as const) {
      const res = await put(s.app, url, body, op.token);
      expect(res.statusCode, `${url} ${JSON.stringify(body)}`).toBe(400);
      expect(json(res).code, res.body).toBe(code);
      expect(json(res).detail, res.body).toMatch(detail);
    }
    expect(json(await del(channelUrl('nope'), op.token))).toMatchObject({ code: 40441001, message: '模型渠道不存在或已删除，请刷新列表' });
    expect(await stored('models')).toEqual(models);
    expect(await stored('modelChannels')).toEqual(channels);
    expect(await version()).toEqual(v);
  });

  it('never answers a channel key, keeps it when left out, and shows cooldown after an upstream fails', async () => {
    const secret = 'sk-upstream-secret-7f3a9c';
    // Nothing listens on port 1: the channel fails to connect, the call falls back to the embedded one.
    const body = { name: '备用上游', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', apiKey: secret, models: ['qwen-mini-sim'], priority: 10 };
    const created = await put(s.app, channelUrl('backup'), body, op.token);
    expect(created.statusCode, created.body).toBe(200);
    expect(created.body).not.toContain(secret);
    expect(json<OperatorModelChannels>(created).channels.find((c) => c.id === 'backup')).toMatchObject({
      name: '备用上游',
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKeySet: true,
      apiKeyEnv: null,
      priority: 10,
      health: { inUse: true, failures: 0 },
    });

    // Edited without a key: the stored one stays.
    const { apiKey: _left, ...withoutKey } = body;
    expect((await put(s.app, channelUrl('backup'), { ...withoutKey, weight: 3 }, op.token)).statusCode).toBe(200);
    expect((await stored('modelChannels')).find((c) => c.id === 'backup')).toMatchObject({ apiKey: secret, weight: 3 });

    const { key } = await fundedKey('1');
    const answer = await chat(key.secret, 'qwen-mini-sim');
    expect(answer.statusCode, answer.body).toBe(200);
    const listed = await get(s.app, LIST, op.token);
    expect(listed.body).not.toContain(secret);
    const backup = json<OperatorModelChannels>(listed).channels.find((c) => c.id === 'backup')!;
    expect(backup.health).toMatchObject({ inUse: true, failures: 1, lastError: expect.any(String) });
    expect(Date.parse(backup.health.coolingUntil!)).toBe(s.clock.now().getTime() + 30_000);

    // An env:NAME key shows the variable's name, never its value.
    process.env.OPERATOR_TEST_MODEL_KEY = 'sk-from-env-value';
    try {
      const env = await put(s.app, channelUrl('backup'), { ...body, apiKey: 'env:OPERATOR_TEST_MODEL_KEY' }, op.token);
      expect(env.statusCode, env.body).toBe(200);
      expect(env.body).not.toContain('sk-from-env-value');
      expect(json<OperatorModelChannels>(env).channels.find((c) => c.id === 'backup')).toMatchObject({ apiKeySet: true, apiKeyEnv: 'OPERATOR_TEST_MODEL_KEY' });
    } finally {
      delete process.env.OPERATOR_TEST_MODEL_KEY;
    }
    expect((await view()).channels.find((c) => c.id === 'backup')).toMatchObject({ problem: '服务器未设置环境变量 OPERATOR_TEST_MODEL_KEY，该渠道暂不使用' });

    const gone = await del(channelUrl('backup'), op.token);
    expect(gone.statusCode).toBe(200);
    expect(json<OperatorModelChannels>(gone).channels.map((c) => c.id)).toEqual(['embedded']);
  });

  it('holds an edit while the models and channels of the file are unchanged and gives way to the file once they change', async () => {
    await put(s.app, modelUrl('text-embedding-sim'), { inputYuanPerMillion: '0.7' }, op.token);
    await put(s.app, channelUrl('extra'), { ...EMBEDDED, name: '第二内置', models: ['qwen-mini-sim'] }, op.token);
    // A restart or the watcher with the same file writes nothing.
    expect(await s.ctx.reloadCatalogue()).toBe(false);
    expect((await squarePrice('text-embedding-sim'))!.inputPricePerMillion).toBe('7000');
    expect((await view()).channels.map((c) => c.id)).toEqual(['embedded', 'extra']);

    // An edit elsewhere in the file (a GPU type's description) is applied and leaves them alone.
    const edited = JSON.parse(readFileSync(file, 'utf8'));
    edited.gpuTypes[0].description = `${edited.gpuTypes[0].description ?? ''} `;
    edited.version += 1;
    writeFileSync(file, JSON.stringify(edited, null, 2));
    expect(await s.ctx.reloadCatalogue()).toBe(true);
    expect((await squarePrice('text-embedding-sim'))!.inputPricePerMillion).toBe('7000');
    expect((await view()).channels.map((c) => c.id)).toEqual(['embedded', 'extra']);

    // A change of the file's models (a description) puts back the file's models and channels.
    edited.models[0].description = `${edited.models[0].description} `;
    edited.version += 1;
    writeFileSync(file, JSON.stringify(edited, null, 2));
    expect(await s.ctx.reloadCatalogue()).toBe(true);
    expect((await squarePrice('text-embedding-sim'))!.inputPricePerMillion).toBe('5000');
    expect((await squarePrice('deepseek-lite-sim'))!.inputPricePerMillion).toBe('10000');
    expect((await view()).channels.map((c) => c.id)).toEqual(['embedded']);
  });
});
