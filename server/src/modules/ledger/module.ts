/** The ledger module's wiring: the accounts and their entries, and the statement routes. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { ledgerRoutes } from './routes.js';
import { LedgerService } from './service.js';

export interface LedgerModuleDeps {
  db: Db;
  clock: Clock;
  auth: AuthGuards;
}

export function ledgerModule(deps: LedgerModuleDeps) {
  const { db, clock, auth } = deps;
  const ledger = new LedgerService(db, clock);
  const routes: RoutesPlugin = async (app) => ledgerRoutes(app, { auth, ledger });
  return { ledger, routes };
}
