/**
 * The LoRA training API (/sd/train). A child account needs createGPUInstance or gpu, as for the
 * datasets: a job spends the main account's money on GPU time.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  isLoraJobActive,
  loraEpochParamsSchema,
  loraJobCreateRequestSchema,
  loraJobListQuerySchema,
  loraJobParamsSchema,
  loraJobSchema,
  loraQuoteRequestSchema,
  loraQuoteSchema,
  okSchema,
  pageOf,
} from '@console/contract';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import { sendFile } from '../../http/send-file.js';
import type { TrainingService } from './service.js';

const tags = ['LoRA 训练'];
/** A comment line keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export interface TrainingRoutesDeps {
  auth: AuthGuards;
  training: TrainingService;
  /** How often the backend's jobs move: the progress stream reads at that pace. */
  tickMs: number;
}

export async function trainingRoutes(app: FastifyInstance, deps: TrainingRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requirePermission('createGPUInstance', 'gpu');
  const s = deps.training;

  r.post(
    API.sdTrainQuote,
    { schema: { tags, summary: '训练报价：步数、预计 GPU 时长和预扣金额', body: loraQuoteRequestSchema, response: { 200: loraQuoteSchema } }, onRequest },
    async (req) => s.quote(payerOf(req), req.body),
  );
  r.get(
    API.sdTrainJobs,
    { schema: { tags, summary: '我的训练任务', querystring: loraJobListQuerySchema, response: { 200: pageOf(loraJobSchema) } }, onRequest },
    async (req) => s.list(payerOf(req), req.query),
  );
  r.post(
    API.sdTrainJobs,
    {
      schema: { tags, summary: '开始训练（从现金预扣报价；同一 requestId 只开始一次）', body: loraJobCreateRequestSchema, response: { 200: loraJobSchema } },
      onRequest,
    },
    async (req) => s.create(payerOf(req), currentSession(req).user.id, req.body),
  );
  r.get(API.sdTrainJob, { schema: { tags, summary: '训练任务详情', params: loraJobParamsSchema, response: { 200: loraJobSchema } }, onRequest }, async (req) =>
    s.get(payerOf(req), req.params.id),
  );
  r.delete(
    API.sdTrainJob,
    { schema: { tags, summary: '删除已结束的任务及其文件', params: loraJobParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await s.remove(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
  r.post(
    API.sdTrainJobCancel,
    { schema: { tags, summary: '取消任务（已完成的轮次照常结算，其余退回）', params: loraJobParamsSchema, response: { 200: loraJobSchema } }, onRequest },
    async (req) => s.cancel(payerOf(req), req.params.id, currentSession(req).user.id),
  );
  r.get(
    API.sdTrainJobEvents,
    { schema: { tags, summary: '任务进度（text/event-stream，每次变化推送完整任务，结束后关闭）', params: loraJobParamsSchema }, onRequest },
    async (req, reply) => {
      const payer = payerOf(req);
      const first = await s.get(payer, req.params.id); // 404 before the stream opens
      reply.hijack();
      // Read at the pace the jobs move.
      await streamJob(reply.raw, s, payer, first, deps.tickMs);
    },
  );
  for (const [path, what] of [
    [API.sdTrainJobLora, 'lora'],
    [API.sdTrainJobSample, 'sample'],
  ] as const) {
    r.get(
      path,
      {
        schema: { tags, summary: what === 'lora' ? '下载某一轮的 LoRA 文件（.safetensors）' : '某一轮的样图（PNG）', params: loraEpochParamsSchema },
        onRequest,
      },
      async (req, reply) => {
        const file = await s.epochFile(payerOf(req), req.params.id, req.params.epoch, what);
        const contentType = what === 'lora' ? 'application/octet-stream' : 'image/png';
        const attachment = what === 'lora' ? encodeURIComponent(file.fileName) : undefined;
        return sendFile(reply, { ...file, contentType }, { cacheControl: 'private, max-age=86400', attachment });
      },
    );
  }
}

/**
 * Sends the job each time it changes (one cheap row read per interval; any process may have moved
 * it), until it ends or the client leaves.
 */
async function streamJob(
  res: import('node:http').ServerResponse,
  s: TrainingService,
  payer: string,
  first: Awaited<ReturnType<TrainingService['get']>>,
  pollMs: number,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-content-type-options': 'nosniff',
  });
  const send = (job: unknown) => res.write(`data: ${JSON.stringify(job)}\n\n`);
  send(first);
  let seen = Date.parse(first.updatedAt);
  let active = isLoraJobActive(first.status);
  let quiet = 0;
  while (active && !res.destroyed) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    if (res.destroyed) break;
    const now = await s.changedAt(payer, first.id).catch(() => null);
    if (!now) break; // deleted (or the database is away): the page falls back to its own reads
    active = now.active;
    if (now.updatedAt !== seen) {
      seen = now.updatedAt;
      const job = await s.get(payer, first.id).catch(() => null);
      if (!job) break;
      send(job);
      quiet = 0;
    } else if ((quiet += pollMs) >= KEEPALIVE_MS) {
      res.write(': keep-alive\n\n');
      quiet = 0;
    }
  }
  res.end();
}
