/** The certification module's wiring: real-name and enterprise certification and its routes. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { certificationRoutes } from './routes.js';
import { CertificationService } from './service.js';

type ServiceDeps = ConstructorParameters<typeof CertificationService>[0];

export interface CertificationModuleDeps extends ServiceDeps {
  auth: AuthGuards;
}

export function certificationModule(deps: CertificationModuleDeps) {
  const { auth, ...serviceDeps } = deps;
  const certification = new CertificationService(serviceDeps);
  const routes: RoutesPlugin = async (app) => certificationRoutes(app, { auth, certification });
  return { certification, routes };
}
