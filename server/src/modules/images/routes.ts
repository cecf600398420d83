import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  deleteImageResponseSchema,
  imageIdParamsSchema,
  okSchema,
  receivedImageListSchema,
  receivedImageSchema,
  redeemShareCodeRequestSchema,
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
    {
      schema: {
        tags,
        summary: '删除镜像（制作中、或有实例正用它创建时不能删除；答复说明主机上的镜像层如何释放）',
        params: imageIdParamsSchema,
        response: { 200: deleteImageResponseSchema },
      },
      onRequest: data,
    },
    async (req) => s.remove(payerOf(req), req.params.id),
  );

  r.post(
    API.userImageShareCode,
    {
      schema: { tags, summary: '生成共享码（已有则返回现有的）', params: imageIdParamsSchema, response: { 200: userImageSchema } },
      onRequest: data,
    },
    async (req) => s.createShareCode(payerOf(req), req.params.id),
  );

  r.delete(
    API.userImageShareCode,
    {
      schema: { tags, summary: '撤销共享码（已添加的账号随即不能再使用）', params: imageIdParamsSchema, response: { 200: userImageSchema } },
      onRequest: data,
    },
    async (req) => s.revokeShareCode(payerOf(req), req.params.id),
  );

  r.get(
    API.receivedImages,
    { schema: { tags, summary: '共享给我的镜像（只读：可用于创建实例）', response: { 200: receivedImageListSchema } }, onRequest: data },
    async (req) => ({ items: await s.received(payerOf(req)) }),
  );

  r.post(
    API.receivedImages,
    {
      schema: {
        tags,
        summary: '使用共享镜像：输入共享码（未知或已撤销为 40421003，自己的为 40021005）',
        body: redeemShareCodeRequestSchema,
        response: { 200: receivedImageSchema },
      },
      onRequest: data,
    },
    async (req) => s.redeem(payerOf(req), req.body.code),
  );

  r.delete(
    API.receivedImage,
    { schema: { tags, summary: '从我的列表移除共享给我的镜像', params: imageIdParamsSchema, response: { 200: okSchema } }, onRequest: data },
    async (req) => {
      await s.dropReceived(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
}
