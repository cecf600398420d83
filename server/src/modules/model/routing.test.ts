/**
 * Channel routing through the real /v1 gateway (issue 14), driven by the official `openai` client in
 * front of two local OpenAI-compatible upstreams served over HTTP (`up-a`, `up-b`, both the embedded
 * model behind serve.ts). Each upstream can be switched to answer 429 or 500 and counts the calls it
 * received, and tags its answers (`system_fingerprint`), so the client sees which one answered.
 *
 * Covered: priority, the weighted share inside one priority, a retry on 429 / 5xx charged once, the
 * cooldown (30 s, doubling) with the automatic return, and both channels failing.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import {
  API,
  yuanToUnits,
  type ApiKeyCreated,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type CompletionRequest,
  type EmbeddingRequest,
} from '@console/contract';
import { json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { checkLedger } from '../ledger/index.js';
import { DEFAULT_CATALOGUE_FILE } from '../catalogue/index.js';
import {
  EmbeddedUpstream,
  GeneratorStream,
  UpstreamError,
  isUpstreamStream,
  serveUpstream,
  type ChatResult,
  type ModelUpstream,
  type UpstreamStream,
} from '../../drivers/model-upstream/index.js';
import { modelCalls } from './schema.js';
import { tokenCost } from './gateway.js';

const MODEL = 'qwen-mini-sim';
/** What both upstreams call the model (the channels' modelMap). */
const UPSTREAM_MODEL = 'upstream-chat';
const COOLDOWN_MS = 30_000;

type Mode = 'ok' | 429 | 500;

/** The embedded model with a switch: answer, or refuse with 429 / 500 before any byte; counts every chat call it receives. */
class SwitchableUpstream implements ModelUpstream {
  readonly kind = 'switchable';
  mode: Mode = 'ok';
  calls = 0;
  /** The model name of the last request, as the upstream received it. */
  lastModel: string | null = null;
  private readonly inner = new EmbeddedUpstream({ models: [UPSTREAM_MODEL], tokensPerSecond: Infinity });

  constructor(readonly channelId: string) {}

  get fingerprint() {
    return `fp_${this.channelId}`;
  }

