import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueService, CatalogueStore } from '../catalogue/index.js';
import type { FulfillerLine, OrderService } from '../orders/index.js';
import { resourceRoutes } from './routes.js';
import { ResourceService } from './service.js';

export interface ResourcesModuleDeps {
  db: Db;
  clock: Clock;
  auth: AuthGuards;
  catalogue: CatalogueStore;
  pricing: Pick<CatalogueService, 'gpuHourlyRate'>;
  /** The order numbers of the orders that bought packages. */
  orders: Pick<OrderService, 'uidsOf'>;
}

/** Model resource packages: sold as Ai orders, which this module fulfils. */
export function resourcesModule(deps: ResourcesModuleDeps) {
  const resources = new ResourceService({ db: deps.db, clock: deps.clock, catalogue: deps.catalogue, orders: deps.orders });
  const fulfillers: FulfillerLine[] = [{ categories: ['Ai'], types: ['NewBuy'], fulfiller: resources }];
  const routes: RoutesPlugin = async (app) => resourceRoutes(app, { auth: deps.auth, resources, pricing: deps.pricing });
  return { resources, fulfillers, routes };
}
