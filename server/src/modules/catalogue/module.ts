/** The catalogue module's wiring: the market's read model, quotes, inventory, and the catalogue's routes. */
import type { Clock } from '../../clock.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { InventoryService } from './inventory.js';
import type { MachineLimits } from './lookups.js';
import { Quotes, type UserImageLookup, type VoucherLookup } from './quotes.js';
import { catalogueRoutes, type CatalogueRoutesDeps } from './routes.js';
import { CatalogueService } from './service.js';
import type { CatalogueStore } from './store.js';

export interface CatalogueModuleDeps extends MachineLimits {
  /** The applied catalogue file (built first: the vouchers and gifts read its settings). */
  store: CatalogueStore;
  clock: Clock;
  vouchers: VoucherLookup;
  userImages: UserImageLookup;
  auth: AuthGuards;
  simulated: CatalogueRoutesDeps['simulated'];
}

export function catalogueModule(deps: CatalogueModuleDeps) {
  const { store, clock, vouchers, userImages, auth, simulated, runs, unsold } = deps;
  const limits: MachineLimits = { runs, unsold };
  const catalogue = new CatalogueService(store, limits);
  const quotes = new Quotes({ store, vouchers, clock, userImages, ...limits });
  const inventory = new InventoryService(store, clock);
  const routes: RoutesPlugin = async (app) => catalogueRoutes(app, { auth, catalogue, quotes, catalogueStore: store, simulated });
  return { catalogue, quotes, inventory, routes };
}
