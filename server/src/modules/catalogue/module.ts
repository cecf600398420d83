/** The catalogue module's wiring: the market's read model, quotes, inventory, and the catalogue's routes. */
import type { Clock } from '../../clock.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { LastReports } from './fleet-market.js';
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
  /** Where the start-up line on which market applies goes (the host's or the demonstration catalogue). */
  log?: (message: string) => void;
}

export function catalogueModule(deps: CatalogueModuleDeps) {
  const { store, clock, vouchers, userImages, auth, simulated, runs, unsold, offer, offerOf, log } = deps;
  // The order's reservation checks the agents' reports the quote just read (catalogue/fleet-market.ts).
  const reports = offerOf ? new LastReports(offerOf) : undefined;
  const limits: MachineLimits = { runs, unsold, offer, offerOf: reports?.read };
  const catalogue = new CatalogueService(store, limits);
  if (log) void catalogue.describe().then(log, (e: unknown) => log(`市场：读取本主机配置失败：${String(e)}`));
  const quotes = new Quotes({ store, vouchers, clock, userImages, ...limits });
  const inventory = new InventoryService(store, clock, reports);
  const routes: RoutesPlugin = async (app) => catalogueRoutes(app, { auth, catalogue, quotes, catalogueStore: store, simulated });
  return { catalogue, quotes, inventory, routes };
}
