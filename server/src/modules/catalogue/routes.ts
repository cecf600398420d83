import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  AgreementTitle,
  agreementParamsSchema,
  agreementSchema,
  applicationListQuerySchema,
  applicationsPageSchema,
  availableGpuTypesQuerySchema,
  availableGpuTypesResponseSchema,
  availableZonesQuerySchema,
  availableZonesResponseSchema,
  gpuHostsPageSchema,
  gpuImagesQuerySchema,
  gpuListQuerySchema,
  gpuQuoteRequestSchema,
  gpuTypesResponseSchema,
  imagesPageSchema,
  imagesQuerySchema,
  imagesResponseSchema,
  promotionSchema,
  quoteSchema,
  regionRecommendQuerySchema,
  regionRecommendSchema,
  regionsQuerySchema,
  regionsResponseSchema,
  roomListQuerySchema,
  roomsResponseSchema,
  siteSettingsSchema,
  sizeQuoteRequestSchema,
  sizesPageSchema,
  sizesQuerySchema,
} from '@console/contract';
import type { AuthGuards } from '../../http/auth.js';
import { bpToRate } from './pricing.js';
import type { Quotes } from './quotes.js';
import type { CatalogueService } from './service.js';
import type { CatalogueStore } from './store.js';

const TAG = ['目录与报价'];
const SITE_TAG = ['站点'];

/**
 * Catalogue reads answer the same memoised object until the catalogue changes, so its JSON text is
 * kept beside it and sent as is: the response schema documents it, the serializer is not rerun.
 */
const encoded = new WeakMap<object, { text: string; gzip: Buffer | null }>();
/** Below this a compressed copy is not worth a header. */
const GZIP_FROM_BYTES = 1024;

function encodingOf(body: object) {
  let e = encoded.get(body);
  if (!e) {
    const text = JSON.stringify(body);
    // Compressed once per catalogue change, not per request: the market list shrinks about 8×.
    e = { text, gzip: Buffer.byteLength(text) >= GZIP_FROM_BYTES ? gzipSync(text, { level: 6 }) : null };
    encoded.set(body, e);
  }
  return e;
}

/** Quotes are built by our own typed code: sent as JSON text without re-validating the output. */
function sendJson(reply: FastifyReply, body: object) {
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
}

function sendCached(request: FastifyRequest, reply: FastifyReply, body: object) {
  const e = encodingOf(body);
  reply.type('application/json; charset=utf-8').header('vary', 'accept-encoding');
  if (e.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
    return reply.header('content-encoding', 'gzip').send(e.gzip);
  }
  return reply.send(e.text);
}

export interface CatalogueRoutesDeps {
  auth: AuthGuards;
  catalogue: CatalogueService;
  quotes: Quotes;
  catalogueStore: CatalogueStore;
  /** Which image services are the embedded stand-ins (the site settings say so to every page). */
  simulated: { images: boolean; training: boolean };
}

