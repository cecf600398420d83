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
import type { AppContext } from '../../context.js';
import { currentSession, payerOf } from '../../http/auth.js';

const tags = ['ComfyUI 工作流'];

export async function comfyuiRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = ctx.auth.requirePermission('createGPUInstance', 'gpu');
  const s = ctx.comfyWorkflows;
  app.addHook('onClose', async () => {
    await ctx.drivers.comfy.close?.();
    await ctx.comfyApps.close();
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
    async (req) => ctx.diffusion.quoteWorkflow(req.body.graph, payerOf(req)),
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
