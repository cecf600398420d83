/**
 * The OpenAI-compatible gateway under /v1 (issue 14): its own Fastify scope with its own error and
 * not-found handlers, so every answer — errors included — is in OpenAI's shape, never the console's
 * envelope. Money and the call log: gateway.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodType } from 'zod';
import {
  chatCompletionRequestSchema,
  completionRequestSchema,
  COMPLETION_DEFAULT_MAX_TOKENS,
  embeddingRequestSchema,
  type ChatCompletionRequest,
  type OpenAIUsage,
} from '@console/contract';
import { countTokens, isUpstreamStream, UpstreamError, type UpstreamStream } from '../../drivers/model-upstream/index.js';
import { chatRequestPromptTokens } from '../../drivers/model-upstream/tokens.js';
import type { SessionService } from '../users/index.js';
import { DEFAULT_HOLD_COMPLETION_TOKENS, GatewayError, retryLater, type CallStart, type ModelGateway } from './gateway.js';
import { looksLikeApiKey, type ApiKeyService, type AuthenticatedKey } from './keys.js';
import type { ModelCatalogue, ModelInfo } from './catalogue.js';

export interface GatewayRoutesDeps {
  gateway: ModelGateway;
  models: ModelCatalogue;
  apiKeys: ApiKeyService;
  /** The online experience calls /v1 with the console's session token. */
  sessions: SessionService;
}

