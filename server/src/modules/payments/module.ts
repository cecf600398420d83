/** The payments module's wiring: payments through the gateways and the gateways' notifications. */
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { paymentRoutes } from './routes.js';
import { PaymentService } from './service.js';

export type PaymentsModuleDeps = ConstructorParameters<typeof PaymentService>[0];

export function paymentsModule(deps: PaymentsModuleDeps) {
  const payments = new PaymentService(deps);
  const routes: RoutesPlugin = async (app) => paymentRoutes(app, { payments });
  return { payments, routes };
}
