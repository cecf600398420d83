/**
 * 「模型渠道」 of the operator area: the model square's models and upstream channels, read with each
 * channel's live health and edited in place (catalogue/model-channels.ts has how long an edit holds:
 * until the catalogue file's text next changes). Operator accounts only; keys are never answered.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  modelChannelParamsSchema,
  modelChannelSaveSchema,
  operatorModelChannelsSchema,
  operatorModelParamsSchema,
  operatorModelUpdateSchema,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { ModelChannelAdmin, type CatalogueStore } from '../catalogue/index.js';
import type { ModelCatalogue } from '../model/index.js';
import { originOf, type OperatorAudit } from './audit.js';
import type { OperatorActor } from './roles.js';

export interface ModelChannelRoutesDeps {
  db: Db;
  clock: Clock;
  catalogueStore: CatalogueStore;
  /** The live channel router, for each channel's health. */
  models: Pick<ModelCatalogue, 'router'>;
}

export function modelChannelRoutes(
  app: FastifyInstance,
  deps: ModelChannelRoutesDeps,
  asOperator: (req: FastifyRequest) => Promise<OperatorActor>,
  audit: OperatorAudit,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['运营'];
  const admin = new ModelChannelAdmin({ db: deps.db, store: deps.catalogueStore, clock: deps.clock });
  const view = async () => {
    const health = (await deps.models.router()).channelHealth();
    return admin.view(await deps.catalogueStore.get(), health);
  };
  const response = { 200: operatorModelChannelsSchema };

  r.get(API.operatorModelChannels, { schema: { tags, summary: '模型与上游渠道（渠道密钥不返回，附本进程所见的渠道健康）', response } }, async (req) => {
    await asOperator(req);
    return view();
  });

  r.put(
    API.operatorModelChannel,
    {
      schema: {
        tags,
        summary: '新建或修改模型渠道（apiKey 不传则保留原密钥；修改在目录文件下次变化前有效）',
        params: modelChannelParamsSchema,
        body: modelChannelSaveSchema,
        response,
      },
    },
    async (req) => {
      const actor = await asOperator(req);
      const operatorId = actor.userId;
      const before = (await view()).channels.find((c) => c.id === req.params.id) ?? null;
      const { created } = await admin.saveChannel(req.params.id, req.body);
      const after = await view();
      await audit.record(actor, originOf(req), {
        action: 'modelChannel.save',
        targetType: 'model-channel',
        targetId: req.params.id,
        before,
        after: after.channels.find((c) => c.id === req.params.id) ?? null,
      });
      const b = req.body;
      req.log.info(
        {
          operatorId,
          channel: req.params.id,
          created,
          kind: b.kind,
          models: b.models,
          priority: b.priority,
          weight: b.weight,
          enabled: b.enabled,
          apiKeyChanged: b.apiKey !== undefined,
        },
        'operator model channel saved',
      );
      return after;
    },
  );

  r.delete(
    API.operatorModelChannel,
    { schema: { tags, summary: '删除模型渠道（修改在目录文件下次变化前有效）', params: modelChannelParamsSchema, response } },
    async (req) => {
      const actor = await asOperator(req);
      const operatorId = actor.userId;
      const before = (await view()).channels.find((c) => c.id === req.params.id) ?? null;
      await admin.deleteChannel(req.params.id);
      await audit.record(actor, originOf(req), { action: 'modelChannel.delete', targetType: 'model-channel', targetId: req.params.id, before, after: null });
      req.log.info({ operatorId, channel: req.params.id }, 'operator model channel deleted');
      return view();
    },
  );

  r.put(
    API.operatorModel,
    {
      schema: {
        tags,
        summary: '修改模型的价格（元 / 百万 Token）、上架 / 下架、排序、标签与描述（修改在目录文件下次变化前有效）',
        params: operatorModelParamsSchema,
        body: operatorModelUpdateSchema,
        response,
      },
    },
    async (req) => {
      const actor = await asOperator(req);
      const operatorId = actor.userId;
      const before = (await view()).models.find((m) => m.id === req.params.id) ?? null;
      await admin.updateModel(req.params.id, req.body);
      const after = await view();
      await audit.record(actor, originOf(req), {
        action: 'model.update',
        targetType: 'model',
        targetId: req.params.id,
        before,
        after: after.models.find((m) => m.id === req.params.id) ?? null,
      });
      req.log.info({ operatorId, model: req.params.id, changes: req.body }, 'operator model updated');
      return after;
    },
  );
}
