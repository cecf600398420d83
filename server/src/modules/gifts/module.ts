/** The gifts module's wiring: gift credit (赠送金) and its routes. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import { giftRoutes } from './routes.js';
import { GiftService, type RechargedAmounts } from './service.js';

export interface GiftsModuleDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  recharged: RechargedAmounts;
  /** The welcome scheme's settings. */
  catalogue: CatalogueStore;
  auth: AuthGuards;
}

export function giftsModule(deps: GiftsModuleDeps) {
  const { db, clock, ledger, recharged, catalogue, auth } = deps;
  const gifts = new GiftService(db, ledger, clock, recharged, catalogue);
  const routes: RoutesPlugin = async (app) => giftRoutes(app, { auth, gifts });
  return { gifts, routes };
}