export async function catalogueRoutes(app: FastifyInstance, deps: CatalogueRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const c = deps.catalogue;

  r.get(
    API.sizes,
    { schema: { tags: TAG, summary: '规格列表（CPU、云桌面、跨境电商、云游戏）', querystring: sizesQuerySchema, response: { 200: sizesPageSchema } } },
    async (req, reply) => sendCached(req, reply, await c.sizes(req.query)),
  );
  r.get(
    API.regions,
    { schema: { tags: TAG, summary: '地区与机房', querystring: regionsQuerySchema, response: { 200: regionsResponseSchema } } },
    async (req, reply) => sendCached(req, reply, await c.regions(req.query.category)),
  );
  r.get(
    API.images,
    { schema: { tags: TAG, summary: '系统与框架镜像', querystring: imagesQuerySchema, response: { 200: imagesPageSchema } } },
    async (req, reply) => sendCached(req, reply, await c.images(req.query)),
  );
  r.get(
    API.regionRecommend,
    { schema: { tags: TAG, summary: '推荐地区', querystring: regionRecommendQuerySchema, response: { 200: regionRecommendSchema } } },
    async (req, reply) => sendCached(req, reply, await c.recommendRegion(req.query)),
  );
  r.get(
    API.gpuList,
    { schema: { tags: TAG, summary: 'GPU 市场：主机与空闲卡', querystring: gpuListQuerySchema, response: { 200: gpuHostsPageSchema } } },
    async (req, reply) => sendCached(req, reply, await c.gpuList(req.query)),
  );
  r.get(
    API.applicationList,
    { schema: { tags: TAG, summary: '镜像应用', querystring: applicationListQuerySchema, response: { 200: applicationsPageSchema } } },
    async (req, reply) => sendCached(req, reply, await c.applications(req.query)),
  );
  r.get(
    API.roomList,
    { schema: { tags: TAG, summary: '机房列表', querystring: roomListQuerySchema, response: { 200: roomsResponseSchema } } },
    async (req, reply) => sendCached(req, reply, await c.rooms(req.query.regionId)),
  );
  r.get(API.defaultRoomList, { schema: { tags: TAG, summary: '各地区默认机房', response: { 200: roomsResponseSchema } } }, async (req, reply) =>
    sendCached(req, reply, await c.defaultRooms()),
  );
  r.get(
    API.gpuImages,
    { schema: { tags: TAG, summary: '适配该 GPU 的镜像', querystring: gpuImagesQuerySchema, response: { 200: imagesResponseSchema } } },
    async (req, reply) => sendCached(req, reply, await c.gpuImages(req.query)),
  );
  r.get(
    API.gpuAvailableZones,
    { schema: { tags: TAG, summary: '有空闲卡的机房', querystring: availableZonesQuerySchema, response: { 200: availableZonesResponseSchema } } },
    async (req, reply) => sendCached(req, reply, await c.availableZones(req.query)),
  );
  r.get(
    API.gpuAvailableGpuTypes,
    {
      schema: {
        tags: TAG,
        summary: '某地区/机房可租的 GPU 型号',
        querystring: availableGpuTypesQuerySchema,
        response: { 200: availableGpuTypesResponseSchema },
      },
    },
    async (req, reply) => sendCached(req, reply, await c.availableGpuTypes(req.query)),
  );
  r.get(API.gpuTypeList, { schema: { tags: TAG, summary: 'GPU 型号与价格', response: { 200: gpuTypesResponseSchema } } }, async (req, reply) =>
    sendCached(req, reply, await c.gpuTypes()),
  );

  // Quotes: the visitor variants ignore any session; the user variants need one (vouchers, student price).
  r.post(
    API.gpuOrderPrice,
    { schema: { tags: TAG, summary: 'GPU 实例询价（访客）', body: gpuQuoteRequestSchema, response: { 200: quoteSchema } } },
    async (req, reply) => sendJson(reply, await deps.quotes.quoteGpu(req.body, null)),
  );
  r.post(
    API.gpuOrderUserPrice,
    {
      schema: { tags: TAG, summary: 'GPU 实例询价（已登录，含代金券与学生优惠）', body: gpuQuoteRequestSchema, response: { 200: quoteSchema } },
      onRequest: deps.auth.requireAuth,
    },
    async (req, reply) => sendJson(reply, await deps.quotes.quoteGpu(req.body, req.session!.user)),
  );
  r.post(
    API.orderPrice,
    { schema: { tags: TAG, summary: '规格实例询价（访客）', body: sizeQuoteRequestSchema, response: { 200: quoteSchema } } },
    async (req, reply) => sendJson(reply, await deps.quotes.quoteSize(req.body, null)),
  );
  r.post(
    API.orderUserPrice,
    {
      schema: { tags: TAG, summary: '规格实例询价（已登录，含代金券与学生优惠）', body: sizeQuoteRequestSchema, response: { 200: quoteSchema } },
      onRequest: deps.auth.requireAuth,
    },
    async (req, reply) => sendJson(reply, await deps.quotes.quoteSize(req.body, req.session!.user)),
  );

  r.get(API.promotion, { schema: { tags: TAG, summary: '优惠活动（运营配置）', response: { 200: promotionSchema } } }, async () => {
    const { settings } = await deps.catalogueStore.get();
    return {
      rechargeBonusRate: settings.rechargeBonusBp ? bpToRate(settings.rechargeBonusBp) : '0',
      newUserVoucher: String(settings.newUserVoucher),
    };
  });

  // The public site settings of the operator's catalogue file (settings): one small answer every page may read.
  r.get(
    API.siteSettings,
    { schema: { tags: SITE_TAG, summary: '站点设置：企业微信客服链接、哪些图像服务为内置模拟、本主机的配置（公开）', response: { 200: siteSettingsSchema } } },
    async () => {
      const { settings } = await deps.catalogueStore.get();
      return { customerServiceUrl: settings.customerServiceUrl, simulated: deps.simulated, host: await c.hostSummary() };
    },
  );
  // Apart from the settings: the documents are long and only the register screen's links open them.
  r.get(
    API.siteAgreement,
    {
      schema: {
        tags: SITE_TAG,
        summary: '用户协议（user）与隐私政策（privacy）全文（运营配置，公开）',
        params: agreementParamsSchema,
        response: { 200: agreementSchema },
      },
    },
    async (req) => {
      const { settings } = await deps.catalogueStore.get();
      const kind = req.params.kind;
      return { kind, title: AgreementTitle[kind], content: kind === 'user' ? settings.userAgreement : settings.privacyPolicy };
    },
  );
}
