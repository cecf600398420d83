/** The invoices module's wiring: invoice requests, the operator's queue, and their routes. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { invoiceRoutes, type InvoiceRoutesDeps } from './routes.js';
import { InvoiceService } from './service.js';

type ServiceDeps = ConstructorParameters<typeof InvoiceService>[0];

export interface InvoicesModuleDeps extends ServiceDeps {
  auth: AuthGuards;
  operatorOf: InvoiceRoutesDeps['operatorOf'];
  audit?: InvoiceRoutesDeps['audit'];
}

export function invoicesModule(deps: InvoicesModuleDeps) {
  const { auth, operatorOf, audit, ...serviceDeps } = deps;
  const invoices = new InvoiceService(serviceDeps);
  const routes: RoutesPlugin = async (app) => invoiceRoutes(app, { auth, invoices, operatorOf, audit });
  return { invoices, routes };
}
