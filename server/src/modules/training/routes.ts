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
import type { Bus } from '../../db/bus.js';
import { TRAINING_JOB_CHANGED, type TrainingService } from './service.js';

const tags = ['LoRA 训练'];
/** A comment line keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;
/**
 * The stream's own look at its job between the bus's events (at the runner's pace when slower):
 * catches a change whose event this replica missed (its bus listener was reconnecting).
 */
const LOOK_MS = 5_000;

export interface TrainingRoutesDeps {
  auth: AuthGuards;
  training: TrainingService;
  /** How often the backend's jobs move: the progress stream's own look is no more often. */
  tickMs: number;
  /** "A job changed", from whichever replica moved it. */
  bus: Pick<Bus, 'subscribe'>;
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
      await streamJob(reply.raw, s, payer, first, deps.bus, Math.max(deps.tickMs, LOOK_MS));
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
 * Sends the job each time it changes, until it ends or the client leaves: read again on each of its
 * events on the bus (whichever replica moved it), and every `lookMs` in case one was missed.
 */
async function streamJob(
  res: import('node:http').ServerResponse,
  s: TrainingService,
  payer: string,
  first: Awaited<ReturnType<TrainingService['get']>>,
  bus: Pick<Bus, 'subscribe'>,
  lookMs: number,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-content-type-options': 'nosniff',
  });
  let wake: (() => void) | null = null;
  let told = false;
  const off = bus.subscribe(TRAINING_JOB_CHANGED, (id) => {
    if (id !== first.id) return;
    told = true;
    wake?.();
  });
  res.on('close', () => wake?.());
  let looked = Date.now();
  let wrote = Date.now();
  /** Until the job's next event, the next look, the next keep-alive or the client leaving. */
  const next = () =>
    new Promise<void>((resolve) => {
      if (told || res.destroyed) return resolve();
      const timer = setTimeout(() => wake?.(), Math.max(0, Math.min(looked + lookMs, wrote + KEEPALIVE_MS) - Date.now()));
      wake = () => {
        wake = null;
        clearTimeout(timer);
        resolve();
      };
    });
  const send = (job: unknown) => {
    res.write(`data: ${JSON.stringify(job)}\n\n`);
    wrote = Date.now();
  };
  try {
    send(first);
    let seen = Date.parse(first.updatedAt);
    let active = isLoraJobActive(first.status);
    while (active && !res.destroyed) {
      await next();
      if (res.destroyed) break;
      if (!told && Date.now() - looked < lookMs) {
        if (Date.now() - wrote >= KEEPALIVE_MS) {
          res.write(': keep-alive\n\n');
          wrote = Date.now();
        }
        continue;
      }
      told = false;
      looked = Date.now();
      const now = await s.changedAt(payer, first.id).catch(() => null);
      if (!now) break; // deleted (or the database is away): the page falls back to its own reads
      active = now.active;
      if (now.updatedAt !== seen) {
        seen = now.updatedAt;
        const job = await s.get(payer, first.id).catch(() => null);
        if (!job) break;
        send(job);
      } else if (Date.now() - wrote >= KEEPALIVE_MS) {
        res.write(': keep-alive\n\n');
        wrote = Date.now();
      }
    }
  } finally {
    off();
    res.end();
  }
}
