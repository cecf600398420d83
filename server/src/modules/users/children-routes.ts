import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  childIdParamsSchema,
  childPasswordSchema,
  childSchema,
  createChildSchema,
  okSchema,
  pageOf,
  pagingQuerySchema,
  updateChildSchema,
} from '@console/contract';
import type { AppContext } from '../../context.js';
import { currentSession } from '../../http/auth.js';

const tags = ['子账号'];

export async function childRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = ctx.auth.requireMainAccount;
  const parent = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user;

  r.get(
    API.children,
    { schema: { tags, summary: '子账号列表', querystring: pagingQuerySchema, response: { 200: pageOf(childSchema) } }, onRequest },
    async (req) => ctx.children.list(parent(req).id, req.query.page, req.query.pageSize),
  );
  r.post(
    API.children,
    { schema: { tags, summary: '创建子账号（名称、密码、权限）', body: createChildSchema, response: { 200: childSchema } }, onRequest },
    async (req) => ctx.children.create(parent(req), req.body),
  );
  r.put(
    API.child,
    {
      schema: { tags, summary: '修改子账号权限、备注或停用', params: childIdParamsSchema, body: updateChildSchema, response: { 200: childSchema } },
      onRequest,
    },
    async (req) => ctx.children.update(parent(req).id, req.params.id, req.body),
  );
  r.put(
    API.childPassword,
    {
      schema: { tags, summary: '重设子账号密码（其登录会话失效）', params: childIdParamsSchema, body: childPasswordSchema, response: { 200: okSchema } },
      onRequest,
    },
    async (req) => {
      await ctx.children.setPassword(parent(req).id, req.params.id, req.body.password);
      return { ok: true as const };
    },
  );
  r.delete(API.child, { schema: { tags, summary: '删除子账号', params: childIdParamsSchema, response: { 200: okSchema } }, onRequest }, async (req) => {
    await ctx.children.remove(parent(req).id, req.params.id);
    return { ok: true as const };
  });
}
