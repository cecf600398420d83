/**
 * The image generation API (/sd/diffusion). A child account needs createGPUInstance or gpu, as for
 * training: a task spends the main account's money on GPU time.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  API,
  diffusionCreateRequestSchema,
  diffusionGalleryQuerySchema,
  diffusionIdParamsSchema,
  diffusionImageSchema,
  diffusionQuoteRequestSchema,
  diffusionQuoteSchema,
  diffusionTaskListQuerySchema,
  diffusionTaskSchema,
  loraOptionSchema,
  okSchema,
  pageOf,
} from '@console/contract';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import { sendFile } from '../../http/send-file.js';
import type { DiffusionService } from './service.js';

const tags = ['AI 绘图'];

export interface DiffusionRoutesDeps {
  auth: AuthGuards;
  diffusion: DiffusionService;
}

export async function diffusionRoutes(app: FastifyInstance, deps: DiffusionRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requirePermission('createGPUInstance', 'gpu');
  const s = deps.diffusion;

  r.get(
    API.sdLoras,
    {
      schema: { tags, summary: '可用的 LoRA：我训练的（每个已保存的轮次）和公共的', response: { 200: z.object({ items: z.array(loraOptionSchema) }) } },
      onRequest,
    },
    async (req) => ({ items: await s.loraOptions(payerOf(req)) }),
  );
  r.post(
    API.sdDiffusionQuote,
    {
      schema: { tags, summary: '生成报价：每张 GPU 秒数和价格（与提示词无关）', body: diffusionQuoteRequestSchema, response: { 200: diffusionQuoteSchema } },
      onRequest,
    },
    async (req) => s.quote(req.body, payerOf(req)),
  );
  r.get(
    API.sdDiffusionTasks,
    { schema: { tags, summary: '生成任务（新的在前）', querystring: diffusionTaskListQuerySchema, response: { 200: pageOf(diffusionTaskSchema) } }, onRequest },
    async (req) => s.list(payerOf(req), req.query),
  );
  r.post(
    API.sdDiffusionTasks,
    {
      schema: {
        tags,
        summary: '提交生成（按张从现金预扣；同一 requestId 只提交一次）',
        body: diffusionCreateRequestSchema,
        response: { 200: diffusionTaskSchema },
      },
      onRequest,
    },
    async (req) => s.create(payerOf(req), currentSession(req).user.id, req.body),
  );
  r.get(
    API.sdDiffusionTask,
    { schema: { tags, summary: '生成任务详情', params: diffusionIdParamsSchema, response: { 200: diffusionTaskSchema } }, onRequest },
    async (req) => s.get(payerOf(req), req.params.id),
  );
  r.post(
    API.sdDiffusionTaskCancel,
    { schema: { tags, summary: '取消生成（已生成的照常结算，其余退回）', params: diffusionIdParamsSchema, response: { 200: diffusionTaskSchema } }, onRequest },
    async (req) => s.cancel(payerOf(req), req.params.id, currentSession(req).user.id),
  );
  r.get(
    API.sdDiffusionImages,
    { schema: { tags, summary: '画廊', querystring: diffusionGalleryQuerySchema, response: { 200: pageOf(diffusionImageSchema) } }, onRequest },
    async (req) => s.gallery(payerOf(req), req.query),
  );
  r.delete(
    API.sdDiffusionImage,
    { schema: { tags, summary: '从画廊删除图片', params: diffusionIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await s.removeImage(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
  r.get(
    API.sdDiffusionImageFile,
    {
      schema: {
        tags,
        summary: '图片文件（PNG；?thumb=1 为缩略图 WebP；?download=1 作为下载）',
        params: diffusionIdParamsSchema,
        querystring: z.object({
          download: z.enum(['1'], { error: 'download 只能是 1' }).optional(),
          thumb: z.enum(['1'], { error: 'thumb 只能是 1' }).optional(),
        }),
      },
      onRequest,
    },
    async (req, reply) => {
      const file = await s.imageFile(payerOf(req), req.params.id, req.query.thumb === '1');
      return sendFile(reply, file, { cacheControl: 'private, max-age=86400', attachment: req.query.download ? file.fileName : undefined });
    },
  );
}
