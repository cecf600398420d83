/** Model resource packages: what is on sale, the payer's packages and what each covered (under 订单, where they are bought). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  pageOf,
  pagingQuerySchema,
  resourcePackageListSchema,
  resourcePackageParamsSchema,
  resourceProductListSchema,
  resourceUsageSchema,
} from '@console/contract';
import type { AuthGuards } from '../../http/auth.js';
import { payerOf } from '../../http/auth.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { ResourceService } from './service.js';

const tags = ['订单'];

export interface ResourceRoutesDeps {
  auth: AuthGuards;
  resources: ResourceService;
  /** A GPU-hour package's hours priced at the card's hourly rate, so its discount shows. */
  pricing: Pick<CatalogueService, 'gpuHourlyRate'>;
}

export async function resourceRoutes(app: FastifyInstance, { auth, resources, pricing }: ResourceRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = auth;
  r.get(API.resourceProducts, { schema: { tags, summary: '可购买的资源包', response: { 200: resourceProductListSchema } } }, async () => ({
    items: await resources.products(async (gpuTypeId) => (await pricing.gpuHourlyRate(gpuTypeId))?.ratePerHour ?? null),
  }));
  r.get(
    API.resourcePackageUsages,
    {
      schema: {
        tags,
        summary: '资源包抵扣明细',
        params: resourcePackageParamsSchema,
        querystring: pagingQuerySchema,
        response: { 200: pageOf(resourceUsageSchema) },
      },
      onRequest: requireAuth,
    },
    async (req) => resources.usages(payerOf(req), req.params.id, req.query),
  );
  r.get(
    API.resourcePackages,
    { schema: { tags, summary: '我的资源包', response: { 200: resourcePackageListSchema } }, onRequest: requireAuth },
    async (req) => ({ items: await resources.list(payerOf(req)) }),
  );
}