  async chat(req: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatResult> {
    this.calls++;
    this.lastModel = req.model;
    if (this.mode !== 'ok') {
      const message = this.mode === 429 ? 'Rate limit reached, slow down' : 'The server had an error while processing your request';
      throw new UpstreamError('http', message, {
        status: this.mode,
        body: { error: { message, type: this.mode === 429 ? 'rate_limit_error' : 'server_error', param: null, code: null } },
      });
    }
    const result = await this.inner.chat(req, signal);
    const fingerprint = this.fingerprint;
    if (!isUpstreamStream(result)) return { ...result, system_fingerprint: fingerprint };
    const stream = result as UpstreamStream<ChatCompletionChunk>;
    async function* tagged() {
      for await (const chunk of stream) yield { ...chunk, system_fingerprint: fingerprint };
    }
    return new GeneratorStream(tagged(), { usage: () => stream.usageSoFar(), text: () => stream.textSoFar() }, () => void stream.close());
  }
  completion(req: CompletionRequest, signal?: AbortSignal) {
    return this.inner.completion(req, signal);
  }
  embeddings(req: EmbeddingRequest, signal?: AbortSignal) {
    return this.inner.embeddings(req, signal);
  }
  models() {
    return this.inner.models();
  }
}

interface ChannelSetting {
  priority: number;
  weight: number;
}

describe('model gateway channel routing against two local upstreams', () => {
  const a = new SwitchableUpstream('up-a');
  const b = new SwitchableUpstream('up-b');
  let servedA: Awaited<ReturnType<typeof serveUpstream>>;
  let servedB: Awaited<ReturnType<typeof serveUpstream>>;
  let dir: string;
  let file: string;
  let s: TestServer;
  let baseURL: string;

  beforeAll(async () => {
    servedA = await serveUpstream(a);
    servedB = await serveUpstream(b);
    dir = mkdtempSync(path.join(tmpdir(), 'model-routing-'));
    file = path.join(dir, 'catalogue.json');
    writeCatalogue({ priority: 0, weight: 1 }, { priority: 0, weight: 1 });
    s = await startTestServer({ env: { CATALOGUE_FILE: file } });
    await s.app.listen({ port: 0, host: '127.0.0.1' });
    baseURL = `http://127.0.0.1:${(s.app.server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await s?.close();
    await servedA?.close();
    await servedB?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const u of [a, b]) {
      u.mode = 'ok';
      u.calls = 0;
      u.lastModel = null;
    }
  });
  afterEach(async () => {
    await s.ctx.modelGateway.drain();
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  /** Each write is the catalogue's next version (a file of a version the database has is not applied again). */
  let catalogueVersion = 0;
  /** The shipped catalogue with two openai channels: the two local upstreams, serving qwen-mini-sim under the upstream's name. */
  function writeCatalogue(settingA: ChannelSetting | null, settingB: ChannelSetting | null) {
    const data = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8')) as { version: number; modelChannels: unknown[] };
    catalogueVersion = Math.max(catalogueVersion, data.version) + 1;
    data.version = catalogueVersion;
    const channel = (id: string, baseUrl: string, setting: ChannelSetting) => ({
      id,
      kind: 'openai',
      baseUrl,
      apiKey: `sk-local-${id}`,
      models: [MODEL],
      modelMap: { [MODEL]: UPSTREAM_MODEL },
      ...setting,
      enabled: true,
    });
    data.modelChannels = [...(settingA ? [channel('up-a', servedA.baseUrl, settingA)] : []), ...(settingB ? [channel('up-b', servedB.baseUrl, settingB)] : [])];
    writeFileSync(file, JSON.stringify(data, null, 2));
  }

  /**
   * Routes to up-a and up-b with these settings, both fresh: the channels are first taken out of the
   * file (which forgets their failures and cooldown), then put back.
   */
  async function channels(settingA: ChannelSetting, settingB: ChannelSetting) {
    writeCatalogue(null, null);
    await s.ctx.reloadCatalogue();
    expect((await s.ctx.models.router()).channelHealth()).toEqual([]);
    writeCatalogue(settingA, settingB);
    expect(await s.ctx.reloadCatalogue()).toBe(true);
    expect((await health()).map((h) => [h.id, h.enabled, h.failures])).toEqual([
      ['up-a', true, 0],
      ['up-b', true, 0],
    ]);
  }
  const health = async () => (await s.ctx.models.router()).channelHealth();
  const healthOf = async (id: string) => (await health()).find((h) => h.id === id)!;

  const client = (apiKey: string) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });
  const settled = () => s.ctx.modelGateway.drain();
  const cash = async (userId: string) => {
    await settled();
    return (await s.ctx.ledger.balances(userId)).cash;
  };
  const callsOf = async (keyId: string) => {
    await settled();
    return s.ctx.db.select().from(modelCalls).where(eq(modelCalls.keyId, keyId)).orderBy(modelCalls.createdAt);
  };
  const holdTotal = async () => {
    await settled();
    const res = (await s.ctx.db.execute(sql`select coalesce(sum(balance), 0)::text as t from ledger_accounts where kind = 'hold'`)) as unknown as {
      rows: { t: string }[];
    };
    return BigInt(res.rows[0]!.t);
  };
  const price = async () => (await s.ctx.models.get(MODEL))!;

  /** A user with `yuan` of cash and an API key: what the client calls with. */
  async function funded(yuan: string) {
    const u = await registerUser(s);
    await s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(yuan) },
        { account: { userId: u.user.id, kind: 'cash' }, amount: yuanToUnits(yuan) },
      ],
    });
    const res = await post(s.app, API.modelKeys, { name: 'routing' }, u.token);
    expect(res.statusCode, res.body).toBe(200);
    const key = json<ApiKeyCreated>(res);
    return { userId: u.user.id, key, ai: client(key.secret) };
  }

  const ask = (ai: OpenAI, content = '你好，介绍一下算力云') =>
    ai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 16 });

  async function failure(p: Promise<unknown>) {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(OpenAI.APIError);
    const err = e as InstanceType<typeof OpenAI.APIError>;
    return { status: err.status, ...(err.error as { code: string | null; type: string; message: string }) };
  }

  it('sends every call to the channel of higher priority, whatever the weights', async () => {
    await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 100 });
    const { key, ai } = await funded('5');
    for (let i = 0; i < 20; i++) {
      const answer = await ask(ai);
      expect(answer.system_fingerprint).toBe(a.fingerprint);
      // The client sees the name it asked for; the upstream got its own name (modelMap).
      expect(answer.model).toBe(MODEL);
      expect(answer.choices[0]!.message.content!.length).toBeGreaterThan(0);
    }
    expect(a.lastModel).toBe(UPSTREAM_MODEL);
    expect([a.calls, b.calls]).toEqual([20, 0]);
    const rows = await callsOf(key.id);
    expect(rows).toHaveLength(20);
    expect(new Set(rows.map((r) => r.channel))).toEqual(new Set(['up-a']));
    expect(rows.every((r) => r.status === 'ok' && r.cost > 0n)).toBe(true);
  });

  it('shares calls between channels of the same priority by weight (3:1 over 200 calls)', async () => {
    await channels({ priority: 0, weight: 3 }, { priority: 0, weight: 1 });
    const { userId, key, ai } = await funded('10');
    const answeredBy: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => ask(ai, 'hello there')));
      answeredBy.push(...answers.map((x) => x.system_fingerprint!));
    }
    expect(answeredBy).toHaveLength(200);
    const toA = answeredBy.filter((f) => f === a.fingerprint).length;
    const toB = answeredBy.filter((f) => f === b.fingerprint).length;
    expect(toA + toB).toBe(200);
    // 3:1 is 0.75; ±0.1 is more than three standard deviations of 200 draws.
    expect(toA / 200).toBeGreaterThanOrEqual(0.65);
    expect(toA / 200).toBeLessThanOrEqual(0.85);
    // No call was tried twice: each upstream saw exactly the calls it answered.
    expect([a.calls, b.calls]).toEqual([toA, toB]);
    const rows = await callsOf(key.id);
    expect(rows.filter((r) => r.channel === 'up-a')).toHaveLength(toA);
    expect(rows.filter((r) => r.channel === 'up-b')).toHaveLength(toB);
    expect(yuanToUnits('10') - (await cash(userId))).toBe(rows.reduce((n, r) => n + r.cost, 0n));
    expect(await holdTotal()).toBe(0n);
  });

  describe.each([429, 500] as const)('when up-a answers %i before any byte', (status) => {
    it('answers 200 from up-b, charged exactly once at its usage', async () => {
      await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 1 });
      const { userId, key, ai } = await funded('1');
      const before = await cash(userId);
      a.mode = status;

      const { data: answer, response } = await ask(ai).withResponse();
      expect(response.status).toBe(200);
      expect(answer.system_fingerprint).toBe(b.fingerprint);
      expect(answer.choices[0]!.message.content!.length).toBeGreaterThan(0);
      expect([a.calls, b.calls]).toEqual([1, 1]);

      const cost = tokenCost(await price(), answer.usage!.prompt_tokens, answer.usage!.completion_tokens);
      expect(cost).toBeGreaterThan(0n);
      expect(before - (await cash(userId))).toBe(cost);
      const rows = await callsOf(key.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'ok', channel: 'up-b', cost, promptTokens: answer.usage!.prompt_tokens });
      expect(await holdTotal()).toBe(0n);
      // The operator area shows the failure and the cooldown.
      expect(await healthOf('up-a')).toMatchObject({ failures: 1, lastError: expect.stringContaining(String(status)) });
    });

    it('streams from up-b, charged exactly once at its usage', async () => {
      await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 1 });
      const { userId, key, ai } = await funded('1');
      const before = await cash(userId);
      a.mode = status;

      const stream = await ai.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: '讲一个关于显卡的故事' }],
        max_tokens: 24,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      const fingerprints = new Set<string>();
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.system_fingerprint) fingerprints.add(chunk.system_fingerprint);
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text.length).toBeGreaterThan(0);
      expect([...fingerprints]).toEqual([b.fingerprint]);
      expect([a.calls, b.calls]).toEqual([1, 1]);

      const cost = tokenCost(await price(), usage!.prompt_tokens, usage!.completion_tokens);
      expect(before - (await cash(userId))).toBe(cost);
      const rows = await callsOf(key.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'ok', channel: 'up-b', cost, completionTokens: usage!.completion_tokens });
      expect(await holdTotal()).toBe(0n);
    });
  });

  it('skips a failed channel while it cools down (30 s, doubling) and sends it calls again once its time is up', async () => {
    await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 1 });
    // Registering moves the clock: done before anything fails.
    const { key, ai } = await funded('1');
    const answeredBy = async () => (await ask(ai)).system_fingerprint;

    a.mode = 429;
    const failedAt = s.clock.now().getTime();
    expect(await answeredBy()).toBe(b.fingerprint);
    expect([a.calls, b.calls]).toEqual([1, 1]);
    const cooling = await healthOf('up-a');
    expect(cooling.failures).toBe(1);
    expect(cooling.coolingUntil!.getTime()).toBe(failedAt + COOLDOWN_MS);

    // Healthy again, but cooling: not even tried.
    a.mode = 'ok';
    for (let i = 0; i < 3; i++) expect(await answeredBy()).toBe(b.fingerprint);
    s.clock.advance(COOLDOWN_MS - 1000);
    expect(await answeredBy()).toBe(b.fingerprint);
    expect([a.calls, b.calls]).toEqual([1, 5]);

    // Its time is up: tried first again. Failing again doubles the cooldown.
    s.clock.advance(2000);
    a.mode = 500;
    const failedAgainAt = s.clock.now().getTime();
    expect(await answeredBy()).toBe(b.fingerprint);
    expect([a.calls, b.calls]).toEqual([2, 6]);
    const doubled = await healthOf('up-a');
    expect(doubled.failures).toBe(2);
    expect(doubled.coolingUntil!.getTime()).toBe(failedAgainAt + 2 * COOLDOWN_MS);

    a.mode = 'ok';
    s.clock.advance(COOLDOWN_MS + 1000);
    expect(await answeredBy()).toBe(b.fingerprint);
    expect(a.calls).toBe(2);

    // Back without anyone's help: it answers again, and one success ends the cooldown.
    s.clock.advance(COOLDOWN_MS);
    for (let i = 0; i < 3; i++) expect(await answeredBy()).toBe(a.fingerprint);
    expect([a.calls, b.calls]).toEqual([5, 7]);
    expect(await healthOf('up-a')).toMatchObject({ failures: 0, coolingUntil: null });

    const rows = await callsOf(key.id);
    expect(rows.map((r) => r.channel)).toEqual(['up-b', 'up-b', 'up-b', 'up-b', 'up-b', 'up-b', 'up-b', 'up-a', 'up-a', 'up-a']);
    expect(rows.every((r) => r.status === 'ok')).toBe(true);
  });

  it('answers 503 upstream_unavailable in OpenAI shape when both channels answer 429, charging nothing', async () => {
    await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 1 });
    const { userId, key, ai } = await funded('1');
    const before = await cash(userId);
    a.mode = 429;
    b.mode = 429;

    const down = await failure(ask(ai));
    expect(down).toMatchObject({ status: 503, code: 'upstream_unavailable', type: 'api_error' });
    expect(down.message).toContain('稍后重试');
    expect([a.calls, b.calls]).toEqual([1, 1]);

    expect(await cash(userId)).toBe(before);
    expect(await callsOf(key.id)).toMatchObject([{ status: 'error', cost: 0n, completionTokens: 0 }]);
    expect(await holdTotal()).toBe(0n);
    expect((await health()).map((h) => h.failures)).toEqual([1, 1]);

    // Both healthy again once their cooldown is over: served again without anyone's help.
    a.mode = 'ok';
    b.mode = 'ok';
    s.clock.advance(COOLDOWN_MS + 1000);
    expect((await ask(ai)).system_fingerprint).toBe(a.fingerprint);
  });

  it('answers 502 upstream_error in OpenAI shape when both channels answer 500, charging nothing', async () => {
    await channels({ priority: 10, weight: 1 }, { priority: 0, weight: 1 });
    const { userId, key, ai } = await funded('1');
    const before = await cash(userId);
    a.mode = 500;
    b.mode = 500;

    const down = await failure(ask(ai));
    expect(down).toMatchObject({ status: 502, code: 'upstream_error', type: 'api_error' });
    expect([a.calls, b.calls]).toEqual([1, 1]);

    expect(await cash(userId)).toBe(before);
    expect(await callsOf(key.id)).toMatchObject([{ status: 'error', cost: 0n, completionTokens: 0 }]);
    expect(await holdTotal()).toBe(0n);
  });
});
