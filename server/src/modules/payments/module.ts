/** The payments module's wiring: payments through the gateways, their notifications, and refunds back to them. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { refundRoutes, type OperatorCheck } from './refund-routes.js';
import { RefundService, type RefundServiceDeps } from './refunds.js';
import { paymentRoutes } from './routes.js';
import { PaymentService } from './service.js';

export type PaymentsModuleDeps = ConstructorParameters<typeof PaymentService>[0];

export function paymentsModule(deps: PaymentsModuleDeps) {
  const payments = new PaymentService(deps);
  // Refunds are wired later (they need the operator check and the recharge's bonus); their notifications reach the same scope.
  const wired: { refunds?: RefundService } = {};
  const routes: RoutesPlugin = async (app) => paymentRoutes(app, { payments, refunds: () => wired.refunds });
  /** Refunds to the original method: the service, and its JSON routes (operator and account holder). */
  function refundsModule(more: Pick<RefundServiceDeps, 'gifts' | 'bonusOf'> & { auth: AuthGuards; operatorOf: OperatorCheck }) {
    const refunds = new RefundService({ ...deps, gifts: more.gifts, bonusOf: more.bonusOf });
    wired.refunds = refunds;
    const refundRoutesPlugin: RoutesPlugin = async (app) => refundRoutes(app, { auth: more.auth, refunds, operatorOf: more.operatorOf });
    return { refunds, routes: refundRoutesPlugin };
  }
  return { payments, routes, refundsModule };
}
