import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eq } from 'drizzle-orm';
import { API, type ApiKey, type ApiKeyCreated, type ApiKeyPage, type ModelPage, type PermissionFlag } from '@console/contract';
import { childAccount, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { ManualClock } from '../../clock.js';
import { modelApiKeys } from '../../db/schema.js';
import { DEFAULT_CATALOGUE_FILE, readCatalogueFile, type CatalogueStore, type ModelChannelEntry, type ModelEntry } from '../catalogue/index.js';
import { ModelCatalogue } from './catalogue.js';

const KEYS = API.modelKeys;
const keyUrl = (id: string) => `/api/v1/model/keys/${id}`;

function catalogueWith(edit: (c: any) => void): string {
  const c = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));
  edit(c);
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'model-catalogue-')), 'catalogue.json');
  writeFileSync(file, JSON.stringify(c));
  return file;
}

describe('model catalogue in the operator file', () => {
  it('names the field of a bad price, a channel model not in models, and a channel key env var that is not set', () => {
    const badPrice = catalogueWith((c) => (c.models[0].inputYuanPerMillion = '-1'));
    expect(() => readCatalogueFile(badPrice)).toThrow(/models\.0\.inputYuanPerMillion 项有误：金额须为非负的元/);
    const tooPrecise = catalogueWith((c) => (c.models[1].outputYuanPerMillion = '0.00001'));
    expect(() => readCatalogueFile(tooPrecise)).toThrow(/models\.1\.outputYuanPerMillion/);

    const unknownModel = catalogueWith((c) => c.modelChannels[0].models.push('gpt-9-sim'));
    expect(() => readCatalogueFile(unknownModel)).toThrow(/modelChannels\.0\.models\.4：模型渠道 embedded 的模型 gpt-9-sim 不在 models 中/);

    const openai = (c: any) =>
      c.modelChannels.push({ id: 'remote', kind: 'openai', baseUrl: 'https://llm.example.com/v1', apiKey: 'env:MODEL_TEST_KEY', models: ['qwen-mini-sim'] });
    const envKey = catalogueWith(openai);
    expect(() => readCatalogueFile(envKey, {})).toThrow(/modelChannels\.1\.apiKey：模型渠道 remote 的密钥引用的环境变量 MODEL_TEST_KEY 未设置/);
    expect(readCatalogueFile(envKey, { MODEL_TEST_KEY: 'sk-upstream' }).data.modelChannels[1]).toMatchObject({ id: 'remote', apiKey: 'env:MODEL_TEST_KEY' });
    const noUrl = catalogueWith((c) => c.modelChannels.push({ id: 'remote', kind: 'openai', apiKey: 'k', models: ['qwen-mini-sim'] }));
    expect(() => readCatalogueFile(noUrl)).toThrow(/modelChannels\.1\.baseUrl/);
    const dupModel = catalogueWith((c) => c.models.push({ ...c.models[0] }));
    expect(() => readCatalogueFile(dupModel)).toThrow(/models\.4\.id：模型 qwen-mini-sim 重复/);
  });

  it('takes an edited file at once: new prices, a model taken off the square and out of the router', async () => {
    const file = catalogueWith(() => {});
    const s = await startTestServer({ env: { CATALOGUE_FILE: file } });
    try {
      expect((await s.ctx.models.router()).modelNames()).toContain('deepseek-lite-sim');
      const edited = JSON.parse(readFileSync(file, 'utf8'));
      edited.models[0].inputYuanPerMillion = '0.3';
      edited.models[1].active = false;
      edited.version += 1;
      writeFileSync(file, JSON.stringify(edited));
      expect(await s.ctx.reloadCatalogue()).toBe(true);
      const page = json<ModelPage>(await get(s.app, API.modelModels));
      expect(page.items.map((m) => m.id)).toEqual(['qwen-mini-sim', 'gpt-4o-mini-sim', 'text-embedding-sim']);
      expect(page.items[0]!.inputPricePerMillion).toBe('3000');
      expect((await s.ctx.models.router()).modelNames()).not.toContain('deepseek-lite-sim');
    } finally {
      await s.close();
    }
  });

  it('rebuilds the router when the channels change and keeps the health of a channel that keeps its id', async () => {
    const clock = new ManualClock(new Date('2026-11-23T08:00:00Z'));
    const model: ModelEntry = {
      id: 'm-sim',
      name: 'M',
      provider: 'p',
      type: 'chat',
      contextLength: 4096,
      inputYuanPerMillion: '1',
      outputYuanPerMillion: '2',
      tags: [],
      description: '',
      sort: 0,
      active: true,
    };
    const remote: ModelChannelEntry = {
      id: 'remote',
      kind: 'openai',
      baseUrl: 'https://llm.test/v1',
      apiKey: 'env:MODEL_TEST_KEY',
      models: ['m-sim'],
      modelMap: {},
      priority: 0,
      weight: 1,
      enabled: true,
    };
    let snap = { models: [model], modelChannels: [remote] };
    const store = { get: async () => snap } as unknown as CatalogueStore;
    const seen: string[] = [];
    // A busy provider: every call answered 503, the key it was sent recorded.
    const busy = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'busy', type: 'server_error', code: null } }));
    });
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => void busy.close());
    remote.baseUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}/v1`;
    const models = new ModelCatalogue({ catalogue: store, clock, env: { MODEL_TEST_KEY: 'sk-upstream' } });
    const router = await models.router();
    await expect(router.chat({ model: 'm-sim', messages: [{ role: 'user', content: 'hi' }] } as never)).rejects.toMatchObject({ status: 503 });
    expect(seen).toEqual(['Bearer sk-upstream']);
    expect(router.channelHealth()).toMatchObject([{ id: 'remote', failures: 1 }]);

    // The operator adds a channel and edits the old one: the old one is still cooling down.
    snap = {
      models: [model],
      modelChannels: [
        { ...remote, weight: 5 },
        { ...remote, id: 'other', apiKey: 'plain-key' },
      ],
    };
    const rebuilt = await models.router();
    expect(rebuilt).toBe(router);
    expect(rebuilt.channelHealth()).toMatchObject([
      { id: 'remote', failures: 1 },
      { id: 'other', failures: 0 },
    ]);
    expect(rebuilt.plan('m-sim').map((c) => c.id)).toEqual(['other', 'remote']);

    // A process without the key's variable keeps that channel out of use; an inactive model leaves the square and the router.
    const bare = new ModelCatalogue({ catalogue: store, clock, env: {} });
    expect((await bare.router()).plan('m-sim').map((c) => c.id)).toEqual(['other']);
    snap = { models: [{ ...model, active: false }], modelChannels: snap.modelChannels };
    expect(await models.all()).toEqual([]);
    expect((await models.router()).modelNames()).toEqual([]);
  });
});

describe('model square and API keys', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  const child = (parent: { token: string; mobile: string }, childName: string, permissions: Partial<Record<PermissionFlag, boolean>>) =>
    childAccount(s, parent, childName, permissions);
  async function createKey(token: string, body: Record<string, unknown> = {}) {
    const res = await post(s.app, KEYS, { name: 'test', ...body }, token);
    expect(res.statusCode, res.body).toBe(200);
    return json<ApiKeyCreated>(res);
  }
  const auth = (secret: string, ip = '198.51.100.1', model?: string) => s.ctx.apiKeys.authenticate(`Bearer ${secret}`, ip, model);

  it('lists the square from the catalogue file with prices per million tokens in 0.0001 yuan, searchable and filterable', async () => {
    const page = json<ModelPage>(await get(s.app, API.modelModels));
    expect(page.items.map((m) => m.id)).toEqual(['qwen-mini-sim', 'deepseek-lite-sim', 'gpt-4o-mini-sim', 'text-embedding-sim']);
    expect(page.items[0]).toMatchObject({
      provider: '内置模拟',
      type: 'chat',
      contextLength: 8192,
      inputPricePerMillion: '8000',
      outputPricePerMillion: '20000',
    });
    expect(page.items[2]).toMatchObject({ inputPricePerMillion: '10500', outputPricePerMillion: '42000' });
    expect(page).toMatchObject({ total: 4, page: 1, providers: ['内置模拟'] });
    expect(page.tags).toContain('向量');
    expect(json<ModelPage>(await get(s.app, `${API.modelModels}?filterBy=type,embedding`)).items.map((m) => m.id)).toEqual(['text-embedding-sim']);
    expect(json<ModelPage>(await get(s.app, `${API.modelModels}?keyword=DeepSeek`)).items.map((m) => m.id)).toEqual(['deepseek-lite-sim']);
    expect(json(await get(s.app, `${API.modelModels}?filterBy=type`))).toMatchObject({ code: 40000001, detail: expect.stringContaining('filterBy') });

    // Every model of the square is answered by the embedded channel under its own name.
    const router = await s.ctx.models.router();
    expect(router.modelNames()).toEqual(['deepseek-lite-sim', 'gpt-4o-mini-sim', 'qwen-mini-sim', 'text-embedding-sim']);
    const emb = await router.embeddings({ model: 'text-embedding-sim', input: '你好' } as never);
    expect(emb).toMatchObject({ channelId: 'embedded', result: { model: 'text-embedding-sim' } });
  });

  it('shows the secret once, stores only its hash, and lists keys without it', async () => {
    const u = await registerUser(s);
    const made = await createKey(u.token, { name: '生产环境' });
    expect(made.secret).toMatch(/^sk-[0-9A-Za-z]{48}$/);
    expect(made.maskedKey).toBe(`${made.secret.slice(0, 7)}…${made.secret.slice(-4)}`);
    expect(made).toMatchObject({ name: '生产环境', enabled: true, expired: false, spent: '0', lastUsedAt: null, allowedModels: [], allowedIps: [] });

    const listed = await get(s.app, KEYS, u.token);
    expect(listed.body).not.toContain(made.secret);
    expect(listed.body).not.toContain(made.secret.slice(3));
    const page = json<ApiKeyPage>(listed);
    expect(page).toMatchObject({ total: 1, limit: 50, items: [{ id: made.id, maskedKey: made.maskedKey }] });
    expect(page.items[0]).not.toHaveProperty('secret');

    const [row] = await s.ctx.db.select().from(modelApiKeys).where(eq(modelApiKeys.id, made.id));
    expect(row!.secretHash).toBe(createHash('sha256').update(made.secret).digest('hex'));
    expect(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(made.secret.slice(3));
    expect(row).toMatchObject({ ownerId: u.user.id, payerId: u.user.id });

    // Two keys never share a secret.
    expect((await createKey(u.token)).secret).not.toBe(made.secret);
  });

  it('authenticates a key and refuses an unknown, disabled, expired or deleted one', async () => {
    const u = await registerUser(s);
    const k = await createKey(u.token, { expiresAt: new Date(s.clock.now().getTime() + 3600_000).toISOString() });
    const ok = await auth(k.secret);
    expect(ok).toMatchObject({ ok: true, key: { id: k.id, ownerId: u.user.id, payerId: u.user.id, spendLeft: null }, user: { id: u.user.id } });
    expect(await s.ctx.apiKeys.authenticate(k.secret, '198.51.100.1')).toMatchObject({ ok: true });

    const wrong = `sk-${'A'.repeat(48)}`;
    expect(await auth(wrong)).toMatchObject({ ok: false, reason: 'unknown_key', status: 401, code: 'invalid_api_key' });
    expect(await auth('not-a-key')).toMatchObject({ ok: false, reason: 'unknown_key' });

    expect(json<ApiKey>(await put(s.app, keyUrl(k.id), { enabled: false }, u.token))).toMatchObject({ enabled: false });
    expect(await auth(k.secret)).toMatchObject({ ok: false, reason: 'disabled', status: 401 });
    await put(s.app, keyUrl(k.id), { enabled: true }, u.token);
    expect(await auth(k.secret)).toMatchObject({ ok: true });

    s.clock.advance(3600_000);
    expect(await auth(k.secret)).toMatchObject({ ok: false, reason: 'expired', status: 401, message: expect.stringContaining('过期') });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, u.token)).items[0]).toMatchObject({ expired: true });
    expect(json<ApiKey>(await put(s.app, keyUrl(k.id), { expiresAt: null }, u.token))).toMatchObject({ expired: false, expiresAt: null });
    expect(await auth(k.secret)).toMatchObject({ ok: true });

    expect((await s.app.inject({ method: 'DELETE', url: keyUrl(k.id), headers: { authorization: `Bearer ${u.token}` } })).statusCode).toBe(200);
    expect(await auth(k.secret)).toMatchObject({ ok: false, reason: 'unknown_key' });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, u.token)).total).toBe(0);
  });

  it('admits only the allowed addresses (IPv4 and IPv6 CIDR) and models, and stops at the spend limit', async () => {
    const u = await registerUser(s);
    const k = await createKey(u.token, { allowedIps: ['10.0.0.0/8', ' 203.0.113.7', '2001:db8::/32'], allowedModels: ['qwen-mini-sim'], spendLimit: '100' });
    for (const ip of ['10.1.2.3', '::ffff:10.9.9.9', '203.0.113.7', '2001:db8:1::5']) expect((await auth(k.secret, ip)).ok, ip).toBe(true);
    for (const ip of ['11.0.0.1', '203.0.113.8', '2001:db9::1', 'garbage']) {
      expect(await auth(k.secret, ip), ip).toMatchObject({ ok: false, reason: 'ip_not_allowed', status: 403 });
    }
    expect(await auth(k.secret, '10.0.0.1', 'qwen-mini-sim')).toMatchObject({ ok: true, key: { spendLeft: 100n } });
    expect(await auth(k.secret, '10.0.0.1', 'gpt-4o-mini-sim')).toMatchObject({
      ok: false,
      reason: 'model_not_allowed',
      status: 403,
      message: expect.stringContaining('gpt-4o-mini-sim'),
    });

    const at = new Date(s.clock.now().getTime() + 1000);
    await s.ctx.apiKeys.recordUse(k.id, 60n, at);
    expect(await auth(k.secret, '10.0.0.1')).toMatchObject({ ok: true, key: { spendLeft: 40n } });
    await s.ctx.apiKeys.recordUse(k.id, 40n, new Date(at.getTime() - 500));
    expect(await auth(k.secret, '10.0.0.1')).toMatchObject({ ok: false, reason: 'over_spend_limit', status: 403 });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, u.token)).items[0]).toMatchObject({ spent: '100', spendLimit: '100', lastUsedAt: at.toISOString() });
    await put(s.app, keyUrl(k.id), { spendLimit: null, allowedIps: [], allowedModels: [] }, u.token);
    expect(await auth(k.secret, '8.8.8.8', 'gpt-4o-mini-sim')).toMatchObject({ ok: true, key: { spendLeft: null } });
  });

  it('limits requests and tokens per minute over a sliding minute', async () => {
    const u = await registerUser(s);
    const k = await createKey(u.token, { rpmLimit: 2 });
    expect((await auth(k.secret)).ok).toBe(true);
    s.clock.advance(30_000);
    expect((await auth(k.secret)).ok).toBe(true);
    expect(await auth(k.secret)).toMatchObject({ ok: false, reason: 'rate_limited', status: 429, retryAfterMs: 30_000 });
    s.clock.advance(30_000); // the first call left the minute
    expect((await auth(k.secret)).ok).toBe(true);
    expect((await auth(k.secret)).ok).toBe(false);

    const t = await createKey(u.token, { tpmLimit: 1000 });
    expect((await auth(t.secret)).ok).toBe(true);
    await s.ctx.apiKeys.recordUse(t.id, 1n, s.clock.now(), 1000);
    expect(await auth(t.secret)).toMatchObject({ ok: false, reason: 'rate_limited', message: expect.stringContaining('1000 个 Token') });
    s.clock.advance(60_000);
    expect((await auth(t.secret)).ok).toBe(true);
  });

  it('refuses bad settings with the field named', async () => {
    const u = await registerUser(s);
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '' }, 'name'],
      [{ allowedIps: ['10.0.0.0/33'] }, 'allowedIps.0'],
      [{ allowedIps: ['10.0.0.1', '1.2.3'] }, 'allowedIps.1'],
      [{ allowedIps: ['fe80::1::2'] }, 'allowedIps.0'],
      [{ allowedIps: ['2001:db8::/129'] }, 'allowedIps.0'],
      [{ rpmLimit: 0 }, 'rpmLimit'],
      [{ rpmLimit: 10_001 }, 'rpmLimit'],
      [{ tpmLimit: 1.5 }, 'tpmLimit'],
      [{ spendLimit: '-1' }, 'spendLimit'],
      [{ spendLimit: 5 }, 'spendLimit'],
      [{ expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ allowedModels: ['bad model'] }, 'allowedModels.0'],
    ];
    for (const [body, field] of cases) {
      const res = await post(s.app, KEYS, { name: 'k', ...body }, u.token);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(json(res), JSON.stringify(body)).toMatchObject({ code: 40000001, detail: expect.stringMatching(new RegExp(`^${field.replace('.', '\\.')}：`)) });
    }
    const past = await post(s.app, KEYS, { name: 'k', expiresAt: '2020-01-01T00:00:00+08:00' }, u.token);
    expect(json(past)).toMatchObject({ code: 40040003, detail: expect.stringContaining('expiresAt') });
    const unknown = await post(s.app, KEYS, { name: 'k', allowedModels: ['qwen-mini-sim', 'gpt-9-sim'] }, u.token);
    expect(json(unknown)).toMatchObject({ code: 40040002, detail: expect.stringContaining('allowedModels.1：模型 gpt-9-sim') });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, u.token)).total).toBe(0);
    const k = await createKey(u.token);
    expect(json(await put(s.app, keyUrl(k.id), { allowedIps: ['::/0', '300.1.1.1'] }, u.token))).toMatchObject({
      code: 40000001,
      detail: expect.stringMatching(/^allowedIps\.1：/),
    });
    expect(json(await put(s.app, keyUrl('not-a-uuid'), { name: 'x' }, u.token))).toMatchObject({ code: 40000001 });
  });

  it('allows 50 keys per account', async () => {
    const u = await registerUser(s);
    for (let i = 0; i < 50; i++) await createKey(u.token, { name: `k${i}` });
    const over = await post(s.app, KEYS, { name: 'one more' }, u.token);
    expect(over.statusCode).toBe(400);
    expect(json(over)).toMatchObject({ code: 40040001, message: expect.stringContaining('50') });
    const page = json<ApiKeyPage>(await get(s.app, `${KEYS}?page=2&pageSize=20`, u.token));
    expect(page).toMatchObject({ total: 50, page: 2, pageSize: 20 });
    expect(page.items).toHaveLength(20);
    // A deleted key frees its place.
    await s.app.inject({ method: 'DELETE', url: keyUrl(page.items[0]!.id), headers: { authorization: `Bearer ${u.token}` } });
    await createKey(u.token, { name: 'again' });
  });

  it('keeps each account to its own keys: another user’s key is not found', async () => {
    const a = await registerUser(s);
    const b = await registerUser(s);
    const k = await createKey(a.token);
    expect(json(await put(s.app, keyUrl(k.id), { name: 'mine now' }, b.token))).toMatchObject({ code: 40440001 });
    const del = await s.app.inject({ method: 'DELETE', url: keyUrl(k.id), headers: { authorization: `Bearer ${b.token}` } });
    expect(del.statusCode).toBe(404);
    expect(json(del)).toMatchObject({ code: 40440001 });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, b.token)).total).toBe(0);
    expect(await auth(k.secret)).toMatchObject({ ok: true });
    expect((await get(s.app, KEYS)).statusCode).toBe(401);
  });

  it('needs usingLLM for a child account, whose keys spend its parent’s balance and stop when the permission goes', async () => {
    const parent = await registerUser(s);
    const without = await child(parent, 'no_llm', { createGPUInstance: true });
    for (const res of [
      await get(s.app, KEYS, without.token),
      await post(s.app, KEYS, { name: 'x' }, without.token),
      await put(s.app, keyUrl('00000000-0000-4000-8000-000000000000'), { name: 'x' }, without.token),
      await s.app.inject({ method: 'DELETE', url: keyUrl('00000000-0000-4000-8000-000000000000'), headers: { authorization: `Bearer ${without.token}` } }),
    ]) {
      expect(res.statusCode).toBe(403);
      expect(json(res)).toMatchObject({ code: 40300002, detail: expect.stringContaining('usingLLM') });
    }
    // The square itself is public.
    expect((await get(s.app, API.modelModels, without.token)).statusCode).toBe(200);

    const llm = await child(parent, 'llm_dev', { usingLLM: true });
    const k = await createKey(llm.token);
    const [row] = await s.ctx.db.select().from(modelApiKeys).where(eq(modelApiKeys.id, k.id));
    expect(row).toMatchObject({ ownerId: llm.id, payerId: parent.user.id });
    expect(await auth(k.secret)).toMatchObject({ ok: true, key: { ownerId: llm.id, payerId: parent.user.id }, user: { id: llm.id } });
    expect(json<ApiKeyPage>(await get(s.app, KEYS, parent.token)).total).toBe(0);

    const revoked = await put(s.app, API.child.replace(':id', llm.id), { permissions: { usingLLM: false } }, parent.token);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(await auth(k.secret)).toMatchObject({ ok: false, reason: 'permission_denied', status: 403, message: expect.stringContaining('usingLLM') });
  });
});
