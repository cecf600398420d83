/** The recharge module's wiring: recharges (with their bonus) and their routes. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { rechargeRoutes } from './routes.js';
import { RechargeService } from './service.js';

type ServiceDeps = ConstructorParameters<typeof RechargeService>[0];

export interface RechargeModuleDeps extends ServiceDeps {
  auth: AuthGuards;
}

export function rechargeModule(deps: RechargeModuleDeps) {
  const { auth, ...serviceDeps } = deps;
  const recharge = new RechargeService(serviceDeps);
  const routes: RoutesPlugin = async (app) => rechargeRoutes(app, { auth, recharge });
  return { recharge, routes };
}
