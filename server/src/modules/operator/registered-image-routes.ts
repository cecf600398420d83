/** 镜像登记 routes of the operator area (registered-images.ts): list, register by reference, remove. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, okSchema, operatorImageListSchema, operatorImageParamsSchema, operatorImageRegisterSchema, operatorImageSchema } from '@console/contract';
import type { RegisteredImages } from './registered-images.js';
import { originOf, type OperatorAudit } from './audit.js';
import type { OperatorActor } from './roles.js';

/** `operatorOf`: the guard of 「镜像登记」 (roles.ts), admitting the local command too. */
export function registeredImageRoutes(
  app: FastifyInstance,
  images: RegisteredImages,
  operatorOf: (req: FastifyRequest) => Promise<OperatorActor>,
  audit: OperatorAudit,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['运营'];

  r.get(
    API.operatorImages,
    { schema: { tags, summary: '登记的镜像（含是否已在本机就绪、在用实例数）', response: { 200: operatorImageListSchema } } },
    async (req) => {
      await operatorOf(req);
      return images.list();
    },
  );

  r.post(
    API.operatorImages,
    {
      schema: {
        tags,
        summary: '按地址登记镜像：先确认镜像仓库（未配置 REGISTRY_URL 时为本机镜像目录）中有该清单，再加入目录',
        body: operatorImageRegisterSchema,
        response: { 200: operatorImageSchema },
      },
    },
    async (req) => {
      const actor = await operatorOf(req);
      const operatorId = actor.userId;
      const image = await images.register(req.body, operatorId);
      await audit.record(actor, originOf(req), { action: 'image.register', targetType: 'image', targetId: image.id, before: null, after: image });
      req.log.info({ operatorId, id: image.id, reference: image.reference, digest: image.digest, kind: image.kind }, 'operator image registered');
      return image;
    },
  );

  r.delete(
    API.operatorImage,
    { schema: { tags, summary: '移除登记（有未释放的实例在用时拒绝）', params: operatorImageParamsSchema, response: { 200: okSchema } } },
    async (req) => {
      const actor = await operatorOf(req);
      const operatorId = actor.userId;
      const before = (await images.list()).items.find((i) => i.id === req.params.id) ?? null;
      await images.remove(req.params.id);
      await audit.record(actor, originOf(req), { action: 'image.remove', targetType: 'image', targetId: req.params.id, before, after: null });
      req.log.info({ operatorId, id: req.params.id }, 'operator image removed');
      return { ok: true as const };
    },
  );
}
