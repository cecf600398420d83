/**
 * The ComfyUI area's API (/comfyui): workflows, their quote and their runs. A child account needs
 * createGPUInstance or gpu, as for the rest of the AI image area: a run spends the main account's
 * money on GPU time.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  comfyQuoteRequestSchema,
  comfyQuoteSchema,
  comfyRunRequestSchema,
  comfyWorkflowCreateSchema,
  comfyWorkflowListQuerySchema,
  comfyWorkflowSchema,
  comfyWorkflowUpdateSchema,
  diffusionIdParamsSchema,
  diffusionTaskSchema,
  okSchema,
  pageOf,
} from '@console/contract';
import type { EmbeddedComfyApps } from '../../drivers/image-backend/comfy-apps.js';
import type { PainterDriver } from '../../drivers/image-backend/types.js';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import type { DiffusionService } from '../diffusion/index.js';
import type { ComfyWorkflowService } from './service.js';

const tags = ['ComfyUI 工作流'];

export interface ComfyuiRoutesDeps {
  auth: AuthGuards;
  workflows: ComfyWorkflowService;
  /** Quotes a workflow's run. */
  diffusion: DiffusionService;
  /** Closed with the server: the ComfyUI that runs workflows and the applications' embedded ComfyUI. */
  comfy: PainterDriver;
  comfyApps: EmbeddedComfyApps;
}

export async function comfyuiRoutes(app: FastifyInstance, deps: ComfyuiRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requirePermission('createGPUInstance', 'gpu');
  const s = deps.workflows;
  app.addHook('onClose', async () => {
    await deps.comfy.close?.();
    await deps.comfyApps.close();
  });

  r.get(
    API.comfyWorkflows,
    {
      schema: { tags, summary: '我的工作流（最近修改的在前）', querystring: comfyWorkflowListQuerySchema, response: { 200: pageOf(comfyWorkflowSchema) } },
      onRequest,
    },
    async (req) => s.list(payerOf(req), req.query),
  );
  r.post(
    API.comfyWorkflows,
    { schema: { tags, summary: '保存新工作流（API 格式 JSON）', body: comfyWorkflowCreateSchema, response: { 200: comfyWorkflowSchema } }, onRequest },
    async (req) => s.create(payerOf(req), currentSession(req).user.id, req.body),
  );
  r.get(
    API.comfyWorkflow,
    { schema: { tags, summary: '工作流详情（含节点图）', params: diffusionIdParamsSchema, response: { 200: comfyWorkflowSchema } }, onRequest },
    async (req) => s.get(payerOf(req), req.params.id),
  );
  r.put(
    API.comfyWorkflow,
    {
      schema: { tags, summary: '重命名或替换节点图', params: diffusionIdParamsSchema, body: comfyWorkflowUpdateSchema, response: { 200: comfyWorkflowSchema } },
      onRequest,
    },
    async (req) => s.update(payerOf(req), req.params.id, req.body),
  );
  r.delete(
    API.comfyWorkflow,
    { schema: { tags, summary: '删除工作流（已运行的结果保留在画廊）', params: diffusionIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await s.remove(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
  r.post(
    API.comfyQuote,
    {
      schema: { tags, summary: '运行报价：输出几张图、GPU 秒数和价格；不能运行时说明原因', body: comfyQuoteRequestSchema, response: { 200: comfyQuoteSchema } },
      onRequest,
    },
    async (req) => deps.diffusion.quoteWorkflow(req.body.graph, payerOf(req)),
  );
  r.post(
    API.comfyRuns,
    {
      schema: {
        tags,
        summary: '运行工作流（按输出张数从现金预扣；同一 requestId 只运行一次）',
        body: comfyRunRequestSchema,
        response: { 200: diffusionTaskSchema },
      },
      onRequest,
    },
    async (req) => s.run(payerOf(req), currentSession(req).user.id, req.body),
  );
}