export async function gatewayRoutes(app: FastifyInstance, deps: GatewayRoutesDeps) {
  const gateway = deps.gateway;
  // Calls answered but not yet settled are settled before the process lets go of the database.
  app.addHook('onClose', async () => {
    await gateway.drain();
    gateway.stop();
  });

  await app.register(
    async (v1) => {
      v1.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
        if (error instanceof GatewayError) return reply.status(error.status).headers(error.headers).send(error.body());
        const status = error.statusCode;
        if (status && status >= 400 && status < 500) {
          return reply.status(status).send(new GatewayError(status, `请求有误：${error.message}`, 'invalid_request').body());
        }
        request.log.error({ err: error }, 'model gateway failed');
        return reply.status(502).send(new GatewayError(502, `网关处理失败，请稍后重试（请求编号 ${request.id}）`, 'gateway_error').body());
      });
      v1.setNotFoundHandler((request, reply) =>
        reply.status(404).send(new GatewayError(404, `没有这个接口：${request.method} ${request.url.split('?')[0]}`, 'unknown_url').body()),
      );

      v1.get('/models', async (request, reply) => {
        const t0 = performance.now();
        const { key } = await admit(request);
        const models = (await deps.models.all()).filter((m) => !key.allowedModels.length || key.allowedModels.includes(m.id));
        overhead(reply, t0);
        return { object: 'list', data: models.map(modelObject) };
      });

      // The official client's models.retrieve: a model the key may not use is as unknown as one that does not exist.
      v1.get('/models/*', async (request, reply) => {
        const t0 = performance.now();
        const { key } = await admit(request);
        const id = (request.params as { '*': string })['*'];
        const model = key.allowedModels.length && !key.allowedModels.includes(id) ? undefined : await deps.models.get(id);
        if (!model) throw new GatewayError(404, `模型 ${id} 不存在或该密钥不能使用：可用的模型见 GET /v1/models`, 'model_not_found', undefined, 'model');
        overhead(reply, t0);
        return modelObject(model);
      });

      v1.post('/chat/completions', async (request, reply) => {
        const t0 = performance.now();
        const body = parse(chatCompletionRequestSchema, request.body);
        const { key, model } = await admitModel(request, body.model, 'chat');
        const maxTokens = heldCompletionTokens(body);
        const prompt = chatRequestPromptTokens(body);
        const call = await gateway.hold(key, model, prompt, maxTokens);
        const wantsUsage = body.stream_options?.include_usage === true;
        // Usage is always asked of the upstream; the client gets the usage chunk only when it asked.
        const upstreamReq: ChatCompletionRequest = body.stream ? { ...body, stream_options: { ...body.stream_options, include_usage: true } } : body;
        return relay(request, reply, call, t0, prompt, wantsUsage, async (signal) => (await deps.models.router()).chat(upstreamReq, signal));
      });

      v1.post('/completions', async (request, reply) => {
        const t0 = performance.now();
        const body = parse(completionRequestSchema, request.body);
        const { key, model } = await admitModel(request, body.model, 'chat');
        const prompt = inputTokens(body.prompt);
        const call = await gateway.hold(key, model, prompt, body.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS);
        const wantsUsage = body.stream_options?.include_usage === true;
        const upstreamReq = body.stream ? { ...body, stream_options: { ...body.stream_options, include_usage: true } } : body;
        return relay(request, reply, call, t0, prompt, wantsUsage, async (signal) => (await deps.models.router()).completion(upstreamReq, signal));
      });

      v1.post('/embeddings', async (request, reply) => {
        const t0 = performance.now();
        const body = parse(embeddingRequestSchema, request.body);
        const { key, model } = await admitModel(request, body.model, 'embedding');
        const prompt = inputTokens(body.input);
        const call = await gateway.hold(key, model, prompt, 0);
        return relay(request, reply, call, t0, prompt, false, async (signal) => (await deps.models.router()).embeddings(body, signal));
      });
    },
    { prefix: '/v1' },
  );

  /** A key's bearer, or the console's own session token (the online experience calls /v1 with it). */
  async function admit(request: FastifyRequest, model?: string): Promise<{ key: AuthenticatedKey }> {
    const bearer = request.headers.authorization ?? '';
    const res =
      looksLikeApiKey(bearer) || !bearer
        ? await deps.apiKeys.authenticate(bearer, request.ip, model)
        : await deps.apiKeys.playground(await sessionUser(bearer));
    if (!res.ok) {
      const error = new GatewayError(res.status, res.message, res.code);
      throw res.retryAfterMs === undefined ? error : retryLater(error, res.retryAfterMs);
    }
    return { key: res.key };
  }

  async function sessionUser(bearer: string) {
    try {
      return (await deps.sessions.verify(bearer.replace(/^Bearer\s+/i, '').trim())).user;
    } catch {
      throw new GatewayError(401, 'API 密钥无效或登录已失效：请使用控制台「API KEY」中创建的 sk- 开头的密钥，或重新登录控制台', 'invalid_api_key');
    }
  }

  async function admitModel(request: FastifyRequest, id: string, type: ModelInfo['type']): Promise<{ key: AuthenticatedKey; model: ModelInfo }> {
    const { key } = await admit(request, id);
    const model = await deps.models.get(id);
    if (!model) throw new GatewayError(404, `模型 ${id} 不存在：可用的模型见 GET /v1/models 或控制台「模型广场」`, 'model_not_found', undefined, 'model');
    if (model.type !== type) {
      const what = type === 'chat' ? '对话 / 补全' : '向量';
      throw new GatewayError(400, `模型 ${id} 不是${what}模型，不能用于此接口`, 'model_type_mismatch', undefined, 'model');
    }
    return { key, model };
  }

  /** Calls the upstream, answers the client (JSON or SSE), then settles the call. */
  async function relay(
    request: FastifyRequest,
    reply: FastifyReply,
    call: CallStart,
    t0: number,
    promptTokens: number,
    wantsUsage: boolean,
    upstream: (signal: AbortSignal) => Promise<{ channelId: string; result: object }>,
  ) {
    const abort = new AbortController();
    const onClose = () => abort.abort();
    request.raw.socket?.on('close', onClose);
    let routed: { channelId: string; result: object };
    const t1 = performance.now();
    try {
      routed = await upstream(abort.signal);
    } catch (e) {
      request.raw.socket?.off('close', onClose);
      const err = e instanceof UpstreamError ? e : null;
      await gateway.settle(call, { usage: null, channel: err?.channelId ?? null, status: 'error', error: err?.message ?? String(e) });
      throw upstreamFailure(e);
    }
    const t2 = performance.now();
    const result = routed.result;
    if (!isUpstreamStream(result)) {
      request.raw.socket?.off('close', onClose);
      const usage = (result as { usage?: OpenAIUsage }).usage ?? countedUsage(promptTokens, '');
      reply.header('x-gateway-overhead-ms', (t1 - t0 + performance.now() - t2).toFixed(2));
      // Settled while the answer goes out: the client does not wait for the ledger.
      gateway.settleAfterAnswer(call, { usage, channel: routed.channelId, status: 'ok' }, (e) => request.log.error({ err: e }, 'model call settle failed'));
      return result;
    }

    const stream = result as UpstreamStream<{ choices?: unknown[]; usage?: OpenAIUsage | null }>;
    const res = reply.raw;
    reply.hijack();
    // The client leaving mid-stream closes the response before it ended: stop the upstream at once.
    res.on('close', () => {
      if (!res.writableEnded) abort.abort();
    });
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': request.id,
      'x-content-type-options': 'nosniff',
      'x-gateway-overhead-ms': (t1 - t0).toFixed(2),
    });
    let status: 'ok' | 'aborted' | 'error' = 'ok';
    let error: string | undefined;
    try {
      for await (const chunk of stream) {
        if (res.destroyed || abort.signal.aborted) {
          status = 'aborted';
          break;
        }
        if (!wantsUsage && (!chunk.choices || chunk.choices.length === 0) && chunk.usage) continue;
        if (!wantsUsage && 'usage' in chunk) delete chunk.usage;
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      if (abort.signal.aborted || res.destroyed) status = 'aborted';
    } catch (e) {
      if (abort.signal.aborted || res.destroyed) status = 'aborted';
      else {
        status = 'error';
        error = e instanceof Error ? e.message : String(e);
        const failure = upstreamFailure(e);
        if (!res.destroyed) res.write(`data: ${JSON.stringify(failure.body())}\n\n`);
      }
    } finally {
      request.raw.socket?.off('close', onClose);
      await stream.close().catch(() => {});
    }
    const usage = stream.usageSoFar() ?? countedUsage(promptTokens, stream.textSoFar());
    if (!res.destroyed) res.end('data: [DONE]\n\n');
    gateway.settleAfterAnswer(call, { usage, channel: routed.channelId, status, ...(error ? { error } : {}) }, (e) =>
      request.log.error({ err: e }, 'model call settle failed'),
    );
  }
}

