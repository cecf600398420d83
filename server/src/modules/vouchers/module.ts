/** The vouchers module's wiring: vouchers and their routes. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import { voucherRoutes } from './routes.js';
import { VoucherService } from './service.js';

export interface VouchersModuleDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  /** The new-user voucher's settings. */
  catalogue: CatalogueStore;
  auth: AuthGuards;
}

export function vouchersModule(deps: VouchersModuleDeps) {
  const { db, clock, ledger, catalogue, auth } = deps;
  const vouchers = new VoucherService(db, ledger, catalogue, clock);
  const routes: RoutesPlugin = async (app) => voucherRoutes(app, { auth, vouchers });
  return { vouchers, routes };
}
