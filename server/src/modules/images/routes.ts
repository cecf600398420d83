import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  imageIdParamsSchema,
  okSchema,
  renameImageRequestSchema,
  shareImageRequestSchema,
  sharedImageSchema,
  userImageListQuerySchema,
  userImagePageSchema,
  userImageSchema,
} from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import type { ImageService } from './service.js';

const tags = ['我的镜像'];

/**
 * My images. Saving one is an instance operation (POST …/instances/:id/image, instances/routes.ts).
 * A child account needs openYunBucket or image (spec §6 "data disk": my data) for these; the share
 * page only needs a login.
 */
export interface ImageRoutesDeps {
  auth: AuthGuards;
  images: ImageService;
}

export async function imageRoutes(app: FastifyInstance, { auth, images: s }: ImageRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth, requirePermission } = auth;
  const data = requirePermission('openYunBucket', 'image');

  r.get(
    API.userImages,
    {
      schema: { tags, summary: '我的镜像（含每个账号的数量上限）', querystring: userImageListQuerySchema, response: { 200: userImagePageSchema } },
      onRequest: data,
    },
    async (req) => s.list(payerOf(req), req.query),
  );

  r.get(
    API.sharedImage,
    {
      schema: { tags, summary: '分享的镜像（任何登录用户可看；未分享或已删除为 40421002）', params: imageIdParamsSchema, response: { 200: sharedImageSchema } },
      onRequest: requireAuth,
    },
    async (req) => s.shared(payerOf(req), req.params.id),
  );

  r.get(
    API.userImage,
    { schema: { tags, summary: '镜像详情', params: imageIdParamsSchema, response: { 200: userImageSchema } }, onRequest: data },
    async (req) => s.get(payerOf(req), req.params.id),
  );

  r.put(
    API.userImageName,
    {
      schema: { tags, summary: '修改镜像名称', params: imageIdParamsSchema, body: renameImageRequestSchema, response: { 200: userImageSchema } },
      onRequest: data,
    },
    async (req) => s.rename(payerOf(req), req.params.id, req.body.name),
  );

  r.put(
    API.userImageShare,
    {
      schema: { tags, summary: '开启或关闭分享链接', params: imageIdParamsSchema, body: shareImageRequestSchema, response: { 200: userImageSchema } },
      onRequest: data,
    },
    async (req) => s.setShared(payerOf(req), req.params.id, req.body.shared),
  );

  r.delete(
    API.userImage,
    { schema: { tags, summary: '删除镜像（制作中不能删除）', params: imageIdParamsSchema, response: { 200: okSchema } }, onRequest: data },
    async (req) => {
      await s.remove(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
}