/**
 * The completion tokens a chat call is held for. Both max_completion_tokens and the deprecated
 * max_tokens go upstream as sent, and an upstream may honour either: the larger is held.
 */
function heldCompletionTokens(body: ChatCompletionRequest): number {
  const asked = [body.max_completion_tokens, body.max_tokens].filter((n): n is number => typeof n === 'number');
  return asked.length ? Math.max(...asked) : DEFAULT_HOLD_COMPLETION_TOKENS;
}

/** A model as OpenAI's API shows it (the square keeps no creation time: 0). */
function modelObject(m: ModelInfo) {
  return { id: m.id, object: 'model' as const, created: 0, owned_by: m.provider };
}

function overhead(reply: FastifyReply, t0: number) {
  reply.header('x-gateway-overhead-ms', (performance.now() - t0).toFixed(2));
}

function parse<T>(schema: ZodType<T>, body: unknown): T {
  const res = schema.safeParse(body ?? {});
  if (res.success) return res.data;
  const issue = res.error.issues[0]!;
  const param = issue.path.join('.') || null;
  throw new GatewayError(400, param ? `${param}：${issue.message}` : issue.message, 'invalid_request', 'invalid_request_error', param);
}

/** An upstream failure as the client sees it: the upstream's own 4xx passes through; anything else is a 502 or 503. */
function upstreamFailure(e: unknown): GatewayError {
  if (!(e instanceof UpstreamError)) return new GatewayError(502, '上游模型服务出错，请稍后重试', 'upstream_error');
  if (e.kind === 'http' && e.status >= 400 && e.status < 500 && e.status !== 429) {
    const b = e.body?.error;
    return new GatewayError(e.status, b?.message ?? e.message, String(b?.code ?? 'upstream_rejected'), b?.type ?? 'invalid_request_error', b?.param ?? null);
  }
  if (e.kind === 'unavailable' || e.kind === 'connect' || e.status === 429) {
    return new GatewayError(503, `暂无可用的上游渠道（${e.message}），请稍后重试`, 'upstream_unavailable');
  }
  return new GatewayError(502, `上游模型服务出错（${e.message}），请稍后重试`, 'upstream_error');
}

/**
 * The tokens of a completion's prompt or an embedding's input (a text, a list of token ids, or a
 * list of either): texts counted by the tokenizer, token ids one each.
 */
function inputTokens(input: unknown): number {
  const parts: unknown[] = Array.isArray(input) ? input : [input];
  return parts.reduce<number>((n, x) => n + (typeof x === 'string' ? countTokens(x) : typeof x === 'number' ? 1 : Array.isArray(x) ? x.length : 0), 0);
}

/** The usage of a call whose upstream reported none: the prompt as held, the answer counted by the tokenizer. */
function countedUsage(promptTokens: number, answer: string): OpenAIUsage {
  const completion = countTokens(answer);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}
