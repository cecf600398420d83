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
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { ChildService } from './children.js';

const tags = ['子账号'];

export interface ChildRoutesDeps {
  auth: AuthGuards;
  children: ChildService;
}

export async function childRoutes(app: FastifyInstance, deps: ChildRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requireMainAccount;
  const parent = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user;

  r.get(
    API.children,
    { schema: { tags, summary: '子账号列表', querystring: pagingQuerySchema, response: { 200: pageOf(childSchema) } }, onRequest },
    async (req) => deps.children.list(parent(req).id, req.query.page, req.query.pageSize),
  );
  r.post(
    API.children,
    { schema: { tags, summary: '创建子账号（名称、密码、权限）', body: createChildSchema, response: { 200: childSchema } }, onRequest },
    async (req) => deps.children.create(parent(req), req.body),
  );
  r.put(
    API.child,
    {
      schema: { tags, summary: '修改子账号权限、备注或停用', params: childIdParamsSchema, body: updateChildSchema, response: { 200: childSchema } },
      onRequest,
    },
    async (req) => deps.children.update(parent(req).id, req.params.id, req.body),
  );
  r.put(
    API.childPassword,
    {
      schema: { tags, summary: '重设子账号密码（其登录会话失效）', params: childIdParamsSchema, body: childPasswordSchema, response: { 200: okSchema } },
      onRequest,
    },
    async (req) => {
      await deps.children.setPassword(parent(req).id, req.params.id, req.body.password);
      return { ok: true as const };
    },
  );
  r.delete(API.child, { schema: { tags, summary: '删除子账号', params: childIdParamsSchema, response: { 200: okSchema } }, onRequest }, async (req) => {
    await deps.children.remove(parent(req).id, req.params.id);
    return { ok: true as const };
  });
}
